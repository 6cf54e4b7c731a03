"""The one turn engine. Every entry point (``prompt``, ``stream``, async iteration, ``prompt_for_type``, runs, and
callers without a `Conversation`) drives `run_turn`.

- `threadline.engine.plan`: the plan of a turn — `plan_turn` makes its `TurnOptions` from a config and a call's
  settings, checked once, and holds the only defaults (``tool_timeout`` 60 s, ``max_tool_rounds`` 10);
- `threadline.engine.turn`: the turn — `run_turn` over a `TurnHost`, with `TurnOptions` in and a `TurnResult` out,
  and the repair of calls a crash left unanswered;
- `threadline.engine.response`: the checks that make a model's answer loggable (`check_response`);
- `threadline.engine.rounds`: the tool calls of one round, and `settle` (what was decided since the last turn);
- `threadline.engine.waits`: which calls wait for a decision or a result from outside, and the entries that record
  it (docs/architecture.md#tool-calls-that-wait).
"""

from __future__ import annotations

from .plan import TurnOptions, plan_turn
from .response import check_response
from .turn import (
    INTERRUPTED_TOOL,
    TurnHost,
    TurnResult,
    interrupted_results,
    pending_calls_before,
    repair_pending,
    run_turn,
)

__all__ = [
    "INTERRUPTED_TOOL",
    "TurnHost",
    "TurnOptions",
    "TurnResult",
    "check_response",
    "interrupted_results",
    "pending_calls_before",
    "plan_turn",
    "repair_pending",
    "run_turn",
]
