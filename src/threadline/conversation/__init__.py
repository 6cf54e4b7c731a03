"""A conversation: the user's `Conversation` over the `ConversationHost` that the engine and the turn lock use.

- `threadline.conversation.conversation`: `Conversation`, what a user calls (its log, config, store; ``add``,
  ``record``, ``hold``, ``run``, ``fork``…);
- `threadline.conversation.host`: `ConversationHost` (``conversation.host``), the write-through, the log index,
  the mentions, model and tool resolution, and the engine's and the lock's protocols;
- `threadline.conversation.requests`: the assembly of each request (its context) and the artifacts it refers to;
- `threadline.conversation.lock`: one turn at a time (the gate, `threadline.conversation._gate`, and the store's
  lease).

- `threadline.conversation.config`: `ConversationConfig`, what a conversation is set to (checked once);
- `threadline.conversation.mentions`: the objects user messages mention and the tools made from them (its warnings
  go to the ``threadline.mentions`` logger);
- `threadline.conversation._log_index`: the log's ids, tool-call ids and unanswered calls, kept per message.

The plan of a turn is `threadline.engine.plan`; which turns the running code is a tool of,
`threadline.engine._tool_scope`.
"""

from __future__ import annotations

from .config import ConversationConfig, check_settings
from .conversation import Conversation
from .host import ConversationHost
from .lock import TurnHold

__all__ = ["Conversation", "ConversationConfig", "ConversationHost", "TurnHold", "check_settings"]
