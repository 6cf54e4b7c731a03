"""Several processes (and threads) appending to one conversation (docs/failure-rules.md#several-writers): nothing lost
or duplicated, each writer's own order kept, atomic batches stay together, and every reader sees one order (each
snapshot a reader takes is a prefix of the final log)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from threadline import UserMessage
from threadline.store import Store, open_store

CHILD = Path(__file__).with_name("_concurrency_child.py")
ROOT = Path(__file__).parents[2]
WRITERS = ["w0", "w1", "w2", "w3"]
COUNT = 60


def check_final_order(ids: list[str], writers: list[str], count: int) -> None:
    expected = {f"{w}-{i:04d}" for w in writers for i in range(count)} | {
        f"{w}-batch-{k}" for w in writers for k in range(3)
    }
    assert len(ids) == len(expected), "a message was lost or duplicated"
    assert set(ids) == expected
    for writer in writers:
        own = [i for i in ids if i.startswith(f"{writer}-")]
        assert own == [f"{writer}-{i:04d}" for i in range(count)] + [f"{writer}-batch-{k}" for k in range(3)]
        start = ids.index(f"{writer}-batch-0")
        assert ids[start : start + 3] == [f"{writer}-batch-{k}" for k in range(3)], "an atomic append was split"


def test_processes_append_to_one_conversation(store_url: str, tmp_path: Path) -> None:
    with open_store(store_url) as store:
        store.create_conversation("shared", id="shared")
    start, stop = tmp_path / "start", tmp_path / "stop"
    common = {"cwd": ROOT, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    writers = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "writer", store_url, "shared", w, str(COUNT), str(start)], **common
        )  # type: ignore[call-overload]
        for w in WRITERS
    ]
    readers = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "reader", store_url, "shared", f"r{n}", str(stop), str(start)], **common
        )  # type: ignore[call-overload]
        for n in range(2)
    ]
    start.touch()
    for process in writers:
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
    stop.touch()
    snapshots: list[list[str]] = []
    for process in readers:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        assert lines, "a reader saw nothing"
        snapshots.extend(lines)

    with open_store(store_url) as store:
        final = [m.id for m in store.load("shared")]
        assert store.get_conversation("shared").message_count == len(final)
    check_final_order(final, WRITERS, COUNT)
    for snapshot in snapshots:
        assert final[: len(snapshot)] == snapshot, "a reader saw an order the final log does not have"
    assert final in snapshots  # each reader's last look, after the writers finished, is the whole log


def test_threads_share_one_store(store: Store) -> None:
    store.create_conversation(id="threads")
    errors: list[BaseException] = []

    def write(name: str) -> None:
        try:
            for index in range(COUNT):
                store.append("threads", [UserMessage(content=name, id=f"{name}-{index:04d}")])
            store.append("threads", [UserMessage(content=name, id=f"{name}-batch-{k}") for k in range(3)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(name,)) for name in WRITERS]
    for thread in threads:
        thread.start()
    seen = [[m.id for m in store.load("threads")] for _ in range(5)]  # reading while they write
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    final = [m.id for m in store.load("threads")]
    check_final_order(final, WRITERS, COUNT)
    for snapshot in seen:
        assert final[: len(snapshot)] == snapshot
