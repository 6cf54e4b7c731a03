"""Finding words in one conversation: which messages match, which one the page shows, and the ones before and
after it (the timeline's "match 2 of 5" with previous and next)."""

from __future__ import annotations

from dataclasses import dataclass

from ..store import Store

__all__ = ["MAX_HITS", "Finding", "find"]

# A conversation where a common word matches tens of thousands of messages still answers at once: the count says
# "10,000+" and previous/next move among the first ten thousand.
MAX_HITS = 10_000


@dataclass(frozen=True, slots=True)
class Finding:
    """Where the shown message stands among the matches of a query.

    Attributes:
        query: The words searched for.
        total: How many messages match (at most `MAX_HITS`).
        index: The shown message's place among them, from 1; 0 when it is not one of them.
        previous: The id of the match before the shown one, if any.
        next: The id of the match after the shown one, if any.
        capped: Whether more messages match than were counted.
    """

    query: str
    total: int
    index: int = 0
    previous: str | None = None
    next: str | None = None
    capped: bool = False


def find(store: Store, conversation_id: str, query: str, at: str | None) -> tuple[Finding, str | None]:
    """The matches of ``query`` in a conversation, seen from message ``at`` (the newest match when ``at`` is None).

    Returns:
        The finding, and the message the page should open at (``at``, or the newest match, or None when nothing
        matches and no message was asked for).
    """
    hits = store.search_messages(conversation_id, query, MAX_HITS + 1)
    capped = len(hits) > MAX_HITS
    ids = [message_id for _, message_id in hits[:MAX_HITS]]
    if not ids:
        return Finding(query, 0), at
    if at is None:
        at = ids[-1]
    if at not in ids:
        return Finding(query, len(ids), capped=capped), at
    index = ids.index(at)
    return (
        Finding(
            query,
            len(ids),
            index + 1,
            ids[index - 1] if index > 0 else None,
            ids[index + 1] if index + 1 < len(ids) else None,
            capped,
        ),
        at,
    )
