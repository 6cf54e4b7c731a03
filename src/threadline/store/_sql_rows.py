"""What the two SQL backends (SQLite and PostgreSQL) build alike from the rows they select.

The columns each listing selects, in order, and the values made from those rows: a conversation, a page, a list
entry, the entries of a search, a page of the log; and the check that an append's already-stored ids hold the same
messages. Each backend keeps only its SQL and its transactions; what it reads back becomes the same objects here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..serialization import decode_message, decode_messages
from ._common import decode_json, different_message, same_stored
from ._search import search_text, snippet
from .base import ConversationInfo, ConversationSummary, MessagePage, PageInfo

__all__ = [
    "CONVERSATION_COLUMNS",
    "PAGE_COLUMNS",
    "SUMMARY_COLUMNS",
    "check_same_messages",
    "conversation_from_row",
    "fork_metadata",
    "message_page",
    "page_from_row",
    "search_summaries",
    "summary_from_row",
    "tail_page",
]

# The columns, in order, of the rows `conversation_from_row`, `page_from_row` and `summary_from_row` read.
CONVERSATION_COLUMNS = ("id", "title", "created_at", "updated_at", "message_count", "active_mode", "metadata")
PAGE_COLUMNS = ("id", "conversation_id", "title", "html", "css", "js", "created_at")
SUMMARY_COLUMNS = (*CONVERSATION_COLUMNS, "last_model", "failures", "forked_from")

ToTime = Callable[[Any], datetime]


def conversation_from_row(row: Sequence[Any], to_time: ToTime) -> ConversationInfo:
    """A conversation from a row of `CONVERSATION_COLUMNS` (metadata as JSON text or bytes).

    Args:
        row: The selected values, in the order of `CONVERSATION_COLUMNS`.
        to_time: Turns the backend's stored timestamp into an aware UTC datetime.
    """
    return ConversationInfo(
        id=row[0],
        title=row[1],
        created_at=to_time(row[2]),
        updated_at=to_time(row[3]),
        message_count=row[4],
        active_mode=row[5],
        metadata=decode_json(row[6]),
    )


def page_from_row(row: Sequence[Any], to_time: ToTime) -> PageInfo:
    """A page from a row of `PAGE_COLUMNS`; ``to_time`` as in `conversation_from_row`."""
    return PageInfo(
        id=row[0],
        conversation_id=row[1],
        title=row[2],
        html=row[3],
        css=row[4],
        js=row[5],
        created_at=to_time(row[6]),
    )


def summary_from_row(
    row: Sequence[Any],
    to_time: ToTime,
    *,
    match_id: str | None = None,
    snippet: str | None = None,
    matches: int = 0,
) -> ConversationSummary:
    """A list entry from a row of `SUMMARY_COLUMNS` (extra columns after them are ignored)."""
    width = len(CONVERSATION_COLUMNS)
    return ConversationSummary(
        info=conversation_from_row(row[:width], to_time),
        model=row[width],
        failures=int(row[width + 1]),
        forked_from=row[width + 2],
        match_id=match_id,
        snippet=snippet,
        matches=matches,
    )


def search_summaries(
    rows: Iterable[Sequence[Any]],
    hits: Mapping[Any, tuple[str, bytes]],
    key_of: Callable[[Sequence[Any]], Any],
    words: Sequence[str],
    to_time: ToTime,
) -> list[ConversationSummary]:
    """The entries of a search: one per row of `SUMMARY_COLUMNS`, in order.

    Args:
        rows: The conversations found (by a message or by their title): rows of `SUMMARY_COLUMNS` followed by the
            number of matching messages.
        hits: The latest matching message of each conversation found by a message, as ``(id, stored bytes)``,
            keyed as ``key_of`` keys a row.
        key_of: The key of a row in ``hits``.
        words: The query's words (see `query_words`), for the snippet around the match.
        to_time: As in `conversation_from_row`.
    """
    out = []
    count_at = len(SUMMARY_COLUMNS)
    for row in rows:
        hit = hits.get(key_of(row))
        if hit is None:
            out.append(summary_from_row(row, to_time))
        else:
            text = search_text(decode_message(hit[1]))
            found = snippet(text, words)
            out.append(summary_from_row(row, to_time, match_id=hit[0], snippet=found, matches=int(row[count_at])))
    return out


def message_page(rows: Sequence[Sequence[Any]], has_older: bool) -> MessagePage:
    """A page of the log from rows of ``(seq, data)`` in log order."""
    return MessagePage(decode_messages([bytes(r[1]) for r in rows]), [int(r[0]) for r in rows], has_older)


def tail_page(rows: Sequence[Sequence[Any]], limit: int) -> MessagePage:
    """The page `Store.read_tail` gives from rows of ``(seq, data)`` newest first, up to ``limit + 1`` of them (one
    more than the page holds, to tell whether older messages exist)."""
    return message_page(rows[:limit][::-1], len(rows) > limit)


def check_same_messages(
    stored: Iterable[Sequence[Any]], wanted: Mapping[str, bytes], conversation_id: str, where: str
) -> None:
    """Refuse an append whose ids name other messages already in the conversation.

    Args:
        stored: Rows of ``(id, data)`` already stored under ids of the append.
        wanted: The append's encoded messages by id.
        conversation_id: The conversation appended to.
        where: The store's URL, for the error.

    Raises:
        StoreError: if a stored message has the id of one being appended but other content (raised inside the
            append's transaction, so nothing is appended).
    """
    for message_id, data in stored:
        if not same_stored(bytes(data), wanted[message_id]):
            raise different_message(conversation_id, message_id, where)


def fork_metadata(metadata: bytes | str, conversation_id: str, at: str) -> dict[str, Any]:
    """A fork's metadata: its source's, plus where it was forked from."""
    merged: dict[str, Any] = decode_json(metadata)
    merged["forked_from"] = {"conversation": conversation_id, "message": at}
    return merged
