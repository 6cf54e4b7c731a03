"""The fault campaign of issue 8 as figures: every way a fault, a second writer or a hostile input could corrupt the
log, leak a secret or lose an answer, tried many times; the target is every row at zero failures.

Rows (the cases live in ``tests/faults/``, shared with the CI test ``tests/faults/test_campaign.py``):

- fuzzed readers: hypothesis-generated JSON, text and bytes through `MessageList.from_dict`, `from_json` and the
  ``threadline import`` path (into a real SQLite store);
- lone surrogates in every string (keys and tags included) of every reader's input, every format (issue 17);
- tool faults: tools that raise, exit, hang, swallow their cancellation, return nan/surrogates/megabytes/objects JSON
  cannot encode, unknown names and invalid arguments, in turns on a SQLite store;
- kill -9 at random points of a tool loop, on SQLite and PostgreSQL; then load, validate, continue;
- Ctrl-C at random points of a tool loop run through the sync API (``prompt()``, a ``for`` over ``stream()``), on
  SQLite and PostgreSQL: the process stops at once with ``KeyboardInterrupt`` and nothing on stderr; then load,
  validate, continue;
- two processes continuing one conversation at once, on SQLite and PostgreSQL;
- messages made in Python with a field of the wrong type (``UserMessage(content=123)``, a bool for a token count,
  an object in tool-call arguments, ...), written through `Conversation.add`, ``store.append`` and an import on
  SQLite, PostgreSQL and the memory store: refused with the field named, nothing written, the log still loading;
- error bodies carrying the key (fake OpenAI and Anthropic servers), in the library and the CLI;
- llama-cpp-python's real server started through ``python -m threadline.llama_cpp_server`` (as the tests and the
  README start it) and asked for answers: on a CPU with AMX the plain server crashes on its first (issue 17).
- issue 31's hostile round, one row per fault it found (``tests/faults/hostile.py``): endless generator tools, a
  tool writing to its own conversation, PostgreSQL restarted mid-answer, Markdown nested past markdown-it's limit,
  the key echoed in base64 or in an answer, odd Retry-After values, arguments nested 3,000 deep, downloads named in
  any script, exceptions whose message cannot be read, non-JSON values in a log, non-finite CLI options, trickling
  streams, silent MCP servers, slow-loris clients and ``logs show --all`` on long logs.

Usage: python bench/faults.py [--cases 5000] [--surrogate-cases 2000] [--tool-turns 60] [--kills 24] [--races 10]
                             [--interrupts 40] [--mistyped 300] [--server-starts 3] [--hostile-scale 1.0] [--seed 0]
PostgreSQL: ``THREADLINE_TEST_POSTGRES`` (default postgresql://postgres@127.0.0.1:5432/test).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from tests.faults.campaign import HEADERS, Row  # noqa: E402
from tests.faults.fuzz import fuzz_readers, fuzz_surrogates  # noqa: E402
from tests.faults.hostile import HOSTILE  # noqa: E402
from tests.faults.interrupts import interrupt_campaign  # noqa: E402
from tests.faults.leaks import key_leaks  # noqa: E402
from tests.faults.mistyped import mistyped_messages  # noqa: E402
from tests.faults.processes import kill_campaign, two_writers  # noqa: E402
from tests.faults.servers import server_generations  # noqa: E402
from tests.faults.tool_faults import tool_faults  # noqa: E402

from _common import print_table, record  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000, help="fuzzed reader inputs (all paths together)")
    parser.add_argument("--surrogate-cases", type=int, default=2000, help="inputs with lone surrogates anywhere")
    parser.add_argument("--server-starts", type=int, default=3, help="starts of llama-cpp-python's server")
    parser.add_argument("--tool-turns", type=int, default=60, help="turns of random tool-fault combinations")
    parser.add_argument("--kills", type=int, default=24, help="SIGKILLs per backend")
    parser.add_argument("--races", type=int, default=10, help="two-writer races per backend")
    parser.add_argument("--interrupts", type=int, default=40, help="Ctrl-Cs per backend")
    parser.add_argument("--mistyped", type=int, default=300, help="mistyped messages written per backend")
    parser.add_argument(
        "--hostile-scale", type=float, default=1.0, help="issue 31's rows: this times each row's full number of cases"
    )
    parser.add_argument("--backends", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--seed", type=int, default=None, help="fix the random choices (default: new ones each run)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    backends = [b for b in args.backends.split(",") if b]
    rows: list[Row] = []
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)

        def timed(name: str, run: object) -> None:
            start = time.perf_counter()
            result = run()  # type: ignore[operator]
            seconds[name] = time.perf_counter() - start
            rows.extend(result if isinstance(result, list) else [result])
            print(f"  {name}: {seconds[name]:.1f} s", file=sys.stderr, flush=True)

        timed("fuzzed readers", lambda: fuzz_readers(args.cases, directory, seed=args.seed))
        timed("surrogates anywhere", lambda: fuzz_surrogates(args.surrogate_cases, directory, seed=args.seed))
        timed("tool faults", lambda: tool_faults(args.tool_turns, directory, seed=seed, slow_cases=2))
        for backend in backends:
            timed(f"kill -9 ({backend})", lambda b=backend: kill_campaign(b, args.kills, directory, seed=seed))
        for backend in backends:
            timed(
                f"Ctrl-C ({backend})",
                lambda b=backend: interrupt_campaign(b, args.interrupts, directory, seed=seed),
            )
        for backend in backends:
            timed(f"two writers ({backend})", lambda b=backend: two_writers(b, args.races, directory))
        for backend in [*backends, "memory"]:
            timed(
                f"mistyped messages ({backend})",
                lambda b=backend: mistyped_messages(b, args.mistyped, directory, seed=seed),
            )
        timed("key leaks", lambda: key_leaks(directory))
        for hostile in HOSTILE:
            cases = max(1, round(hostile.full * args.hostile_scale))
            timed(
                f"issue 31, {hostile.cause}: {hostile.run.__name__}",
                lambda h=hostile, n=cases: h(n, directory, seed=seed),
            )
        timed("llama.cpp server", lambda: server_generations(args.server_starts, 3, directory))

    failed = [row for row in rows if row.failed or row.lost or row.invalid or row.leaked]
    print_table(
        f"Fault campaign (seed {seed}): every row's target is survived = cases tried, and zeros",
        HEADERS,
        [row.cells() for row in rows],
    )
    for row in rows:
        if row.seen:
            print(f"  {row.category}: " + ", ".join(f"{k} {v}" for k, v in sorted(row.seen.items())))
    for row in failed:
        for note in row.failures:
            print(f"  FAILED {row.category}: {note}")
    record(
        "faults",
        {
            "parameters": {**vars(args), "seed": seed},
            "seconds": seconds,
            "rows": {row.category: row.figures() for row in rows},
            "target": "every row: survived == tried, 0 lost messages, 0 invalid stored logs, 0 leaked secrets",
            "met": not failed,
        },
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
