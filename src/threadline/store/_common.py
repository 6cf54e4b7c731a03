"""Helpers every backend shares: timestamps, JSON values, argument checks, error texts, URL redaction.

Everything here is pure (no I/O), so each backend keeps only what is really its own: its SQL and its transactions
(what the two SQL backends build from their rows is in `threadline.store._sql_rows`).
Text a store keeps outside messages (titles, modes, metadata, artifacts, pages, cache values) follows the log's rule
here, as messages do in their constructors: lone surrogates become U+FFFD (see `threadline._text`), so no write
fails on text that no database can hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from .._ids import new_id
from .._text import replace_surrogates, replace_surrogates_in
from ..errors import MessageListDeserializationError, ProtocolError, StoreError
from ..message_fields import field_problem
from ..message_list import validate_messages
from ..message_types import ApprovalMessage, Message, UserMessage
from ..serialization import decode_message
from .base import PageInfo, conversation_cache_prefix

__all__ = [
    "check_artifact",
    "check_artifact_name",
    "check_metadata",
    "check_page",
    "check_slice",
    "conversation_exists",
    "decode_cache_value",
    "decode_json",
    "different_message",
    "distinct_messages",
    "encode_json",
    "encode_metadata",
    "fork_title",
    "format_ts",
    "invalid_text",
    "missing_artifact",
    "missing_conversation",
    "missing_message",
    "missing_page",
    "new_page",
    "now",
    "own_cache_keys",
    "page_heirs",
    "parse_ts",
    "redact_url",
    "same_stored",
    "slice_text",
    "store_closed",
    "store_text",
    "title_of",
    "unique_messages",
]

# Limits of `Pages.generate_ui` (docs/architecture.md#toolboxes); the store refuses anything larger so a page row stays
# bounded.
PAGE_LIMITS = {"html": 50_000, "css": 20_000, "js": 30_000}


# The longest title a fork is named with: the viewer's rename limit (``threadline.web.branches.MAX_TITLE``), so the
# name a fork gets can be saved again as it is.
FORK_TITLE_LIMIT = 200


def fork_title(title: str | None, siblings: Iterable[str | None]) -> str:
    """The title of a new fork: its origin's with ``(fork)``, numbered past the titles of the origin's other forks
    (``(fork 2)``, ``(fork 3)``…), so a list never shows a fork and its origin, or two forks, under one name. A name
    longer than `FORK_TITLE_LIMIT` shortens the origin's title (ending it with "…"), never the suffix."""
    base = title or "Untitled"
    taken = set(siblings)

    def named(suffix: str) -> str:
        if len(base) + len(suffix) + 1 <= FORK_TITLE_LIMIT:
            return f"{base} {suffix}"
        return f"{base[: FORK_TITLE_LIMIT - len(suffix) - 2].rstrip()}… {suffix}"

    candidate, number = named("(fork)"), 2
    while candidate in taken:
        candidate, number = named(f"(fork {number})"), number + 1
    return candidate


def now() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def format_ts(value: datetime) -> str:
    """A fixed-width UTC timestamp, so text comparison orders like time (SQLite keeps timestamps as text)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    # Not strftime: glibc's "%Y" does not pad years before 1000 ("355-09-01…"), which is neither fixed-width nor
    # readable by fromisoformat; isoformat always writes four digits.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_ts(value: str) -> datetime:
    """Inverse of `format_ts`; also reads the unpadded years (``355-09-01…``) that earlier versions wrote."""
    # fromisoformat (C, reads the trailing "Z" since 3.11) is ~20x faster than strptime: listings parse many.
    if value[4:5] != "-":
        year, _, rest = value.partition("-")
        value = f"{year.zfill(4)}-{rest}"
    return datetime.fromisoformat(value)


def store_text(value: str | None) -> str | None:
    """Text for a store column (a title, a mode) under the log's rule: lone surrogates become U+FFFD."""
    return replace_surrogates(value) if isinstance(value, str) else value


