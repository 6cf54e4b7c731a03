"""Context build time: threadline's ContextBuilder vs a plain list trim of the same log, same run.

The log is a realistic mix (user questions, answers, assistant tool calls with one to three results of varying size,
some larger than the preview limit, an occasional failure and UI-only event). The budget is 8,000 estimated tokens
(message and character limits are set out of the way so the token budget decides).

The floor, "a plain list trim", walks the list back from the end summing the same token estimate and slices: what
a hand-written trim does, with none of the protocol rules (tool groups, orphans, dangling calls, previews).

Targets (docs/contributing.md#performance-targets): build <= 25x the floor, and the 100,000-message build no slower than
the 10,000-message one within noise (cost follows what is kept, not the length of the log).

Run: python bench/bench_context.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, print_table, record, timeit
from threadline import (
    AssistantMessage,
    ContextBuilder,
    ContextSettings,
    LLMError,
    MessageMeta,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from threadline.context import estimate_tokens
from threadline.messages import Message

BUDGET = 8_000


def make_log(n: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    out: list[Message] = []
    call = 0
    while len(out) < n:
        out.append(UserMessage(content="Question: " + "word " * rng.randint(5, 60)))
        if rng.random() < 0.5:
            calls = []
            for _ in range(rng.randint(1, 3)):
                call += 1
                calls.append(ToolCall(id=f"call_{call}", name="search", arguments={"q": "term " * rng.randint(1, 5)}))
            out.append(AssistantMessage(content=None, tool_calls=calls))
            for c in calls:
                size = rng.choice([80, 400, 1_500, 6_000])
                out.append(ToolMessage(tool_call_id=c.id, tool_name="search", content="r" * size))
        if rng.random() < 0.03:
            out.append(AssistantMessage(content="partial", error=LLMError(type="timeout", message="read timed out")))
        if rng.random() < 0.05:
            out.append(AssistantMessage(content="ui only", meta=MessageMeta(include_in_context=False)))
        out.append(AssistantMessage(content="Answer: " + "text " * rng.randint(10, 120)))
    return out[:n]


def plain_trim(log: list[Message], budget: int) -> list[Message]:
    used = 0
    start = len(log)
    while start > 0:
        message = log[start - 1]
        text = message.content or ""
        cost = estimate_tokens(text) + 4
        if used + cost > budget:
            break
        used += cost
        start -= 1
    return log[start:]


def main() -> None:
    settings = ContextSettings(max_messages=1_000_000, max_chars=10_000_000, max_tokens=BUDGET)
    builder = ContextBuilder(settings=settings)
    saved: dict[str, str] = {}

    def sink(name: str, content: str) -> str:
        saved[name] = content
        return f"artifact://bench/{name}"

    logs = {n: make_log(n) for n in (10_000, 100_000)}
    kept = {
        n: len(builder.build(log, "agent", artifacts=sink, conversation_id="bench").report.kept)
        for n, log in logs.items()
    }
    samples: dict[tuple[int, str], list[float]] = {(n, kind): [] for n in logs for kind in ("ours", "floor")}
    number = 100
    for _ in range(40):  # all four interleaved, so every figure sees the same machine state
        for n, log in logs.items():
            samples[(n, "floor")] += timeit(lambda log=log: plain_trim(log, BUDGET), repeat=1, number=number, warmup=0)
            samples[(n, "ours")] += timeit(
                lambda log=log: builder.build(log, "agent", artifacts=sink, conversation_id="bench"),
                repeat=1,
                number=number,
                warmup=0,
            )
    rows = []
    results: dict[str, dict[str, float]] = {}
    for n in logs:
        o, f = median(samples[(n, "ours")]), median(samples[(n, "floor")])
        floor_kept = len(plain_trim(logs[n], BUDGET))
        results[str(n)] = {
            "build_us": o * 1e6,
            "floor_us": f * 1e6,
            "ratio": o / f,
            "kept": kept[n],
            "floor_kept": floor_kept,
        }
        rows.append([f"{n:,}", kept[n], floor_kept, o * 1e6, f * 1e6, o / f, o / f <= 25])

    print_table(
        f"Context build, {BUDGET:,}-token budget (median of interleaved runs)",
        ["log messages", "kept", "trim kept", "build µs", "plain trim µs", "ratio", "≤ 25×"],
        rows,
    )
    small, large = results["10000"]["build_us"], results["100000"]["build_us"]
    flat = large <= small * 1.15
    print(f"\n100k vs 10k build time: {large / small:.2f}×  (same within noise: {'yes' if flat else 'NO'})")
    record(
        "context",
        {
            "budget_tokens": BUDGET,
            "runs": results,
            "large_vs_small": large / small,
            "targets": {"ratio_max": 25, "large_vs_small_max": 1.15},
            "met": all(r["ratio"] <= 25 for r in results.values()) and flat,
        },
    )


if __name__ == "__main__":
    main()
