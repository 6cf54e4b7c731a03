"""Ctrl-C at random moments of a tool loop run through the sync API (``prompt()`` and a ``for`` over ``stream()``),
on SQLite and on PostgreSQL.

A child (``_interrupt_child.py``) runs turns and prints the id of every message its conversation holds; it gets
SIGINT after a random delay. It must stop within `STOP_SECONDS` (a hang is a failure), say ``interrupted``, exit 0
and write nothing on stderr (no traceback, no "Task was destroyed but it is pending!"). The parent then loads the
stored log: every printed id must be there (``lost``), the log must validate and hold each id once (``invalid``), and
a continuation turn must repair it and answer, leaving a valid, complete log.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from threadline import AssistantMessage, Conversation, ProtocolError
from threadline.store import open_store
from threadline.testing import ScriptedModel

from .campaign import Row
from .processes import HERE, ROOT, child_env, ending, store_url

STOP_SECONDS = 30.0


def interrupt_once(url: str, conversation_id: str, rng: random.Random, row: Row) -> None:
    with open_store(url) as store:
        store.create_conversation("interrupted", id=conversation_id)
    child = subprocess.Popen(
        [sys.executable, str(HERE / "_interrupt_child.py"), url, conversation_id, str(rng.randrange(10**9))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    assert child.stdout is not None and child.stderr is not None
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line.decode(errors="replace").strip())
            if line == b"ready\n":
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    delay = rng.uniform(0.0, 1.0)
    note = f"{url.split('?')[0].split(':')[0]} Ctrl-C after {delay:.2f} s"
    if not ready.wait(60):
        child.kill()
        child.wait(30)
        row.case(crashed=f"child did not start: {child.stderr.read().decode(errors='replace')[-300:]}", note=note)
        return
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    try:
        child.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(30)
        row.saw("hung")
    reader.join(10)
    stderr = child.stderr.read().decode(errors="replace")
    child.stdout.close()
    child.stderr.close()
    if child.returncode != 0 or "interrupted" not in lines or stderr:
        what = "hung after Ctrl-C" if child.returncode == -signal.SIGKILL else f"exit {child.returncode}"
        row.case(crashed=f"{what}, stdout ends {lines[-2:]}, stderr {stderr[-300:]!r}", note=note)
        return
    printed = {line for line in lines if line not in ("ready", "interrupted")}
    problem, lost, invalid = None, 0, 0
    try:
        with open_store(url) as store:
            log = store.load(conversation_id)
            last = log[-1] if log else None
            failed = isinstance(last, AssistantMessage) and last.error is not None
            row.saw(f"{ending(log)}{' (failure logged)' if failed else ''}")
            ids = [message.id for message in log]
            lost = len(printed - set(ids))
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


def interrupt_campaign(backend: str, interrupts: int, directory: Path, seed: int = 0) -> Row:
    """``interrupts`` children sent Ctrl-C at random moments, each on its own conversation of one store."""
    row = Row(f"Ctrl-C at random points, sync API ({backend})")
    rng = random.Random(seed)
    with store_url(backend, directory) as url:
        for number in range(interrupts):
            interrupt_once(url, f"interrupted-{number}", rng, row)
    return row
