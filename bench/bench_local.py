"""Local model tokens/s through threadline vs raw ``llama_cpp`` on the same prompt and settings.

threadline: ``llm.model(local).request(QUESTION).prompt(...)`` — the whole path a user takes: builder, conversation,
context builder, turn engine, prompt rendering and tokenization, generation in a worker thread with every token
handed to the event loop, the logged answer.

Floor: ``Llama.create_completion`` called directly on the same loaded ``Llama`` object, with the exact prompt tokens
threadline sent, the same sampling settings, and no streaming.

Both generate exactly ``TOKENS`` tokens (the end-of-text tokens are banned with ``logit_bias``), greedy
(temperature 0). The runs alternate (threadline then raw, raw then threadline, …) and form ``RUNS`` adjacent pairs.
Target: threadline's tokens/s >= 0.97 x the floor's, judged on the median of the per-pair ratios: the two runs of a
pair see the same machine load, so this figure is the one that bursts of other work disturb least.

Wall-clock time on a shared 2-core machine swings with other load, so the table also gives the ratio of the best
runs and the process CPU time per run (all threads), which other processes disturb far less: they show what
threadline itself adds.

Run: ``python bench/bench_local.py`` from the repository root.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from _common import median, print_table, record
from threadline import llm
from threadline.models.base import ModelEvent, ModelRequest
from threadline.models.local import LocalModel

QUESTION = "Write a story about a lighthouse keeper."
TOKENS = 64
RUNS = 31
REPEAT_PENALTY = 1.1
TARGET = 0.97


class RecordingLocalModel(LocalModel):
    """The local model, keeping the requests threadline sent so the floor can be given the same prompt."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        return super().stream(request)


def main() -> None:
    model = RecordingLocalModel()
    llama = model.llama
    banned = dict.fromkeys(_end_tokens(llama), -1000000000.0)
    settings: dict[str, Any] = {
        "temperature": 0,
        "max_tokens": TOKENS,
        "local_logit_bias": banned,
        "local_repeat_penalty": REPEAT_PENALTY,
    }

    def through_threadline() -> str:
        return llm.model(model).request(QUESTION).prompt(**settings)

    through_threadline()  # warms the model and records the request threadline sends
    prompt_tokens = model.encode(model.render(model.requests[-1]))

    def raw() -> str:
        result = llama.create_completion(
            prompt_tokens,
            max_tokens=TOKENS,
            temperature=0.0,
            logit_bias=banned,
            repeat_penalty=REPEAT_PENALTY,
        )
        usage = result["usage"]
        assert usage["completion_tokens"] == TOKENS, usage
        return str(result["choices"][0]["text"])

    raw()

    threadline_times: list[float] = []
    raw_times: list[float] = []
    cpu: dict[str, list[float]] = {"threadline": [], "raw": []}
    texts: dict[str, set[str]] = {"threadline": set(), "raw": set()}
    for run in range(RUNS):
        # Alternate which goes first, so neither always follows the other's cache state or a burst of other load.
        order = [("threadline", through_threadline), ("raw", raw)]
        if run % 2:
            order.reverse()
        for name, fn in order:
            start = time.perf_counter()
            cpu_start = time.process_time()
            text = fn()
            elapsed = time.perf_counter() - start
            cpu[name].append(time.process_time() - cpu_start)
            texts[name].add(text)
            (threadline_times if name == "threadline" else raw_times).append(elapsed)

    # The first generation of a prompt evaluates it in one batch, later ones reuse the cached prefix; the numerics
    # differ slightly, so greedy text is compared between the timed runs, which all reuse the prefix.
    same_output = texts["threadline"] == texts["raw"] and len(texts["raw"]) == 1
    usage_tokens = _reported_output_tokens(model, settings)
    threadline_rate = TOKENS / median(threadline_times)
    raw_rate = TOKENS / median(raw_times)
    ratio = threadline_rate / raw_rate
    pair_ratios = [r / t for t, r in zip(threadline_times, raw_times, strict=True)]
    pair_ratio = statistics.median(pair_ratios)
    cpu_ratio = median(cpu["raw"]) / median(cpu["threadline"])
    best_ratio = min(raw_times) / min(threadline_times)

    print_table(
        f"Local model tokens/s: {model.name}, {len(prompt_tokens)} prompt tokens, {TOKENS} generated, "
        f"greedy, median of {RUNS} alternating runs",
        ["path", "tokens/s (median)", "s per run (median)", "min s", "max s", "CPU s per run (median)"],
        [
            [
                "raw llama_cpp create_completion",
                raw_rate,
                median(raw_times),
                min(raw_times),
                max(raw_times),
                median(cpu["raw"]),
            ],
            [
                "threadline llm...prompt()",
                threadline_rate,
                median(threadline_times),
                min(threadline_times),
                max(threadline_times),
                median(cpu["threadline"]),
            ],
        ],
    )
    print_table(
        "threadline vs raw",
        ["figure", "value", "target", "met"],
        [
            ["median of per-pair ratios (target)", pair_ratio, f">= {TARGET}", pair_ratio >= TARGET],
            ["ratio of median tokens/s", ratio, "(info)", ""],
            ["ratio of best runs", best_ratio, "(info)", ""],
            ["CPU time ratio (raw / threadline)", cpu_ratio, "(info)", ""],
            ["same text both ways", same_output, "yes", same_output],
            ["tokens reported by threadline", usage_tokens, TOKENS, usage_tokens == TOKENS],
        ],
    )
    record(
        "local",
        {
            "model": model.name,
            "prompt_tokens": len(prompt_tokens),
            "generated_tokens": TOKENS,
            "runs": RUNS,
            "raw_tokens_per_s": round(raw_rate, 2),
            "threadline_tokens_per_s": round(threadline_rate, 2),
            "ratio": round(ratio, 4),
            "median_pair_ratio": round(pair_ratio, 4),
            "cpu_ratio": round(cpu_ratio, 4),
            "best_ratio": round(best_ratio, 4),
            "raw_cpu_seconds": [round(t, 4) for t in cpu["raw"]],
            "threadline_cpu_seconds": [round(t, 4) for t in cpu["threadline"]],
            "target": TARGET,
            "met": pair_ratio >= TARGET,
            "same_output": same_output,
            "raw_seconds": [round(t, 4) for t in raw_times],
            "threadline_seconds": [round(t, 4) for t in threadline_times],
        },
    )
    if not same_output:
        print("warning: the two paths generated different text; the comparison is of unequal work", file=sys.stderr)


def _end_tokens(llama: Any) -> set[int]:
    """Every token that ends generation (``<|im_end|>``, ``<|endoftext|>``…), so both paths run to the limit."""
    import llama_cpp

    vocab = llama._model.vocab
    return {token for token in range(llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, token)}


def _reported_output_tokens(model: LocalModel, settings: dict[str, Any]) -> int:
    """The completion tokens threadline logs for one run with the benchmark's settings."""
    from threadline import AssistantMessage
    from threadline._sync import run_sync

    conversation = llm.model(model).request(QUESTION).prompt_conversation(**settings)

    async def drive() -> None:
        async for _ in conversation:
            pass

    run_sync(drive())
    last = conversation.messages[-1]
    assert isinstance(last, AssistantMessage) and last.usage is not None
    return last.usage.output_tokens


if __name__ == "__main__":
    main()
