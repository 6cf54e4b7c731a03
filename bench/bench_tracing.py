"""Tracing benchmarks (docs/architecture.md#tracing): what a tool round of the engine costs with and without
`threadline.instrument`.

Each figure is the engine's cost per tool round: a `Conversation` turn of ten tool rounds (a sync tool) and a final
answer on a `ScriptedModel`, divided by ten — the workload of ``bench_generate.py``'s engine row. Measured:

1. **uninstrumented, before tracing** — the same turns on the code of the commit before the tracing hooks came in
   (the parent of the first commit that added ``src/threadline/tracing``, extracted with ``git archive`` into a
   temporary directory), in a subprocess: what a turn cost before the hooks existed. ``--baseline SRC`` (a ``src``
   directory) or ``--baseline REV`` (a git revision) measures against another;
2. **uninstrumented** — this checkout, nothing instrumented (target: within noise of 1, i.e. <= 1.05x of that).
   Between two processes the timing noise of this machine is of that size (the same code against itself gave
   1.07), so the two are also compared by the CPU instructions a tool round executes, counted with valgrind's
   callgrind (within about 0.5% from run to run whatever else the machine does: only the hand-offs to the sync
   tool's worker thread vary): the target is judged on that count
   when valgrind is there, on the timing otherwise;
3. **instrumented, no-op tracer** — ``threadline.instrument`` with OpenTelemetry's ``NoOpTracerProvider``: what
   threadline's own hooks cost (span objects that record nothing, contexts made current), without the SDK;
4. **instrumented** — ``threadline.instrument(tracer_provider=…)`` with the OpenTelemetry SDK's ``TracerProvider``
   and a ``SimpleSpanProcessor`` over an exporter that drops the spans, so each span is built, ended and handed
   to an exporter on the turn's own time (target <= 1.5x of uninstrumented);
5. **instrumented with content** — the same with ``include_content=True`` (every request's messages encoded as
   JSON on each model call's span; reported, no target).

The configurations are measured in turn, batch by batch, so all see the same machine. Each µs figure is the lowest
median of its batches (the least disturbed one: the others also measure whatever else the machine runs), and how
far the median batch lies above it is printed as the noise. Each ratio is paired: the median, over the batches, of
the two configurations' figures in the same batch, so a disturbance (or a lucky quiet spell) that falls in one
batch weighs on both sides of that batch's ratio alike; a ratio of two lowest batches would compare moments that may
lie a minute apart. The ratio of the lowest batches is printed beside it.

Run: python bench/bench_tracing.py [--quick] [--baseline SRC|REV]
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

ROUNDS = 10
TARGET_OFF = 1.05
TARGET_ON = 1.5


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name.
    """
    return f"22 C and sunny in {city}"


def measure(modes: list[str], turns: int, batches: int) -> dict[str, list[float]]:
    """Seconds per tool round, by configuration (``off``, ``on``, ``content``): the median of each batch.

    The configurations take turns in batches of ``turns`` turns, ``batches`` times over, so a machine that gets
    busier or quieter meanwhile weighs on all of them alike.
    """
    from threadline import AssistantMessage, Conversation, ConversationConfig, Tool, ToolCall, UserMessage
    from threadline.testing import ScriptedModel

    provider: Any = None
    if modes != ["off"]:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

        class Drop(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Drop()))

    def configure(mode: str) -> None:
        if mode == "off":
            if provider is not None:
                import threadline

                threadline.uninstrument()
            return
        import threadline

        if mode == "noop":
            from opentelemetry.trace import NoOpTracerProvider

            threadline.instrument(tracer_provider=NoOpTracerProvider())
        else:
            threadline.instrument(tracer_provider=provider, include_content=mode == "content")

    tool = Tool(get_weather)

    def script() -> list[Any]:
        calls = [
            AssistantMessage(tool_calls=[ToolCall(id=f"c{i}", name="get_weather", arguments={"city": f"city {i}"})])
            for i in range(ROUNDS)
        ]
        return [*calls, "Every city is sunny."]

    async def turn() -> float:
        model = ScriptedModel(script())
        conversation = Conversation(
            messages=[UserMessage(content="Weather everywhere?")], config=ConversationConfig(model=model, tools=[tool])
        )
        start = time.perf_counter()
        async for _ in conversation.run():
            pass
        elapsed = time.perf_counter() - start
        assert len(model.requests) == ROUNDS + 1
        return elapsed / ROUNDS

    async def main() -> dict[str, list[float]]:
        for mode in modes:  # warm up: caches, validators, worker threads
            configure(mode)
            for _ in range(10):
                await turn()
        out: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(batches):
            for mode in modes:
                configure(mode)
                out[mode].append(statistics.median([await turn() for _ in range(turns)]))
        configure("off")
        return out

    gc.collect()
    try:
        return asyncio.run(main())
    finally:
        if provider is not None:
            provider.shutdown()


def measure_elsewhere(src: str, turns: int) -> float:
    """Uninstrumented seconds per tool round (the median of ``turns`` turns), measured by the checkout at ``src``
    (first on the path) in a subprocess."""
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure-off", str(turns)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    value: float = json.loads(out.stdout.strip().splitlines()[-1])
    return value


def before_tracing() -> str:
    """The revision before the tracing hooks: the parent of the first commit that added ``src/threadline/tracing``."""
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "src/threadline/tracing"],
        cwd=BENCH.parent,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not added:
        raise RuntimeError("no commit adds src/threadline/tracing in this checkout's history")
    return f"{added[-1]}^"


