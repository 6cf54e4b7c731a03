"""A conversation: the user's `Conversation` over the `ConversationHost` that the engine and the turn lock use.

- `threadline.conversation.conversation`: `Conversation`, what a user calls (its log, config, store; ``add``,
  ``record``, ``hold``, ``run``, ``fork``…);
- `threadline.conversation.host`: `ConversationHost` (``conversation.host``), the write-through, the log index,
  the mentions, model and tool resolution, and the engine's and the lock's protocols;
- `threadline.conversation.context`: the context of each request and the artifacts it refers to;
- `threadline.conversation.lock`: one turn at a time (the gate, `threadline.conversation._gate`, and the store's
  lease).

The config is `threadline.conversation_config`; the plan of a turn, `threadline.engine.plan`.
"""

from __future__ import annotations

from ..conversation_config import ConversationConfig, check_settings
from .conversation import Conversation
from .host import ConversationHost
from .lock import TurnHold

__all__ = ["Conversation", "ConversationConfig", "ConversationHost", "TurnHold", "check_settings"]
