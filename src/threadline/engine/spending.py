"""Spending limits of a turn and of a whole conversation (`Budget`), checked by the engine before each model request.

A limit is on what was already spent: a request starts only while the turn's (and the conversation's) spending is
below every limit set, so a turn stops *before* a request that would start past its budget, never in the middle of
an answer; it then ends with ``stop_reason="budget"`` and `TurnResult.detail` says which limit was reached. The
conversation's spending is summed from its log (each assistant message's usage and cost), so a limit holds across
processes and restarts.

A cost limit needs known prices: once a call's cost is unknown (a model absent from the price table), a turn with a
cost limit stops before its next request and says why, rather than spending without a bound.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from ..message_types import Usage
from ..pricing.cost import Cost
from ..pricing.prices import Spending, cost_text

__all__ = ["Budget", "budget_problem", "over_budget"]


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """A spending limit, of a turn or of a whole conversation (each None: no limit).

    Attributes:
        max_cost_usd: US dollars that may be spent, exact.
        max_tokens: Tokens (input and output) that may be used.
    """

    max_cost_usd: Decimal | None = None
    max_tokens: int | None = None


def over_budget(turn_budget: Budget | None, budget: Budget | None, turn: Usage, before: Spending | None) -> str | None:
    """Why the next request must not start (a sentence naming the limit and what was spent), or None.

    Args:
        turn_budget: The limit of the turn.
        budget: The limit of the conversation.
        turn: The turn's usage so far.
        before: What the conversation spent before the turn (summed from its log; needed with ``budget``).
    """
    turn_cost = turn.cost if turn.cost is not None else Cost()
    if turn_budget is not None:
        problem = _over("this turn", turn.total_tokens, turn_cost, turn_budget)
        if problem is not None:
            return problem
    if budget is not None and before is not None:
        return _over("this conversation", before.tokens + turn.total_tokens, before.cost + turn_cost, budget)
    return None


def _over(what: str, tokens: int, cost: Cost, budget: Budget) -> str | None:
    max_tokens, max_usd = budget.max_tokens, budget.max_cost_usd
    if max_tokens is not None and tokens >= max_tokens:
        return (
            f"budget reached: {what} used {tokens:,} tokens of its {max_tokens:,}; the turn stopped before the next "
            "request"
        )
    if max_usd is None:
        return None
    if cost.unknown:
        return (
            f"budget cannot be kept: the cost of {what} is unknown ({', '.join(cost.unknown)}), so its limit of "
            f"${max_usd} cannot be checked; the turn stopped before the next request"
        )
    if (cost.usd or 0) >= max_usd:
        return (
            f"budget reached: {what} cost {cost_text(cost)} of its ${max_usd}; the turn stopped before the next request"
        )
    return None


def budget_problem(max_cost_usd: Any, max_tokens: Any) -> str | None:
    """Why these cannot be a budget's limits (a cost in USD >= 0 and a token count >= 0, each or None), or None."""
    if max_cost_usd is not None:
        ok = isinstance(max_cost_usd, (int, float, Decimal)) and not isinstance(max_cost_usd, bool)
        if not ok or not Decimal(max_cost_usd).is_finite() or max_cost_usd < 0:
            return f"max_cost_usd must be a number of US dollars >= 0 (or None), got {max_cost_usd!r:.60}"
    if max_tokens is not None and not (type(max_tokens) is int and max_tokens >= 0):
        return f"max_tokens must be an integer >= 0 (or None), got {max_tokens!r:.60}"
    return None
