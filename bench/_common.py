"""Shared helpers of the benchmark scripts: timing, a printed table, and ``bench/results.json``.

Each script owns one section of ``results.json`` (keyed by the script's name) and rewrites only that section, so
the scripts can run in any order. Figures are always compared with a floor measured in the same run.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results.json")


def timeit(fn: Callable[[], Any], *, repeat: int = 7, number: int = 1, warmup: int = 1) -> list[float]:
    """Seconds per call of ``fn``, one figure per repetition (each the mean of ``number`` calls)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - start) / number)
    return out


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a plain-text table."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return str(value)


def record(section: str, results: dict[str, Any]) -> None:
    """Write one script's results into ``bench/results.json`` (other sections are kept)."""
    data: dict[str, Any] = {}
    if RESULTS.exists():
        try:
            data = json.loads(RESULTS.read_text())
        except ValueError:
            data = {}
    data[section] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        **results,
    }
    tmp = RESULTS.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(RESULTS)