def baseline_source(spec: str | None, into: str) -> tuple[str, str]:
    """The ``src`` directory to measure the baseline on, and how to name it: ``spec`` itself when it is one, else
    the revision ``spec`` (by default the one before tracing) extracted into ``into``."""
    if spec and (Path(spec) / "threadline" / "__init__.py").exists():
        return spec, spec
    revision = spec or before_tracing()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "src"], cwd=BENCH.parent, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", revision], cwd=BENCH.parent, check=True, capture_output=True, text=True
    ).stdout.strip()
    return str(Path(into) / "src"), f"{commit}" + (" (before tracing)" if spec is None else "")


def instructions_per_round(src: str, turns: int = 20) -> float | None:
    """CPU instructions per uninstrumented tool round with the checkout at ``src``, counted by callgrind: a run of
    ``turns + 1`` turns less a run of one (so imports and warm-up cancel out), divided by the rounds. None without
    valgrind."""
    import shutil

    if shutil.which("valgrind") is None:
        return None
    counts = []
    for n in (1, turns + 1):
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                sys.executable,
                str(Path(__file__).resolve()),
                "--measure-off",
                str(n),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": src},
            timeout=1200,
            check=True,
        )
        counts.append(int(done.stderr.split("Collected : ")[1].split()[0]))
    return (counts[1] - counts[0]) / (turns * ROUNDS)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-tracing-baseline-") as into:
        run(sys.argv[1:], into)


def run(args: list[str], into: str) -> None:
    if "--measure-off" in args:  # the subprocess side of measure_elsewhere
        print(json.dumps(measure(["off"], int(args[args.index("--measure-off") + 1]), 1)["off"][0]))
        return
    from _common import print_table, record

    quick = "--quick" in args
    baseline, baseline_name = baseline_source(
        args[args.index("--baseline") + 1] if "--baseline" in args else None, into
    )
    here = str(BENCH.parent / "src")
    turns, batches = (10, 4) if quick else (20, 12)

    # Uninstrumented, here and on the baseline: each in a fresh process (the baseline cannot be imported beside
    # this checkout), alternating, so both see the same machine.
    versus: dict[str, list[float]] = {"baseline": [], "here": []}
    for _ in range(batches // 2):
        versus["baseline"].append(measure_elsewhere(baseline, turns * 2))
        versus["here"].append(measure_elsewhere(here, turns * 2))
    # Instrumented against uninstrumented, in one process, batch by batch.
    runs = measure(["off", "noop", "on", "content"], turns, batches)

    # Each figure is its least disturbed batch (the lowest batch median): on a shared machine the others measure
    # the neighbours too.
    us = {mode: min(values) * 1e6 for mode, values in {**runs, **versus}.items() if values}

    def paired(mode: str, base: str) -> float:
        """The median of the per-batch ratios of ``mode`` to ``base`` (batch i of each measured side by side)."""
        series = {**runs, **versus}
        return statistics.median(a / b for a, b in zip(series[mode], series[base], strict=True))

    rows: list[list[Any]] = []
    off_ratio = paired("here", "baseline")
    instructions = {"baseline": instructions_per_round(baseline), "here": instructions_per_round(here)}
    counted = instructions["baseline"] is not None and instructions["here"] is not None
    instruction_ratio = instructions["here"] / instructions["baseline"] if counted else None  # type: ignore[operator]
    rows.append(["uninstrumented, baseline (own process)", us["baseline"], "-", "-", "-", "-"])
    best = us["here"] / us["baseline"]
    timing_met = off_ratio <= TARGET_OFF
    judged = "instructions" if counted else "timing"
    rows.append(
        [
            "uninstrumented, this checkout (own process)",
            us["here"],
            off_ratio,
            best,
            TARGET_OFF,
            "(next row)" if counted else timing_met,
        ]
    )
    if counted:
        rows.append(
            [
                "  same, CPU instructions per round (callgrind)",
                f"{instructions['here']:,.0f} vs {instructions['baseline']:,.0f}",
                instruction_ratio,
                "-",
                TARGET_OFF,
                instruction_ratio <= TARGET_OFF,  # type: ignore[operator]
            ]
        )
    on_ratio = paired("on", "off")
    noop_ratio = paired("noop", "off")
    content_ratio = paired("content", "off")
    rows.append(["uninstrumented", us["off"], "-", "-", "-", "-"])
    rows.append(["instrumented, no-op tracer (hooks only)", us["noop"], noop_ratio, us["noop"] / us["off"], "-", "-"])
    met_on = on_ratio <= TARGET_ON
    rows.append(["instrumented (SDK, spans dropped)", us["on"], on_ratio, us["on"] / us["off"], TARGET_ON, met_on])
    rows.append(["instrumented + content", us["content"], content_ratio, us["content"] / us["off"], "-", "-"])
    print_table(
        "Tracing: engine cost of a tool round (µs: best batch; ratio: median of per-batch ratios, and of best batches)",
        ["configuration", "µs/round", "ratio", "of best", "target", "met"],
        rows,
    )
    noise = statistics.median(runs["off"]) / min(runs["off"]) - 1
    print(f"noise: the median uninstrumented batch is {noise:.1%} above the best one; baseline = {baseline_name}")
    record(
        "bench_tracing",
        {
            "us_per_round": us,
            "this_checkout_vs_baseline": {
                "ratio": off_ratio,
                "instructions_per_round": instructions,
                "instruction_ratio": instruction_ratio,
                "judged_on": judged,
                "target": TARGET_OFF,
                "baseline": baseline_name,
            },
            "instrumented_vs_uninstrumented": {"ratio": on_ratio, "target": TARGET_ON},
            "noop_vs_uninstrumented": {"ratio": noop_ratio},
            "content_vs_uninstrumented": {"ratio": content_ratio},
            "batch_medians_us": {mode: [v * 1e6 for v in values] for mode, values in {**runs, **versus}.items()},
            "noise": noise,
        },
    )


if __name__ == "__main__":
    main()
