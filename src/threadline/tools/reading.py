"""Reading a tool's result to its end, and no further than its deadline.

A tool may return a generator, or a value with iterators inside (``{"lines": open(path)}``, ``map(...)``): the model
is sent their items as JSON lists, so they are read before the result is encoded. One that never ends must stop
being read once its tool's timeout has passed, or it fills the memory of a turn that has long answered (an issue-31
tool grew a process from 198 MB to 2.5 GB in 15 s). So the reading here checks a stop signal between items:

- `read_iterators` reads every iterator in a value on a worker thread, and stops when the turn has stopped waiting
  (the caller sets the event), closing a generator it stopped in;
- `read_async_generator` reads an async generator on the event loop and hands the loop to the turn's other tasks
  every few milliseconds, even when the generator itself never suspends, so the tool's timeout can fire.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import time
from collections.abc import AsyncGenerator, Iterator
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from .._text import MAX_NESTING

if TYPE_CHECKING:
    import threading

__all__ = ["SHARE_SECONDS", "ReadingStopped", "holds_iterator", "read_async_generator", "read_iterators"]

# An async generator that never suspends is paused this often, so the event loop runs the rest of the turn (its
# other tools, the tool's own timeout) in between.
SHARE_SECONDS = 0.005
# Values that hold nothing to read: the common case, checked first.
_PLAIN = frozenset({str, int, float, bool, type(None), bytes})
_CONTAINERS = (list, tuple, set, frozenset)
Kind = Literal["iterator", "dict", "list", "leaf"]
# The kind of each class met so far (bounded: classes made on the fly must not fill it).
_kinds: dict[type, Kind] = {}
_MAX_KINDS = 1000


class ReadingStopped(Exception):
    """The reading of a result stopped because nobody waits for it any more (its timeout passed, or the turn was
    cancelled)."""


class _Found(Exception):
    """Raised by the quick look of `holds_iterator` at the first iterator it meets."""


def _kind(cls: type) -> Kind:
    kind = _kinds.get(cls)
    if kind is None:
        if issubclass(cls, Iterator):
            kind = "iterator"
        elif issubclass(cls, dict):
            kind = "dict"
        elif issubclass(cls, _CONTAINERS):
            kind = "list"
        else:
            kind = "leaf"
        if len(_kinds) < _MAX_KINDS:
            _kinds[cls] = kind
    return kind


def _look(value: Any) -> Any:
    """The quick look's hook, called with each value msgspec cannot write itself: stop at an iterator, enter a
    container of a class of its own (a dict or list subclass), and take anything else as a leaf (a pydantic model,
    an object the encoder writes as its ``repr``)."""
    kind = _kind(type(value))
    if kind == "iterator":
        raise _Found
    if kind == "dict":
        return dict(value)
    if kind == "list":
        return list(value)
    return None


_QUICK_LOOK = msgspec.json.Encoder(enc_hook=_look)


def holds_iterator(value: Any) -> bool:
    """Whether ``value`` is, or holds in a dict, list, tuple, set or dataclass, an iterator that encoding it would
    read to its end (a generator, ``map(...)``, a file, ``iter(...)``)."""
    if type(value) in _PLAIN:
        return False
    try:
        # msgspec walks the value in C (dataclasses included), and calls `_look` only for what it cannot write
        # itself: several times faster than a walk in Python, on the large results where that counts. What it
        # writes is thrown away.
        _QUICK_LOOK.encode(value)
    except _Found:
        return True
    except Exception:  # something the quick look cannot take (a dict with tuple keys, a lone surrogate): walk
        return _holds_iterator(value, 0, set())
    return False


def _holds_iterator(value: Any, depth: int, seen: set[int]) -> bool:
    if type(value) in _PLAIN:
        return False
    kind = _kind(type(value))
    if kind == "iterator":
        return True
    if depth >= MAX_NESTING or id(value) in seen:  # nested deeper, or a value holding itself: the encoder refuses it
        return False
    seen.add(id(value))
    return any(_holds_iterator(item, depth + 1, seen) for item in _parts(value, kind))


def read_iterators(value: Any, stop: threading.Event) -> Any:
    """``value`` with every iterator in it read into a list (items included, recursively), as the encoder would
    write it; ``value`` itself when it holds none. A container holding one is copied as a plain ``dict`` or
    ``list`` (a dataclass as the dict of its fields), which encode to the same JSON.

    Raises:
        ReadingStopped: when ``stop`` was set before the reading ended; a generator stopped in is closed.
        Exception: whatever an iterator raised while it was read (the tool's own failure).
    """
    return _read_in(value, stop, 0, {})


def _read_in(value: Any, stop: threading.Event, depth: int, done: dict[int, tuple[Any, Any]]) -> Any:
    """`read_iterators` below ``depth``; ``done`` maps what was met before (by id) to itself and what it became, so
    a value met twice is read once, and one that holds itself is left to the encoder (which refuses it). It keeps
    what it maps alive: an id is unique only while its object lives."""
    if type(value) in _PLAIN:
        return value
    key = id(value)
    if key in done:
        return done[key][1]
    kind = _kind(type(value))
    if kind != "iterator" and depth >= MAX_NESTING:
        return value
    done[key] = (value, value)
    if kind == "iterator":
        read: Any = _read(value, stop, depth, done)
    elif kind == "dict":
        changed: dict[Any, Any] | None = None
        for name, item in value.items():
            item_read = _read_in(item, stop, depth + 1, done)
            if item_read is not item:
                if changed is None:
                    changed = dict(value)
                changed[name] = item_read
        read = value if changed is None else changed
    elif kind == "list":
        items = list(value)
        read_items = [_read_in(item, stop, depth + 1, done) for item in items]
        same = all(item_read is item for item_read, item in zip(read_items, items, strict=True))
        read = value if same else read_items
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        read_fields = _read_in(fields, stop, depth, done)
        read = value if read_fields is fields else read_fields
    else:
        read = value
    done[key] = (value, read)
    return read


def _parts(value: Any, kind: Kind) -> list[Any]:
    """The items of a container `read_iterators` enters (none for anything else)."""
    if kind == "dict":
        return list(value.values())
    if kind == "list":
        return list(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, field.name) for field in dataclasses.fields(value)]
    return []


def _read(iterator: Iterator[Any], stop: threading.Event, depth: int, done: dict[int, tuple[Any, Any]]) -> list[Any]:
    items: list[Any] = []
    while True:
        if stop.is_set():
            if inspect.isgenerator(iterator):
                # Its finally blocks run now, on this worker; one that refuses to stop is its own problem.
                with contextlib.suppress(Exception):
                    iterator.close()
            raise ReadingStopped
        try:
            item = next(iterator)
        except StopIteration:
            return items
        items.append(_read_in(item, stop, depth + 1, done))


async def read_async_generator(generator: AsyncGenerator[Any, Any]) -> list[Any]:
    """The items of an async generator as a list; the generator is closed however the reading ends (its timeout
    cancels this coroutine).

    Between items the event loop gets a turn at least every `SHARE_SECONDS`: a generator that yields without ever
    suspending would otherwise hold the loop, and with it the timeout meant to stop it.
    """
    import asyncio  # already loaded here (a coroutine is running); not imported with the package

    items: list[Any] = []
    share_at = time.monotonic() + SHARE_SECONDS
    try:
        async for item in generator:
            items.append(item)
            if time.monotonic() >= share_at:
                await asyncio.sleep(0)
                share_at = time.monotonic() + SHARE_SECONDS
    finally:
        await generator.aclose()
    return items
