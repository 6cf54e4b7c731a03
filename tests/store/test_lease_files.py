"""SQLite's writer leases are lock files in ``<db>-leases/``: they exist only while a lease is held, so the directory
does not grow with every conversation ever run, and removing them never lets two writers in (real processes race for
one conversation while every release removes its file). A file left by a killed holder is reused, then removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from threadline import Conversation, ConversationConfig
from threadline.store import open_store
from threadline.testing import ScriptedModel

ROOT = Path(__file__).parents[2]

RACER = """
import os, sys, time
from pathlib import Path
from threadline.store import open_store

url, inside, start, rounds = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
store = open_store(url)
while not start.exists():
    time.sleep(0.001)
overlaps = taken = 0
while taken < rounds:
    lease = store.try_lease("shared")
    if lease is None:
        continue
    try:
        # Only one holder at a time may be here: a second one would find the marker made by the first.
        fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        overlaps += 1
    else:
        os.close(fd)
        os.unlink(inside)
    taken += 1
    lease.release()
print(overlaps, taken, flush=True)
"""

TURNS = """
import sys
from threadline import Conversation, ConversationConfig
from threadline.store import open_store
from threadline.testing import ScriptedModel

with open_store(sys.argv[1]) as store:
    for name in sys.argv[2:]:
        config = ConversationConfig(model=ScriptedModel(["hello"]))
        Conversation(store=store, config=config, id=name).continuation.request("hi").prompt()
"""

HOLDER = """
import sys, time
from threadline.store import open_store
store = open_store(sys.argv[1])
lease = store.try_lease(sys.argv[2])
print("held" if lease is not None else "refused", flush=True)
time.sleep(600)
"""


def lease_files(database: Path) -> list[str]:
    directory = database.with_name(f"{database.name}-leases")
    return sorted(os.listdir(directory)) if directory.exists() else []


def python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_conversations_run_in_many_processes_leave_no_lease_files(tmp_path: Path) -> None:
    database = tmp_path / "store.db"
    url = f"sqlite:///{database}"
    open_store(url).close()
    # Four processes, each running a turn on ten conversations of its own and on five shared ones.
    children = [
        python(TURNS, url, *[f"own-{k}-{i}" for i in range(10)], *[f"shared-{i}-{k}" for i in range(5)])
        for k in range(4)
    ]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    with open_store(url) as store:
        assert len(store.list_conversations(limit=100)) == 60
        assert all(len(store.load(info.id)) == 2 for info in store.list_conversations(limit=100))
        # In this process too, and after deleting: still nothing.
        for index in range(10):
            config = ConversationConfig(model=ScriptedModel(["hello"]))
            Conversation(store=store, config=config, id=f"here-{index}").continuation.request("hi").prompt()
        store.delete_conversation("here-0")
    assert lease_files(database) == []
    assert not database.with_name(f"{database.name}-leases").exists()  # the directory goes once empty


def test_writers_racing_for_one_conversation_never_hold_it_together(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url).close()
    inside, start = tmp_path / "inside", tmp_path / "start"
    racers = [python(RACER, url, str(inside), str(start), "400") for _ in range(4)]
    start.touch()
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=300)
        assert racer.returncode == 0, err
        results.append(tuple(int(n) for n in out.split()))
    assert results == [(0, 400)] * 4  # every lease taken, never two holders at once
    assert lease_files(tmp_path / "store.db") == []


def test_a_lease_file_left_by_a_killed_holder_is_reused_then_removed(tmp_path: Path) -> None:
    database = tmp_path / "store.db"
    url = f"sqlite:///{database}"
    with open_store(url) as store:
        store.create_conversation("crashed", id="crashed")
        store.create_conversation("crashed too", id="crashed-2")
    for conversation_id in ("crashed", "crashed-2"):
        holder = python(HOLDER, url, conversation_id)
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=30)
    assert len(lease_files(database)) == 2  # a killed holder cannot remove its file

    with open_store(url) as store:
        lease = store.try_lease("crashed")  # the kernel dropped the dead holder's lock: its file is taken over
        assert lease is not None
        assert store.try_lease("crashed") is None
        lease.release()
        assert len(lease_files(database)) == 1
        store.delete_conversation("crashed-2")  # deleting a conversation removes what its killed writer left
    assert lease_files(database) == []
