"""Issue 31's hostile round as rows of the fault campaign: one row for each of the 11 causes it found (544 tries, 27
failing) and for the 4 faults it observed, each trying that hostile input many ways. Every row failed on the code
before the fixes and stays at zero failures.

``bench/faults.py`` runs each row at its full size and prints the table; ``tests/faults/test_campaign.py`` runs each
at its CI size. The rows themselves live beside this module, by the part of threadline they attack:
``hostile_tools`` (the tool loop), ``hostile_http`` (the HTTP adapters), ``hostile_values`` (what a log may hold,
MCP start-up), ``hostile_web`` (the viewer) and ``hostile_store_cli`` (the stores and the command line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .campaign import Row
from .hostile_http import encoded_key_leaks, odd_retry_after, trickling_streams
from .hostile_store_cli import non_finite_options, postgres_connection_drops, streamed_logs
from .hostile_tools import endless_generators, unreadable_exceptions, writes_from_running_tools
from .hostile_values import deep_arguments, non_json_values, silent_mcp_servers
from .hostile_web import download_names, nested_markdown, slow_clients


@dataclass(frozen=True)
class Hostile:
    """One row: the fault of the issue it answers (its number there), the function that tries it, and how many cases
    CI and the full campaign try."""

    cause: str
    run: Callable[..., Row]
    ci: int
    full: int

    def __call__(self, cases: int, directory: Path, *, seed: int | None) -> Row:
        row = self.run(cases, directory, seed=seed)
        row.category = f"31/{self.cause} {row.category}"
        return row


# (cause, row, CI cases, full cases): the issue's part 2 numbers its causes 1-11; part 3's observed faults are "3".
HOSTILE: tuple[Hostile, ...] = (
    Hostile("2.1", endless_generators, 5, 60),
    Hostile("2.2", writes_from_running_tools, 12, 300),
    Hostile("2.3", postgres_connection_drops, 4, 24),
    Hostile("2.4", nested_markdown, 20, 500),
    Hostile("2.5", encoded_key_leaks, 12, 300),
    Hostile("2.6", odd_retry_after, 12, 500),
    Hostile("2.7", deep_arguments, 4, 60),
    Hostile("2.8", download_names, 40, 1000),
    Hostile("2.9", unreadable_exceptions, 40, 204),
    Hostile("2.10", non_json_values, 200, 3000),
    Hostile("2.11", non_finite_options, 10, 200),
    Hostile("3", trickling_streams, 4, 60),
    Hostile("3", silent_mcp_servers, 2, 12),
    Hostile("3", slow_clients, 3, 30),
    Hostile("3", streamed_logs, 2, 12),
)
