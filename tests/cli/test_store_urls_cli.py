"""``--store`` URLs as the command line reads them: ``sqlite:///file.db`` (the form ``--help`` shows) is ``file.db``
in the working directory, as SQLAlchemy reads three slashes, and a command that only reads (``logs list``, ``logs
show``, ``serve``) refuses a store file that does not exist, naming it, instead of creating an empty one and saying
"No conversations"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from threadline import Conversation, MessageList, assistant, user
from threadline.store import open_store

from ._run import run_cli


def threadline_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m threadline *args`` run in ``directory``, with no store named in the environment."""
    environment = {**os.environ, "COLUMNS": "200", "PYTHONIOENCODING": "utf-8"}
    environment.pop("THREADLINE_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment,
        cwd=directory,
        timeout=120,
    )


def test_three_slashes_name_a_file_in_the_working_directory(tmp_path: Path) -> None:
    with open_store(tmp_path / "here.db") as store:
        Conversation(messages=MessageList([user("Plan a trip"), assistant("Where to?")]), store=store)
    listed = threadline_in(tmp_path, "logs", "list", "--store", "sqlite:///here.db")
    assert listed.returncode == 0, listed.stderr
    assert "Plan a trip" in listed.stdout


@pytest.mark.parametrize(
    "command",
    [("logs", "list"), ("logs", "show", "someid"), ("serve", "--port", "0")],
    ids=["logs list", "logs show", "serve"],
)
def test_a_reading_command_refuses_a_store_that_does_not_exist(tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = tmp_path / "mispelt" / "store.db"
    shown = run_cli(*command, store_url=f"sqlite:///{missing}")
    assert shown.returncode == 2, shown.stdout + shown.stderr
    assert f"no store at {missing}: the file does not exist" in shown.stderr
    assert "No conversations" not in shown.stdout
    assert list(tmp_path.iterdir()) == []  # no directory, no empty database


def test_a_reading_command_names_the_absolute_file_an_old_url_meant(tmp_path: Path) -> None:
    """A URL written before three slashes meant a relative path: the refusal says how to name the file."""
    with open_store(tmp_path / "old.db") as store:
        store.create_conversation("kept")
    old_url = f"sqlite://{tmp_path / 'old.db'}"  # three slashes before an absolute path
    shown = threadline_in(tmp_path, "logs", "list", "--store", old_url)
    assert shown.returncode == 2
    assert f"sqlite:///{tmp_path / 'old.db'}" in shown.stderr  # the four-slash spelling of that file
    assert sorted(path.name for path in tmp_path.iterdir()) == ["old.db"]
