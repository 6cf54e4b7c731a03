"""Helpers every backend shares: timestamps, JSON values, argument checks, URL redaction, import items."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..errors import StoreError
from ..messages import Message, UserMessage

__all__ = [
    "check_artifact_name",
    "check_metadata",
    "check_page",
    "check_slice",
    "decode_json",
    "encode_json",
    "format_ts",
    "now",
    "parse_ts",
    "redact_url",
    "title_of",
    "unique_messages",
]

# Limits of `Pages.generate_ui` (DESIGN §3); the store refuses anything larger so a page row stays bounded.
PAGE_LIMITS = {"html": 50_000, "css": 20_000, "js": 30_000}
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def now() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def format_ts(value: datetime) -> str:
    """A fixed-width UTC timestamp, so text comparison orders like time (SQLite keeps timestamps as text)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime(_TS_FORMAT)


def parse_ts(value: str) -> datetime:
    """Inverse of `format_ts`."""
    # fromisoformat (C, reads the trailing "Z" since 3.11) is ~20x faster than strptime: listings parse many.
    return datetime.fromisoformat(value)


def encode_json(value: Any, what: str = "value") -> bytes:
    """JSON bytes of a value (metadata, cache entries).

    Raises:
        StoreError: if the value is not JSON-serializable.
    """
    try:
        return msgspec.json.encode(value)
    except (TypeError, msgspec.EncodeError) as exc:
        raise StoreError(f"cannot store {what}: it is not JSON-serializable ({exc})") from None


def decode_json(data: bytes | str) -> Any:
    """Inverse of `encode_json`."""
    return msgspec.json.decode(data)


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plain dict copy of conversation metadata, refusing non-string keys."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(key, str) for key in metadata):
        raise StoreError("conversation metadata must be a mapping with string keys")
    return dict(metadata)


_ARTIFACT_NAME = re.compile(r"^[^/\\\x00]{1,200}$")


def check_artifact_name(conversation_id: str, name: str) -> None:
    """Artifact names become the last part of ``artifact://<conversation>/<name>``: no slashes, no ``..``."""
    if not isinstance(name, str) or not _ARTIFACT_NAME.match(name) or name in (".", ".."):
        raise ValueError(f"invalid artifact name {name!r} (1-200 characters, no '/', '\\\\' or '..')")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError("an artifact needs a conversation id")


def check_slice(offset: int, limit: int | None) -> None:
    """Offsets and limits of `read_artifact` are non-negative."""
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError("offset and limit must not be negative")


def check_page(title: str, html: str, css: str, js: str) -> None:
    """Refuse pages larger than the limits of ``Pages.generate_ui``."""
    for name, value in (("title", title), ("html", html), ("css", css), ("js", js)):
        if not isinstance(value, str):
            raise ValueError(f"page {name} must be a string")
    parts = {"html": html, "css": css, "js": js}
    for name, limit in PAGE_LIMITS.items():
        size = len(parts[name])
        if size > limit:
            raise ValueError(f"page {name} is {size:,} characters; the limit is {limit:,}")


def unique_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages with repeated ids dropped (first one wins), so one append never stores an id twice."""
    seen: set[str] = set()
    out: list[Message] = []
    for message in messages:
        if message.id not in seen:
            seen.add(message.id)
            out.append(message)
    return out


def title_of(messages: Sequence[Message]) -> str | None:
    """A title from the first user message: whitespace collapsed, at most 80 characters."""
    for message in messages:
        if type(message) is UserMessage and message.content.strip():
            text = " ".join(message.content.split())
            return text if len(text) <= 80 else text[:79] + "…"
    return None


def redact_url(url: str) -> str:
    """The URL with any password replaced, so it can be shown in messages and ``store.url``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))
