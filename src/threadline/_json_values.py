"""The values a log's free-form fields may hold: tool-call arguments and ``meta.ui`` are JSON values.

A JSON value here is one that every writer and reader of the log keeps exactly: text, a whole number, a finite
float, ``True``/``False``, ``None``, a list of JSON values, or a dict with text keys and JSON values, nested at most
`MAX_NESTING` levels deep. Anything else either cannot be written (``object()``: ``to_json`` raised `TypeError`) or
comes back as something else (a tuple or a set as a list, bytes as base64 text, an int key as text, ``nan`` as
``null``). Depth matters as much: the encoders, the decoders and everything that walks a value (secret masking, the
viewer, a request's hash) recurse, and arguments a model nested 3,000 levels deep failed the model call with
`RecursionError`. So values deeper than `MAX_NESTING` are refused where they enter the log, and a model's argument
text nested that deeply is kept as text (``raw_arguments``), which the model is told is invalid.

Everything here walks values with a stack of its own, never by recursion, so a value of any depth is judged.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec

from ._text import MAX_NESTING

__all__ = [
    "MAX_NESTING",
    "TOO_DEEP",
    "arguments_text_problem",
    "json_problem",
    "nested_too_deeply",
    "object_from_text",
]

TOO_DEEP = f"nested more than {MAX_NESTING} levels deep"
"""How every message says a value is deeper than the log keeps."""

_encode = msgspec.json.encode
_decode = msgspec.json.decode
_CONTAINERS = (dict, list, tuple)


def nested_too_deeply(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` holds dicts, lists or tuples nested more than ``limit`` levels (the value itself is level
    1), walked without recursion."""
    if not isinstance(value, _CONTAINERS):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, _CONTAINERS))
    return False


def object_from_text(text: str | bytes) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, if it holds one the log can keep: None for text that is not JSON, JSON that is
    not an object, or an object nested more than `MAX_NESTING` levels deep (however deep: a value past what the
    decoder can build is refused, not an error)."""
    try:
        value = _decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    # Brackets counted in C bound the depth from above: a value with fewer cannot be too deep, and most have few.
    if _brackets(text) >= MAX_NESTING and nested_too_deeply(value):
        return None
    return value


def arguments_text_problem(text: str) -> str:
    """What is wrong with argument text the log keeps as text (``raw_arguments``), as the model is told: it is
    ``"not valid JSON"`` (or JSON other than an object), `TOO_DEEP`, or, for an object (which only a model written
    in Python can give: a value JSON cannot keep, such as a tuple or an int key, written as JSON), that."""
    try:
        value = _decode(text)
    except RecursionError:
        return TOO_DEEP
    except (msgspec.DecodeError, UnicodeDecodeError):
        return "not valid JSON"
    if not isinstance(value, dict):
        return "not valid JSON"
    if nested_too_deeply(value):
        return TOO_DEEP
    return "not a JSON object of JSON values"


def _brackets(text: str | bytes) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def json_problem(value: Any) -> str | None:
    """Why ``value`` is not a JSON value the log keeps exactly (see the module docstring), naming where in it the
    offending part is (``.when is of type datetime, …``, ``.x[2] is nan, …``, ``it is nested more than …``); None
    when it is one.

    Most values are judged in C: encoded, decoded and compared (equal only if nothing was changed on the way), with
    their brackets counted to bound their depth; only a value that fails that is walked, to find what is wrong.
    """
    try:
        encoded = _encode(value)
        if _brackets(encoded) < MAX_NESTING and _decode(encoded) == value:
            return None
    except Exception:
        pass
    return _walk_problem(value)


def _walk_problem(value: Any) -> str | None:
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, (str, bool, int)) or item is None:
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{_where(path)} is {item!r}, which JSON cannot hold"
            continue
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return f"{_where(path)} has a key of type {type(key).__name__} ({key!r:.40}); JSON keys are text"
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        elif isinstance(item, tuple):
            return f"{_where(path)} is a tuple; JSON has lists (give a list)"
        else:
            return f"{_where(path)} is of type {type(item).__name__}, not a JSON value"
        if depth > MAX_NESTING:
            return f"it is {TOO_DEEP}"  # the path to where would be 128 keys long
        stack.extend((child, depth + 1, (*path, key)) for key, child in reversed(list(children)))
    return None


def _where(path: tuple[Any, ...]) -> str:
    """A path inside a value as its problem names it (``.city[0]``); ``it`` for the value itself."""
    if not path:
        return "it"
    parts = []
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key.isidentifier():
            parts.append(f".{key}")
        else:
            parts.append(f"[{json.dumps(key)}]")
    return "".join(parts)
