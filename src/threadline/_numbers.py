"""The numbers a setting can take are finite: a request goes out as JSON, which has no infinity or NaN (its encoder
writes ``null`` for them, so ``temperature=inf`` reached the provider as no temperature at all), and no timeout or
wait lasts infinitely many seconds (None says "no limit"). One check, used by the library's settings and by the
command line's float options."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["finite_problem", "non_finite"]


def non_finite(value: Any) -> float | None:
    """An infinity or NaN in ``value`` (a number, or one inside the lists, tuples and mappings of a setting sent as
    JSON), or None when it holds none."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if not isinstance(value, (Mapping, list, tuple)):  # a plain setting (an int, a text, None): checked every turn
        return None
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return item
        elif isinstance(item, (Mapping, list, tuple)) and id(item) not in seen:
            seen.add(id(item))  # a container that holds itself is walked once
            pending.extend(item.values() if isinstance(item, Mapping) else item)
    return None


def finite_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a setting if it is or holds an infinity or NaN (``"must be a finite number,
    got inf"``, to follow the setting's name), or None."""
    found = non_finite(value)
    return None if found is None else f"must be a finite number, got {found!r}"
