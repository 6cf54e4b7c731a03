"""The checks every reader of a log format shares: JSON text, field types, positions and timestamps.

Each reader words its errors in its own way (tests and users rely on those words), so these helpers check and
convert, and say what was wrong in the reader's terms: `required_field` speaks for the versioned formats
(``messages[3].role: expected str, got int``), `first_field` for the JSON-file layout, whose messages name fields
by several spellings (``role: expected a string, got int``, prefixed with the position by `positioned`).

Nothing here builds a message, so every reader can use it without importing the message types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from .._json_values import json_problem
from ..errors import MessageListDeserializationError

__all__ = [
    "READ_ERRORS",
    "FieldError",
    "decode_json",
    "first_field",
    "is_of",
    "iso_timestamp",
    "kind_name",
    "parse_timestamp",
    "positioned",
    "required_field",
    "result_text",
]


class FieldError(Exception):
    """A problem inside one message or index entry, worded without its position; `positioned` (or the caller)
    turns it into `MessageListDeserializationError` naming where it is.

    Attributes:
        field: The offending field, when there is one.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def kind_name(value: Any) -> str:
    """The JSON-ish name of a value's type for an error message (``null`` for None)."""
    return "null" if value is None else type(value).__name__


def is_of(value: Any, types: type | tuple[type, ...]) -> bool:
    """Whether ``value`` is one of ``types``; a bool is never taken for an int (JSON ``true`` is not a number)."""
    wanted = types if isinstance(types, tuple) else (types,)
    return isinstance(value, wanted) and (not isinstance(value, bool) or bool in wanted)


def required_field(
    item: Mapping[str, Any], key: str, types: type | tuple[type, ...], position: int, *, optional: bool = False
) -> Any:
    """``item[key]`` of message ``position`` in a versioned format, checked against ``types``.

    Returns:
        The value, or None if it is absent or null and ``optional``.

    Raises:
        MessageListDeserializationError: ``messages[<position>]: missing field …`` or
            ``messages[<position>].<key>: expected <type>, got <type>``.
    """
    value = item.get(key)
    if value is None:
        if optional:
            return None
        raise MessageListDeserializationError(
            f"messages[{position}]: missing field {key!r}", position=position, field=key
        )
    if not is_of(value, types):
        expected = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise MessageListDeserializationError(
            f"messages[{position}].{key}: expected {expected}, got {kind_name(value)}", position=position, field=key
        )
    return value


def first_field(item: Mapping[str, Any], keys: Sequence[str], types: type | tuple[type, ...], what: str) -> Any:
    """The first of ``keys`` present and not null, checked against ``types`` (``what`` names them in the error).

    Raises:
        FieldError: ``<key>: expected <what>, got <type>``.
    """
    for key in keys:
        value = item.get(key)
        if value is None:
            continue
        # `is_of`, inlined: layout readers ask for a dozen fields per message.
        wanted = types if isinstance(types, tuple) else (types,)
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            raise FieldError(f"{key}: expected {what}, got {kind_name(value)}", key)
        return value
    return None


READ_ERRORS = (FieldError, ValueError, RecursionError)
"""What reading one message may raise: a `FieldError`, what a message's constructor refuses (a value nested too
deeply, a time with no UTC equivalent), and `MessageListDeserializationError` (a ValueError) naming it already.
Readers catch these around their whole loop (a ``try`` costs nothing until it catches; a context manager entered per
message cost a tenth of the reading time) and raise `positioned` of what they caught."""


def positioned(exc: BaseException, position: int) -> MessageListDeserializationError:
    """``exc``, raised while reading message ``position``, as an error naming that position (one that names its
    position already is returned as it is)."""
    if isinstance(exc, MessageListDeserializationError):
        return exc
    if isinstance(exc, FieldError):
        return MessageListDeserializationError(f"messages[{position}]: {exc}", position=position, field=exc.field)
    if isinstance(exc, RecursionError):
        return MessageListDeserializationError(f"messages[{position}]: nested too deeply", position=position)
    return MessageListDeserializationError(f"messages[{position}]: {exc}", position=position)


def parse_timestamp(value: Any, key: str) -> datetime | None:
    """An ISO timestamp (naive is UTC) or epoch milliseconds, in UTC; None for None.

    Raises:
        FieldError: naming ``key`` if the value is not a time or has no UTC equivalent.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise FieldError(f"{key}: expected an ISO timestamp or epoch milliseconds, got bool", key)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            raise FieldError(f"{key}: {value!r} is not a time in epoch milliseconds", key) from None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        except ValueError:
            raise FieldError(f"{key}: {value!r} is not an ISO timestamp", key) from None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:  # e.g. 9999-12-31T23:59:59-01:00: one second after the last UTC time there is
            raise FieldError(f"{key}: {value!r} is outside the range of UTC times", key) from None
    raise FieldError(f"{key}: expected an ISO timestamp or epoch milliseconds, got {kind_name(value)}", key)


def iso_timestamp(value: datetime) -> str:
    """``value`` as ISO text in UTC with microseconds and a ``Z`` (how the JSON-file layout writes times)."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def result_text(value: Any, key: str = "result") -> str:
    """A tool result as the log keeps it: text as it is, any other JSON value as JSON text.

    Raises:
        FieldError: naming ``key`` if the value is not a JSON value (an ``object()``, a ``datetime``, nan, a tuple in
            a dict given to `MessageList.from_dict`: see `threadline._json_values`), rather than keeping whatever
            ``str()`` makes of it.
    """
    if isinstance(value, str):
        return value
    problem = json_problem(value)
    if problem is not None:
        raise FieldError(f"{key}: not a JSON value ({problem})", key)
    return json.dumps(value, ensure_ascii=False)


def decode_json(data: str | bytes | bytearray | memoryview) -> Any:
    """Decoded JSON text, including ``"\\ud800"``-style escapes of lone surrogates, which msgspec refuses but the
    JSON grammar allows (other programs write them for file names that are not UTF-8); the strings they give are
    then read under the log's rule (U+FFFD) by the message constructors.

    Raises:
        MessageListDeserializationError: ``not valid JSON: …``, or ``not valid JSON for a log: nested too deeply``.
        UnicodeError: if ``data`` is not UTF-8 (bytes) or holds lone surrogate characters (str); callers say which
            their input was.
    """
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        # msgspec names the surrogate in its message, except for a lone high one near the end of a string, which
        # it reports as "Input data was truncated": the stdlib reader decides whenever such an escape is there.
        if "surrogate" not in str(exc) and not _has_surrogate_escape(data):
            raise MessageListDeserializationError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise MessageListDeserializationError("not valid JSON for a log: nested too deeply") from None
    try:
        return json.loads(bytes(data) if isinstance(data, (bytearray, memoryview)) else data, parse_constant=_refuse)
    except RecursionError:
        raise MessageListDeserializationError("not valid JSON for a log: nested too deeply") from None
    except ValueError as exc:
        raise MessageListDeserializationError(f"not valid JSON: {exc}") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _has_surrogate_escape(data: str | bytes | bytearray | memoryview) -> bool:
    if isinstance(data, str):
        return _SURROGATE_ESCAPE.search(data) is not None
    return _SURROGATE_ESCAPE_BYTES.search(bytes(data)) is not None


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")
