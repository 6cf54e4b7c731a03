"""`Cost`: what model calls cost, a value of the log (`Usage.cost`) and of every sum of it.

A leaf under the log: it imports nothing of threadline, so `threadline.message_types` can hold it.
"""

from __future__ import annotations

from decimal import Decimal

import msgspec

__all__ = ["NOT_PRICED", "Cost", "cost_of"]

NOT_PRICED = "usage not priced"
"""The unknown part a usage with tokens and no cost adds to a sum (e.g. one logged before calls were priced)."""


class Cost(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, gc=False):
    """What model calls cost, as priced from their usage (see `threadline.pricing.prices`).

    A price is never guessed: what has no price is named in ``unknown`` instead of being counted as free, and a sum
    keeps every unknown part of what it sums.

    Attributes:
        usd: The price in US dollars of the parts that have one, exact (written in the log as a string); None when
            no part has one.
        unknown: What could not be priced, e.g. ``"model openai:gpt-99"`` (a model absent from the price table),
            ``"cache_write_tokens"`` (a token kind the model has no price for), ``"usage not reported"``.
        prices: The price table that priced it (``"genai-prices 0.2.3"``); in a sum of calls priced by different
            tables, each, comma-separated.
    """

    usd: Decimal | None = None
    unknown: tuple[str, ...] = ()
    prices: str | None = None

    @property
    def known(self) -> bool:
        """Whether every part was priced (so ``usd`` is the whole price)."""
        return not self.unknown and self.usd is not None

    def __add__(self, other: Cost) -> Cost:
        usd = other.usd if self.usd is None else self.usd if other.usd is None else self.usd + other.usd
        unknown = self.unknown + tuple(part for part in other.unknown if part not in self.unknown)
        tables = dict.fromkeys(f"{self.prices or ''}, {other.prices or ''}".split(", "))
        return Cost(usd=usd, unknown=unknown, prices=", ".join(table for table in tables if table) or None)


def cost_of(cost: Cost | None, tokens: int) -> Cost:
    """A usage's cost in a sum, from its ``cost`` and its token count: one with tokens and no cost is an unknown
    part, never a free one."""
    if cost is not None:
        return cost
    return Cost(unknown=(NOT_PRICED,)) if tokens else Cost()
