"""The one rule for text entering the log: lone surrogates become U+FFFD.

Python strings may hold surrogate code points (U+D800–U+DFFF) that no UTF-8 text can: ``os.fsdecode`` and
``os.listdir`` give them for file names that are not UTF-8, ``sys.argv`` and stdin for bytes that are not, and JSON
decoders for ``"\\ud800"`` escapes. Such a string cannot be written as JSON, to SQLite or to PostgreSQL, so one of
them in a message would fail the write and leave the log half-stored. Every place text enters the log (message
construction and decoding, store titles, metadata, artifacts and pages) passes it through `replace_surrogates`; a
well-formed surrogate pair is joined into the character it encodes, anything else becomes U+FFFD, the Unicode
replacement character.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "MAX_NESTING",
    "REPLACEMENT",
    "has_surrogates",
    "replace_non_finite_in",
    "replace_surrogates",
    "replace_surrogates_in",
]

REPLACEMENT = "\ufffd"
# Values in the log (tool arguments, UI extras) nest at most this deep: deeper ones could not be written as JSON (the
# encoders recurse), so they are refused where they enter instead of failing every later save.
MAX_NESTING = 128
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (so it cannot be encoded as UTF-8)."""
    # isascii() reads a flag the string already carries: the common case costs no scan.
    return not text.isascii() and _SURROGATE.search(text) is not None


def replace_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD (``text`` itself if it has none)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # UTF-16 with "surrogatepass" writes each code point as is; decoding joins valid pairs and replaces the rest.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def replace_surrogates_in(value: Any) -> Any:
    """A JSON-like value (str, dict, list, tuple, scalars) with `replace_surrogates` applied to every string in it,
    dictionary keys included. Returns ``value`` itself when nothing needed replacing, so clean data is not copied.

    Raises:
        ValueError: if the value is nested more than `MAX_NESTING` levels deep (no JSON writer could take it).
    """
    if not _holds_surrogates(value):
        return value
    return _rebuilt(value)


def _holds_surrogates(value: Any) -> bool:
    # Iterative, so a value nested as deeply as a JSON decoder allows is checked without hitting the recursion limit;
    # it walks everything even after finding a surrogate, because the depth check must cover the whole value.
    found = False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            found = found or has_surrogates(item)
            continue
        if isinstance(item, dict):
            children: Any = item.values()
            found = found or any(isinstance(key, str) and has_surrogates(key) for key in item)
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > MAX_NESTING:
            raise ValueError(f"a value is nested more than {MAX_NESTING} levels deep")
        stack.extend((child, depth + 1) for child in children)
    return found


def _rebuilt(value: Any) -> Any:
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        return {
            (replace_surrogates(key) if isinstance(key, str) else key): _rebuilt(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rebuilt(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_rebuilt(item) for item in value)
    return value


def replace_non_finite_in(value: Any) -> Any:
    """A JSON-like value with every non-finite float (``nan``, ``inf``, ``-inf``) replaced by the string JSON
    writers use for it (``"NaN"``, ``"Infinity"``, ``"-Infinity"``). JSON has no such numbers and msgspec writes
    them as ``null``, so a log holding one would not read back as it was. Returns ``value`` itself when it holds
    none. ``value`` must already be known to nest at most `MAX_NESTING` deep (`replace_surrogates_in` checks)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite_text(value)
    if isinstance(value, dict):
        items = {key: replace_non_finite_in(item) for key, item in value.items()}
        return value if all(items[key] is item for key, item in value.items()) else items
    if isinstance(value, (list, tuple)):
        rebuilt = [replace_non_finite_in(item) for item in value]
        if all(new is old for new, old in zip(rebuilt, value, strict=True)):
            return value
        return rebuilt if isinstance(value, list) else tuple(rebuilt)
    return value


def _non_finite_text(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
