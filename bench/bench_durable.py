"""Durable turns (``threadline.durable``, the ``durable`` extra): what running a turn on DBOS workers costs, against
the same turns run in process, in the same run, on one SQLite store.

1. **Turns per second** with 1 and 2 worker processes (they share this machine's cores; the ratio and the cost per
   turn are what compare): N single-call turns (each a new conversation, one model call answered at once by a fake
   OpenAI-format server on 127.0.0.1), submitted with `Client.submit` and waited for with ``result()``. Floor: the
   same N turns in this process, one after another (``llm.model(...).store(store).request(text).prompt()``).
   Reported, no target yet (issue 34 names one for a 3-round tool turn against in-process plus a bare DBOS
   workflow: still to do).
2. **Bytes DBOS stores per step** (target < 1 KB: ids and short strings only, the log being the checkpoint): every
   workflow input and output and every step output in DBOS's system database, divided by the steps recorded.

Run: python bench/bench_durable.py [--quick]
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from tests.providers.servers.openai import FakeOpenAI  # noqa: E402

from _common import print_table, record  # noqa: E402

QUICK = "--quick" in sys.argv
TURNS = 20 if QUICK else 60

APP = """
import threadline

chat = threadline.llm.model("openai:gpt-4o-mini")
"""


def env_for(server: FakeOpenAI) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-bench-durable-0123456789",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }


def in_process(server: FakeOpenAI, directory: Path, turns: int) -> float:
    """Seconds per turn, the turns run here one after another on a SQLite store."""
    from threadline import llm
    from threadline.models.openai import OpenAIModel
    from threadline.store import open_store

    server.reply(*(f"answer {n}" for n in range(turns + 2)))
    model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-bench-durable-0123456789")
    with open_store(str(directory / "inproc.db")) as store:
        builder = llm.model(model).store(store)
        builder.request("warm up").prompt()
        start = time.perf_counter()
        for n in range(turns):
            builder.request(f"question {n}").prompt()
        return (time.perf_counter() - start) / turns


def on_workers(server: FakeOpenAI, directory: Path, workers: int, turns: int) -> tuple[float, float]:
    """Seconds per turn with ``workers`` worker processes, and DBOS's bytes per recorded step."""
    from threadline.durable import Client

    directory.mkdir()
    (directory / "benchapp.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    url = f"sqlite:///{directory / 'store.db'}"
    server.reply(*(f"answer {n}" for n in range(turns + 2)))
    running: list[subprocess.Popen[str]] = []
    try:
        for n in range(workers):
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "threadline",
                    "worker",
                    "--store",
                    url,
                    "--app",
                    "benchapp:chat",
                    "--id",
                    f"b{n}",
                ],
                cwd=directory,
                env=env_for(server),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            running.append(process)
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith(f"worker b{n} ready"), line
        with Client(url) as client:
            client.submit("warm up", app="chat").result(timeout=120)
            start = time.perf_counter()
            handles = [client.submit(f"question {n}", app="chat") for n in range(turns)]
            for handle in handles:
                outcome = handle.result(timeout=300)
                assert outcome.stop_reason == "end", outcome
            per_turn = (time.perf_counter() - start) / turns
    finally:
        for process in running:
            process.terminate()
        for process in running:
            process.wait(60)
            if process.stdout is not None:
                process.stdout.close()
    with sqlite3.connect(directory / "store.db.dbos.sqlite") as db:
        sizes = [len(row[0]) for row in db.execute("SELECT inputs FROM workflow_input") if row[0] is not None]
        sizes += [len(row[0]) for row in db.execute("SELECT output FROM workflow_output") if row[0] is not None]
        steps = db.execute("SELECT output FROM operation_outputs").fetchall()
        sizes += [len(row[0]) for row in steps if row[0] is not None]
    return per_turn, sum(sizes) / max(1, len(steps))


def main() -> None:
    rows: list[list[Any]] = []
    results: dict[str, Any] = {"turns": TURNS}
    with FakeOpenAI() as server, tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        floor = in_process(server, directory, TURNS)  # type: ignore[arg-type]
        rows.append(["in process, one after another (floor)", 1 / floor, floor * 1e3, "", ""])
        results["in_process"] = {"turns_per_s": 1 / floor, "ms_per_turn": floor * 1e3}
        worst_bytes = 0.0
        for workers in (1, 2):
            per_turn, per_step = on_workers(server, directory / f"w{workers}", workers, TURNS)  # type: ignore[arg-type]
            worst_bytes = max(worst_bytes, per_step)
            rows.append([f"{workers} worker process(es)", 1 / per_turn, per_turn * 1e3, per_turn / floor, per_step])
            results[f"workers_{workers}"] = {
                "turns_per_s": 1 / per_turn,
                "ms_per_turn": per_turn * 1e3,
                "ratio_to_in_process": per_turn / floor,
                "dbos_bytes_per_step": per_step,
            }
    print_table(
        f"Durable turns: {TURNS} single-call turns on a fake OpenAI server, SQLite store",
        ["how", "turns/s", "ms/turn", "x in process", "DBOS bytes/step"],
        rows,
    )
    met = worst_bytes < 1024
    print(f"\nDBOS bytes per step: at most {worst_bytes:.0f} (target < 1,024): {'yes' if met else 'NO'}")
    results["dbos_bytes_per_step_max"] = worst_bytes
    results["dbos_bytes_target_met"] = met
    record("bench_durable", results)


if __name__ == "__main__":
    main()
