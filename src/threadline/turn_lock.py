"""Where `threadline.conversation.lock` was: one turn at a time on a conversation (kept so old imports work)."""

from __future__ import annotations

from .conversation.lock import LockOwner, TurnHold, TurnLock

__all__ = ["LockOwner", "TurnHold", "TurnLock"]
