"""Where `threadline.conversation.lock` was: one turn at a time on a conversation (kept so old imports work)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .conversation.lock import LockOwner, TurnHold, TurnLock

if TYPE_CHECKING:
    from .store.capabilities import ConversationStore

__all__ = ["LockOwner", "TurnHold", "TurnLock", "append_checks_count"]


def append_checks_count(store: ConversationStore) -> bool:
    """Whether the store's ``append`` takes ``expected_count``: what it declares (`Store.checks_append_count`; this
    was read off ``append``'s signature before)."""
    return store.checks_append_count
