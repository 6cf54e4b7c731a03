"""Process faults: ``kill -9`` at random moments of a tool loop, and two processes continuing one conversation at
once; on SQLite and on PostgreSQL (``THREADLINE_TEST_POSTGRES``, each campaign in its own schema).

Kill: a child (``_kill_child.py``) runs tool-loop turns and prints the id of every message the conversation holds;
it is killed with SIGKILL after a random delay. The parent then loads the stored log: every printed id must be there
(``lost``), the log must validate and hold each id once (``invalid``), and a continuation turn must repair the log
(dangling calls answered ``interrupted``) and answer, leaving a valid, complete log.

Race: two children (``_race_child.py``) load the conversation, wait for a start file, and each run one tool turn.
Afterwards the log must validate and be whole turns (question, call, result, answer) never interleaved
(``invalid``), and the question of every writer that reported success must be there (``lost``); a writer refused
with `ConversationBusy` must have written nothing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from threadline import AssistantMessage, Conversation, MessageList, ProtocolError, ToolMessage, UserMessage
from threadline.store import open_store
from threadline.testing import ScriptedModel

from .campaign import Row

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
POSTGRES_DSN = os.environ.get("THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@contextmanager
def store_url(backend: str, directory: Path) -> Iterator[str]:
    """A store URL no one else uses: a new SQLite file, or a new PostgreSQL schema dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / f'{uuid.uuid4().hex[:8]}.db'}"
        return
    import psycopg

    schema = f"tl_faults_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    separator = "&" if "?" in POSTGRES_DSN else "?"
    try:
        yield f"{POSTGRES_DSN}{separator}schema={schema}"
    finally:
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def child_env() -> dict[str, str]:
    """The environment of a campaign's child process: this checkout's ``src`` and root importable, output unbuffered."""
    paths = [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "PYTHONUNBUFFERED": "1"}


def ending(log: MessageList) -> str:
    """Where a kill landed, seen from the stored log."""
    if not log:
        return "empty"
    last = log[-1]
    if log.pending_tool_calls():
        return "calls unanswered" if isinstance(last, AssistantMessage) else "between results"
    if isinstance(last, UserMessage):
        return "after question"
    if isinstance(last, ToolMessage):
        return "after all results"
    return "after answer"


def kill_once(url: str, conversation_id: str, rng: random.Random, row: Row) -> None:
    with open_store(url) as store:
        store.create_conversation("killed", id=conversation_id)
    child = subprocess.Popen(
        [sys.executable, str(HERE / "_kill_child.py"), url, conversation_id, str(rng.randrange(10**9))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    assert child.stdout is not None
    lines: list[bytes] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line)
            if line == b"ready\n":
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    delay = rng.uniform(0.0, 1.0)
    started = ready.wait(60)
    if started:
        time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    reader.join(10)
    assert child.stderr is not None
    stderr = child.stderr.read().decode(errors="replace")
    child.stdout.close()
    child.stderr.close()
    note = f"{url.split('?')[0].split(':')[0]} kill after {delay:.2f} s"
    if not started or child.returncode != -signal.SIGKILL:
        row.case(crashed=f"child did not run: {child.returncode} {stderr[-300:]}", note=note)
        return
    # A line without its newline was cut by the kill mid-write; everything before it was printed whole.
    printed = [line.decode().strip() for line in lines if line.endswith(b"\n") and line != b"ready\n"]
    problem, lost, invalid = None, 0, 0
    try:
        with open_store(url) as store:
            log = store.load(conversation_id)
            row.saw(ending(log))
            ids = [message.id for message in log]
            lost = len(set(printed) - set(ids))
            try:
                log.validate()
                invalid = int(len(set(ids)) != len(ids))
            except ProtocolError:
                invalid = 1
            conversation = Conversation.load(conversation_id, store)
            text = conversation.continuation.model(ScriptedModel(["back again"])).request("still there?").prompt()
            repaired = store.load(conversation_id)
            repaired.validate()
            if text != "back again" or repaired.pending_tool_calls() or list(repaired) != list(conversation.messages):
                problem = "the continuation did not leave a whole log"
            if [message.id for message in repaired][: len(ids)] != ids:
                problem = "the continuation changed what was stored"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"[:200]
    row.case(crashed=problem, lost=lost, invalid=invalid, note=note)


def kill_campaign(backend: str, kills: int, directory: Path, seed: int = 0) -> Row:
    """``kills`` children killed with SIGKILL at random moments, each on its own conversation of one store."""
    row = Row(f"kill -9 at random points ({backend})")
    rng = random.Random(seed)
    with store_url(backend, directory) as url:
        for number in range(kills):
            kill_once(url, f"killed-{number}", rng, row)
    return row


def turn_shapes(log: MessageList) -> list[str]:
    return [
        "user"
        if isinstance(m, UserMessage)
        else ("calls" if isinstance(m, AssistantMessage) and m.tool_calls else type(m).__name__)
        for m in log
    ]


def race_once(url: str, conversation_id: str, directory: Path, writers: int, row: Row) -> None:
    with open_store(url) as store:
        store.create_conversation("raced", id=conversation_id)
    # A start file of this race alone: one left by an earlier race (the same id on another backend) would let the
    # writers begin before both have said they loaded the conversation.
    start = directory / f"start-{conversation_id}-{uuid.uuid4().hex[:8]}"
    names = [f"{conversation_id}-w{k}" for k in range(writers)]
    children = [
        subprocess.Popen(
            [sys.executable, str(HERE / "_race_child.py"), url, conversation_id, name, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            cwd=ROOT,
        )
        for name in names
    ]
    for child in children:  # every writer has loaded the conversation before any starts
        assert child.stdout is not None
        child.stdout.readline()
    start.touch()
    outcomes = {}
    problem = None
    for name, child in zip(names, children, strict=True):
        # Through the same text stream the first line was read from: communicate() reads the pipe underneath it
        # and would miss anything that stream had already buffered.
        assert child.stdout is not None and child.stderr is not None
        with child.stdout, child.stderr:
            out, err = child.stdout.read(), child.stderr.read()
        child.wait(timeout=300)
        outcomes[name] = out.strip()
        if child.returncode != 0 or out.strip() not in ("ok", "busy"):
            problem = f"{name} exited {child.returncode}: {out.strip()[-100:]} {err[-300:]}"
    lost = invalid = 0
    with open_store(url) as store:
        log = store.load(conversation_id)
    try:
        log.validate()
        shapes = turn_shapes(log)
        groups = [shapes[i : i + 4] for i in range(0, len(shapes), 4)]
        if any(group != ["user", "calls", "ToolMessage", "AssistantMessage"] for group in groups):
            invalid = 1  # a turn's tool group was split by the other writer
    except ProtocolError:
        invalid = 1
    questions = [m.content for m in log if isinstance(m, UserMessage)]
    lost = sum(1 for name, outcome in outcomes.items() if outcome == "ok" and name not in questions)
    if any(outcome == "busy" and name in questions for name, outcome in outcomes.items()):
        problem = problem or "a writer refused as busy wrote its question"
    for outcome in outcomes.values():
        row.saw(outcome)
    row.case(crashed=problem, lost=lost, invalid=invalid, note=f"race {conversation_id}")


def two_writers(backend: str, races: int, directory: Path, writers: int = 2) -> Row:
    """``races`` races of ``writers`` processes continuing one conversation (a new one each race)."""
    row = Row(f"two processes, one conversation ({backend})")
    with store_url(backend, directory) as url:
        for number in range(races):
            race_once(url, f"race-{number}", directory, writers, row)
    return row
