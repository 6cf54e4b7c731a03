"""Message ids (ULIDs): sortable, strictly increasing in one process, and distinct between a process and the
children it forks (issue 8, item 5)."""

from __future__ import annotations

import os
import time

import pytest

from threadline._ids import new_id

fork_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")


def test_ids_increase_strictly_within_one_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen = time.time_ns()
    monkeypatch.setattr(time, "time_ns", lambda: frozen)
    ids = [new_id() for _ in range(1_000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def ids_in_child(count: int) -> list[str]:
    """Fork; the child mints ``count`` ids and sends them back."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.write(write, " ".join(new_id() for _ in range(count)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return data.decode().split()


@fork_only
def test_a_forked_child_mints_other_ids_than_its_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    # The clock is held in one millisecond, the case where both processes would go on from the same state.
    frozen = time.time_ns()
    monkeypatch.setattr(time, "time_ns", lambda: frozen)
    before = new_id()
    children = [ids_in_child(50) for _ in range(5)]
    mine = [new_id() for _ in range(50)]
    everyone = [*mine, *(i for child in children for i in child)]
    assert len(set(everyone)) == len(everyone) == 300
    # Each process's ids still sort after every id made before the fork.
    for ids in (mine, *children):
        assert ids == sorted(ids) and ids[0] > before