def encode_json(value: Any, what: str = "value") -> bytes:
    """JSON bytes of a value (metadata, cache entries); its strings follow the log's rule.

    Raises:
        StoreError: if the value is not JSON-serializable.
    """
    try:
        try:
            return msgspec.json.encode(value)
        except UnicodeEncodeError:
            # Only text holding lone surrogates fails this way; cleaning first would cost every write a walk.
            return msgspec.json.encode(replace_surrogates_in(value))
    except (TypeError, ValueError, RecursionError, msgspec.EncodeError) as exc:
        raise StoreError(f"cannot store {what}: it is not JSON-serializable ({exc})") from None


def decode_json(data: bytes | str) -> Any:
    """Inverse of `encode_json`."""
    return msgspec.json.decode(data)


def decode_cache_value(data: bytes, key: str) -> Any:
    """A cached value from the JSON bytes a store keeps (`Store.cache_get_raw`).

    Raises:
        StoreError: naming the key, if the bytes are not JSON (a damaged row, or one written by another program).
    """
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise StoreError(f"the cached value under {key!r} is damaged: {exc}") from None


def encode_metadata(metadata: Mapping[str, Any] | None) -> bytes:
    """The JSON bytes of checked conversation metadata (see `check_metadata`)."""
    return encode_json(check_metadata(metadata), "metadata")


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plain dict copy of conversation metadata under the log's text rule, refusing non-string keys."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(key, str) for key in metadata):
        raise StoreError("conversation metadata must be a mapping with string keys")
    try:
        cleaned: dict[str, Any] = replace_surrogates_in(dict(metadata))
    except ValueError as exc:
        raise StoreError(f"cannot store metadata: {exc}") from None
    return cleaned


_ARTIFACT_NAME = re.compile(r"^[^/\\\x00]{1,200}$")


def check_artifact_name(conversation_id: str, name: str) -> None:
    """Artifact names become the last part of ``artifact://<conversation>/<name>``: no slashes, no ``..``."""
    if not isinstance(name, str) or not _ARTIFACT_NAME.match(name) or name in (".", ".."):
        raise ValueError(f"invalid artifact name {name!r} (1-200 characters, no '/', '\\\\' or '..')")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError("an artifact needs a conversation id")


def check_artifact(conversation_id: str, name: str, content: str) -> str:
    """The arguments of `save_artifact`: a usable name (see `check_artifact_name`) and text content; returns the
    content to store (under the log's text rule)."""
    check_artifact_name(conversation_id, name)
    if not isinstance(content, str):
        raise ValueError("artifact content must be a string")
    return replace_surrogates(content)


def check_slice(offset: int, limit: int | None) -> None:
    """Offsets and limits of `read_artifact` are non-negative."""
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError("offset and limit must not be negative")


def slice_text(text: str, offset: int, limit: int | None) -> str:
    """``limit`` characters of ``text`` from ``offset`` (to the end if ``limit`` is None), as `read_artifact` reads."""
    return text[offset:] if limit is None else text[offset : offset + limit]


def check_page(title: str, html: str, css: str, js: str) -> tuple[str, str, str, str]:
    """Refuse pages larger than the limits of ``Pages.generate_ui``; returns ``(title, html, css, js)`` to store
    (under the log's text rule)."""
    for name, value in (("title", title), ("html", html), ("css", css), ("js", js)):
        if not isinstance(value, str):
            raise ValueError(f"page {name} must be a string")
    parts = {"html": html, "css": css, "js": js}
    for name, limit in PAGE_LIMITS.items():
        size = len(parts[name])
        if size > limit:
            raise ValueError(f"page {name} is {size:,} characters; the limit is {limit:,}")
    return replace_surrogates(title), replace_surrogates(html), replace_surrogates(css), replace_surrogates(js)


def new_page(title: str, html: str, css: str, js: str, conversation_id: str | None) -> PageInfo:
    """A checked page (see `check_page`) with a new id, made now, for a backend that keeps its own clock."""
    title, html, css, js = check_page(title, html, css, js)
    return PageInfo(
        id=new_id(), conversation_id=conversation_id, title=title, html=html, css=css, js=js, created_at=now()
    )


