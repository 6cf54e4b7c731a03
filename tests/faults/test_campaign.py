"""A reduced fault campaign of issue 8 (``bench/faults.py`` runs the full one and prints the table): every case of
every category survives, with nothing lost, no invalid stored log and no secret shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from .campaign import Row
from .fuzz import fuzz_readers, fuzz_surrogates
from .hostile import HOSTILE, Hostile
from .interrupts import interrupt_campaign
from .leaks import key_leaks
from .mistyped import mistyped_messages
from .processes import kill_campaign, two_writers
from .servers import server_generations
from .tool_faults import FAULTS, tool_faults


def assert_clean(row: Row, tried: int | None = None) -> None:
    assert (row.failed, row.lost, row.invalid, row.leaked) == (0, 0, 0, 0), f"{row.category}: {row.failures}"
    assert row.tried > 0 if tried is None else row.tried == tried


def test_fuzzed_readers(tmp_path: Path) -> None:
    rows = fuzz_readers(400, tmp_path, seed=0)
    assert sum(row.tried for row in rows) == 400
    for row in rows:
        assert_clean(row)


def test_lone_surrogates_in_every_string_of_every_reader(tmp_path: Path) -> None:
    assert_clean(fuzz_surrogates(300, tmp_path, seed=0), tried=300)


def test_the_llama_cpp_server_answers_on_this_cpu(tmp_path: Path) -> None:
    row = server_generations(1, 2, tmp_path)
    assert_clean(row, tried=2)


def test_tool_faults(tmp_path: Path) -> None:
    row = tool_faults(6, tmp_path, seed=0, slow_cases=1)
    assert_clean(row, tried=len(FAULTS) + 6)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_kill_9_at_random_points(backend: str, tmp_path: Path) -> None:
    assert_clean(kill_campaign(backend, 3, tmp_path, seed=0), tried=3)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_ctrl_c_at_random_points_of_a_sync_tool_loop(backend: str, tmp_path: Path) -> None:
    assert_clean(interrupt_campaign(backend, 3, tmp_path, seed=0), tried=3)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_processes_continuing_one_conversation(backend: str, tmp_path: Path) -> None:
    row = two_writers(backend, 1, tmp_path)
    assert_clean(row, tried=1)
    assert row.seen == {"ok": 2}  # the second writer waited for the first, then ran its turn


def test_error_bodies_carrying_the_key(tmp_path: Path) -> None:
    assert_clean(key_leaks(tmp_path, cli_providers=("openai",)))


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "memory"])
def test_mistyped_messages_are_refused_and_the_log_still_loads(backend: str, tmp_path: Path) -> None:
    row = mistyped_messages(backend, 40, tmp_path, seed=0)
    assert_clean(row, tried=40)
    assert set(row.seen) == {"conversation.add", "store.append", "import"}


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda hostile: f"{hostile.cause}-{hostile.run.__name__}")
def test_the_hostile_inputs_of_issue_31(hostile: Hostile, tmp_path: Path) -> None:
    row = hostile(hostile.ci, tmp_path, seed=0)
    assert_clean(row)
    assert row.tried >= hostile.ci  # (the key-leak row adds runs of the CLI to its cases)
