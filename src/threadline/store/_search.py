"""What the stores derive from messages for the viewer: the text a message is searched by, the words of a query,
a snippet around a match, a conversation's list figures (latest model, failures), and where a fork ends.

Everything here is pure (no I/O), so every backend indexes, searches and forks by the same rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from ..message_types import ApprovalMessage, AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

__all__ = [
    "SEARCH_TEXT_LIMIT",
    "conversation_figures",
    "fork_end",
    "postgres_query",
    "query_words",
    "search_text",
    "snippet",
    "sqlite_query",
    "words_match",
]

# A message's indexed text is cut here: PostgreSQL refuses a tsvector over 1 MB, and a search over a tool's
# whole output (a file it read, a page it fetched) past its first 100,000 characters finds little anyone wants.
SEARCH_TEXT_LIMIT = 100_000
SNIPPET_BEFORE = 60
SNIPPET_AFTER = 140

# A word is a run of letters and digits: what SQLite's unicode61 tokenizer and PostgreSQL's parser agree on.
_WORD = re.compile(r"[^\W_]+")


def search_text(message: Message) -> str:
    """The text a message is found by: its content, the names and arguments of its tool calls, a failure's type
    and message, a tool result's tool name, attachment names. NUL characters (PostgreSQL text cannot hold them)
    become spaces."""
    parts: list[str] = []
    if type(message) is UserMessage:
        parts.append(message.content)
        parts.extend(a.name or a.ref or "" for a in message.attachments)
    elif type(message) is AssistantMessage:
        parts.append(message.content or "")
        for call in message.tool_calls:
            parts.append(call.name)
            parts.append(call.raw_arguments if call.raw_arguments is not None else _arguments(call.arguments))
        if message.error is not None:
            parts.append(f"{message.error.type} {message.error.message}")
    elif type(message) is ToolMessage:
        parts.append(message.tool_name)
        parts.append(message.content)
    elif type(message) is SystemMessage:
        parts.append(message.content)
    elif type(message) is ApprovalMessage:
        parts.extend((message.tool_name, message.state, message.by or "", message.reason or ""))
    text = "\n".join(part for part in parts if part)[:SEARCH_TEXT_LIMIT]
    return text.replace("\x00", " ") if "\x00" in text else text


def _arguments(arguments: object) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


def query_words(query: str) -> list[str]:
    """The words of a search query, lowercased, repeats dropped; punctuation and operators are not syntax."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    return list(seen)


def sqlite_query(words: Sequence[str]) -> str:
    """An FTS5 query: every word as a quoted prefix (words hold only letters and digits, so nothing is syntax)."""
    return " ".join(f'"{word}"*' for word in words)


def postgres_query(words: Sequence[str]) -> str:
    """A ``to_tsquery`` text: every word as a prefix, all required."""
    return " & ".join(f"{word}:*" for word in words)


def words_match(words: Sequence[str], text: str) -> bool:
    """Whether every query word is a prefix of some word of ``text`` (how the memory store searches)."""
    present = _WORD.findall(text.lower())
    return all(any(token.startswith(word) for token in present) for word in words)


def snippet(text: str, words: Sequence[str]) -> str:
    """A short excerpt of ``text`` around the first place one of ``words`` starts a word; whitespace collapsed."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    first = -1
    for match in _WORD.finditer(lowered):
        if any(match.group().startswith(word) for word in words):
            first = match.start()
            break
    if first < 0:
        first = 0
    start = max(0, first - SNIPPET_BEFORE)
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    end = min(len(flat), first + SNIPPET_AFTER)
    if end < len(flat):
        space = flat.rfind(" ", first, end)
        end = space if space > first else end
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


def conversation_figures(messages: Iterable[Message]) -> tuple[str | None, int]:
    """The list figures that ``messages`` add to a conversation: the model of the last assistant message among
    them that names one (None if none does), and how many of them are failed model calls."""
    model: str | None = None
    failures = 0
    for message in messages:
        if type(message) is AssistantMessage:
            if message.model:
                model = message.model
            if message.error is not None:
                failures += 1
    return model, failures


def fork_end(following: Iterable[Message]) -> int:
    """How many of the messages that follow a fork point belong to its tool group: the tool results and approval
    entries right after it (a call's wait, its decision and its result belong together). A fork keeps them, so it
    never ends with calls answered by half, nor cuts a call off from its decision."""
    count = 0
    for message in following:
        if type(message) is not ToolMessage and type(message) is not ApprovalMessage:
            break
        count += 1
    return count