def own_cache_keys(conversation_id: str, keys: Sequence[str], others: Sequence[str]) -> list[str]:
    """Of the cache keys under a conversation's prefix (`conversation_cache_prefix`), those that are its own.

    Args:
        conversation_id: The conversation being deleted.
        keys: The cache keys that start with its prefix.
        others: The ids of the other conversations that start with ``conversation_id + ":"``: a key under one of
            their prefixes is theirs (the prefix of ``a`` is also the start of the prefix of ``a:b``).
    """
    theirs = tuple(conversation_cache_prefix(other) for other in others if other != conversation_id)
    return [key for key in keys if not key.startswith(theirs)] if theirs else list(keys)


def page_heirs(shares: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Who inherits each page of a deleted conversation: ``shares`` are ``(page id, conversation id)`` pairs of the
    forks that share its pages, oldest fork first; each page goes to the oldest fork sharing it."""
    heirs: dict[str, str] = {}
    for page_id, conversation_id in shares:
        heirs.setdefault(page_id, conversation_id)
    return heirs


# -- error texts: one wording per failure, so users see the same message whichever backend they run ---------------
def missing_conversation(conversation_id: str, where: str) -> StoreError:
    """The error for an id that names no conversation in the store at ``where``."""
    return StoreError(f"no conversation {conversation_id!r} in {where}")


def conversation_exists(conversation_id: str, where: str, *, importing: bool = False) -> StoreError:
    """The error for creating (or, with ``importing``, importing) a conversation whose id is taken."""
    suffix = "; nothing was imported" if importing else ""
    return StoreError(f"conversation {conversation_id!r} already exists in {where}{suffix}")


def missing_artifact(conversation_id: str, name: str) -> StoreError:
    """The error for reading an artifact that was never saved."""
    return StoreError(f"no artifact {name!r} in conversation {conversation_id!r}")


def missing_message(conversation_id: str, message_id: str) -> StoreError:
    """The error for a message id that names no message of the conversation."""
    return StoreError(f"no message {message_id!r} in conversation {conversation_id!r}")


def missing_page(page_id: str, where: str) -> StoreError:
    """The error for an id that names no page."""
    return StoreError(f"no page {page_id!r} in {where}")


def invalid_text() -> str:
    """Why a database refused a key (an id, a name) holding a lone surrogate, which no database text can hold."""
    return "an id or name holds a lone surrogate (text that is not valid Unicode), which cannot be stored or looked up"


def store_closed(where: str) -> StoreError:
    """The error for using a store after `Store.close`."""
    return StoreError(f"the store {where} is closed")


def unique_messages(messages: Sequence[Message], *, check_fields: bool = True) -> list[Message]:
    """The messages with exact repeats dropped (same id and content), so one append never stores an id twice;
    each is checked first to be one a store can read back (`field_problem`), unless ``check_fields`` is False
    (`Store.append_checked`: the writer checked them).

    Raises:
        StoreError: if a message has a field of the wrong type (``UserMessage(content=123)``: kept, it would make
            the whole conversation fail to load), or if two of them share an id but differ (one would silently
            replace the other). Nothing is appended.
    """
    seen: dict[str, Message] = {}
    out: list[Message] = []
    for position, message in enumerate(messages):
        if check_fields:
            _check_fields(message, position, "appended")
        prior = seen.get(message.id)
        if prior is None:
            seen[message.id] = message
            out.append(message)
        elif prior is not message and prior != message:
            raise StoreError(
                f"two different messages to append share the id {message.id!r}; nothing was appended "
                "(every message needs its own id)"
            )
    return out


def distinct_messages(messages: Sequence[Message], conversation_id: str) -> list[Message]:
    """The messages of an imported conversation, which must all have their own ids and fields of their types; a log
    holding approval entries must also keep their rules (`threadline.MessageList.validate`): a forged decision (one
    with no request, or bound to other arguments) would let a call run that nobody approved.

    Raises:
        StoreError: naming the first repeated id, mistyped field or misplaced approval entry (the import writes
            nothing).
    """
    seen: set[str] = set()
    entries = False
    for position, message in enumerate(messages):
        _check_fields(message, position, "imported", conversation_id)
        if message.id in seen:
            raise StoreError(
                f"conversation {conversation_id!r}: message {position} repeats the id {message.id!r} of an earlier "
                "message; nothing was imported"
            )
        seen.add(message.id)
        entries = entries or type(message) is ApprovalMessage
    if entries:
        try:
            validate_messages(messages, check_fields=False)
        except ProtocolError as exc:
            raise StoreError(
                f"conversation {conversation_id!r}: {exc} (rule {exc.rule}); nothing was imported"
            ) from None
    return list(messages)


def _check_fields(message: Message, position: int, done: str, conversation_id: str | None = None) -> None:
    problem = field_problem(message)
    if problem is not None:
        where = f"conversation {conversation_id!r}: " if conversation_id is not None else ""
        raise StoreError(
            f"{where}message {position} ({type(message).__name__}) cannot be stored: {problem}; nothing was {done}"
        )


def same_stored(stored: bytes, encoded: bytes) -> bool:
    """Whether a stored message and one being appended with the same id are the same message: the same bytes, or
    (written by another version of the encoder) the same message once decoded."""
    if stored == encoded:
        return True
    try:
        return decode_message(stored) == decode_message(encoded)
    except MessageListDeserializationError:
        return False


def different_message(conversation_id: str, message_id: str, where: str) -> StoreError:
    """The error for appending a message whose id names a different message already in the conversation."""
    return StoreError(
        f"conversation {conversation_id!r} in {where} already holds a different message with id {message_id!r}; "
        "nothing was appended (appending the same message again is fine, another one needs its own id)"
    )


def title_of(messages: Sequence[Message]) -> str | None:
    """A title from the first user message: whitespace collapsed, at most 80 characters."""
    for message in messages:
        if type(message) is UserMessage and message.content.strip():
            text = " ".join(message.content.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return None


_USERINFO_PASSWORD = re.compile(r"(//[^/?#@:]*):[^/?#@]*@")
# Query parameters whose value is a credential: libpq reads ``?password=`` and ``?sslpassword=`` as well as the
# ``user:password@`` form, and other drivers take tokens and keys the same way.
_SECRET_PARAMETER = re.compile(r"pass|pwd|secret|token|key|auth|credential|signature", re.IGNORECASE)
_PARAMETER = re.compile(r"([^&;=#]*)=([^&;#]*)")


def _redact_query(query: str) -> str:
    """``query`` with the values of credential-named parameters replaced, and key-shaped values masked."""
    from urllib.parse import unquote_plus

    from .._masking import mask_secrets

    def hide(match: re.Match[str]) -> str:
        name = match.group(1)
        if _SECRET_PARAMETER.search(unquote_plus(name)):
            return f"{name}=***"
        return f"{name}={mask_secrets(match.group(2))}"

    return _PARAMETER.sub(hide, query)


def redact_url(url: str) -> str:
    """The URL with any password replaced, so it can be shown in messages and ``store.url``: the one in
    ``user:password@``, the values of credential-named query parameters (``?password=``, ``?sslpassword=``,
    ``?api_key=``…) and anything shaped like an API key in the query. A URL too malformed to parse is redacted by
    pattern, so an error about it never shows the password."""
    try:
        parts = urlsplit(url)
        password, port = parts.password, parts.port
    except ValueError:
        head, mark, rest = url.partition("?")
        return _USERINFO_PASSWORD.sub(r"\1:***@", head) + mark + _redact_query(rest)
    netloc = parts.netloc
    if password is not None:
        host = parts.hostname or ""
        if port is not None:
            host = f"{host}:{port}"
        netloc = (f"{parts.username}:***@" if parts.username else ":***@") + host
    query, fragment = _redact_query(parts.query), _redact_query(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))
