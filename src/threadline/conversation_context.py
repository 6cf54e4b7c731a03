"""Where `threadline.conversation.context` was: the context of a conversation's requests (kept so old imports
work)."""

from __future__ import annotations

from .conversation.context import ConversationContext

__all__ = ["ConversationContext"]
