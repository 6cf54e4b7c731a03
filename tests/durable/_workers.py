"""What the durable tests share: the app the workers serve (``myapp.py``), `Workers` (real ``threadline worker``
subprocesses on a SQLite store in a test's directory), `PostgresWorkers` (the same on a PostgreSQL schema of its own)
and `wait_for`. The fixtures ``server``, ``workers`` and ``pg_workers`` are in ``conftest.py``."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

from tests.conftest import POSTGRES_DSN
from tests.providers.servers.openai import FakeOpenAI

__all__ = ["APP", "PostgresWorkers", "Workers", "stop_processes", "wait_for"]

APP = """
import os
import time
from pathlib import Path

import threadline

HERE = Path(__file__).parent


def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


def wait_to_go(name: str) -> None:
    with open(HERE / "runs", "a") as runs:
        runs.write(name + "\\n")
    (HERE / "started").write_text(str(os.getpid()))
    deadline = time.monotonic() + 60
    while not (HERE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)


@threadline.tool(idempotent=True)
def slow(x: int) -> int:
    \"\"\"Wait until the test lets it go.\"\"\"
    wait_to_go("slow")
    return x


@threadline.tool
def charge(amount: int) -> str:
    \"\"\"Charge a card (not idempotent).\"\"\"
    wait_to_go("charge")
    return f"charged {amount}"


chat = threadline.llm.model("openai:gpt-4o-mini").tools(add, slow, charge)
billing = threadline.llm.model("openai:gpt-4o-mini").tools(add)
"""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def stop_processes(processes: Sequence[subprocess.Popen[str]]) -> None:
    """Stop worker processes as SIGTERM does (they drain), all at once; kill one still running 30 s later."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


class Workers:
    """Worker subprocesses on one store, all started in ``tmp_path`` (where the app module is)."""

    def __init__(self, tmp_path: Path, server: FakeOpenAI) -> None:
        self.dir = tmp_path
        self.url = f"sqlite:///{tmp_path / 'store.db'}"
        (tmp_path / "myapp.py").write_text(textwrap.dedent(APP), encoding="utf-8")
        self.env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test-durable-0123456789",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")]),
        }
        self.running: list[subprocess.Popen[str]] = []

    def command(self, *apps: str, worker_id: str = "worker", extra: Sequence[str] = ()) -> list[str]:
        args = [sys.executable, "-m", "threadline", "worker", "--store", self.url, "--id", worker_id, *extra]
        for app in apps or ("myapp:chat",):
            args += ["--app", app]
        return args

    def start(self, *apps: str, worker_id: str = "worker", extra: Sequence[str] = ()) -> subprocess.Popen[str]:
        args = self.command(*apps, worker_id=worker_id, extra=extra)
        process = subprocess.Popen(
            args, cwd=self.dir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.running.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until the worker is ready (or dies: an empty line)
        assert line.startswith(f"worker {worker_id} ready: apps "), line
        return process

    def stop_all(self) -> None:
        stop_processes(self.running)

    def dbos_rows(self) -> list[str | bytes]:
        """Every input and output DBOS recorded (workflow inputs and outputs, step outputs)."""
        with sqlite3.connect(self.dir / "store.db.dbos.sqlite") as db:
            rows = db.execute("SELECT inputs FROM workflow_input").fetchall()
            rows += db.execute("SELECT output FROM workflow_output").fetchall()
            rows += db.execute("SELECT output FROM operation_outputs").fetchall()
        return [row[0] for row in rows if row[0] is not None]


class PostgresWorkers(Workers):
    """Workers on a PostgreSQL store in a schema of its own (dropped, with DBOS's, after the test)."""

    def __init__(self, tmp_path: Path, server: FakeOpenAI) -> None:
        super().__init__(tmp_path, server)
        self.schema = f"tl_durable_{uuid.uuid4().hex[:12]}"
        self.url = f"{POSTGRES_DSN}?schema={self.schema}"

    def drop(self) -> None:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as db:
            for schema in (self.schema, f"{self.schema}_dbos"):
                db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def dbos_tables(self) -> set[str]:
        with psycopg.connect(POSTGRES_DSN) as db:
            rows = db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (f"{self.schema}_dbos",)
            ).fetchall()
        return {row[0] for row in rows}
