"""The fault campaign of issue 8 as figures: each category runs many cases and counts what a user would lose.

A category returns a `Row`: cases tried, survived (no crash, nothing lost, the stored log valid, no secret shown),
lost messages, invalid stored logs and leaked secrets, with the first few failures described. ``bench/faults.py``
runs the campaign at full size and prints the table; ``tests/faults/test_campaign.py`` runs a small one in CI and
asserts every count of failures is zero. The categories live in ``fuzz``, ``tool_faults``, ``processes`` and
``leaks`` beside this module (Ctrl-C: ``interrupts``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_NOTES = 5


@dataclass
class Row:
    """One line of the campaign's table."""

    category: str
    tried: int = 0
    survived: int = 0
    lost: int = 0
    invalid: int = 0
    leaked: int = 0
    failures: list[str] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)

    def case(
        self, *, crashed: str | None = None, lost: int = 0, invalid: int = 0, leaked: int = 0, note: str = ""
    ) -> bool:
        """Count one case; a case survives when it did not crash and lost, broke and leaked nothing."""
        self.tried += 1
        self.lost += lost
        self.invalid += invalid
        self.leaked += leaked
        ok = crashed is None and not (lost or invalid or leaked)
        if ok:
            self.survived += 1
        elif len(self.failures) < MAX_NOTES:
            problems = [crashed or "", f"lost {lost}" if lost else "", f"invalid {invalid}" if invalid else ""]
            problems.append(f"leaked {leaked}" if leaked else "")
            self.failures.append(f"{note}: {', '.join(p for p in problems if p)}")
        return ok

    def saw(self, what: str) -> None:
        """Tally what a case met (e.g. where a kill landed), for the note under the table."""
        self.seen[what] = self.seen.get(what, 0) + 1

    @property
    def failed(self) -> int:
        return self.tried - self.survived

    def cells(self) -> list[Any]:
        return [self.category, self.tried, self.survived, self.lost, self.invalid, self.leaked]

    def figures(self) -> dict[str, Any]:
        return {
            "tried": self.tried,
            "survived": self.survived,
            "lost_messages": self.lost,
            "invalid_stored_logs": self.invalid,
            "leaked_secrets": self.leaked,
            "failures": self.failures,
            "seen": self.seen,
        }


HEADERS = ["category", "cases tried", "survived", "lost messages", "invalid stored logs", "leaked secrets"]
