"""Where the command's output goes is the screen's matter, never the log's: a stdout that cannot encode the answer
(``PYTHONIOENCODING=latin-1``, an ASCII console) shows ``?`` for what it cannot show, and a reader that goes away
(``… | head``) stops the showing, not the turn. Before, both were logged as a failure of the model call
(``UnicodeEncodeError``, ``BrokenPipeError``), sent back to the model as ``[LLM_ERROR …]`` on the next turn, and
``logs show`` on an ASCII stdout ended in a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI
from threadline import AssistantMessage, open_store

KEY = "sk-test-OUTPUT-0123456789abcdef"
ANSWER = "ok: héllo ✓ — done"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


def environment(server: FakeOpenAI, home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY, "THREADLINE_HOME": str(home)}
    return {**env, **extra}


def stored(home: Path) -> tuple[str, list[AssistantMessage]]:
    """The one stored conversation's id and its answers."""
    with open_store(f"sqlite:///{home / 'threadline.db'}") as store:
        [info] = store.list_conversations()
        return info.id, [m for m in store.load(info.id) if isinstance(m, AssistantMessage)]


def test_a_stdout_that_cannot_encode_the_answer_shows_what_it_can_and_the_log_keeps_it_whole(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.add(Answer(ANSWER))
    args = ["prompt", "-m", "openai:gpt-4o-mini", "héllo ✓"]
    done = subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        env=environment(server, tmp_path, PYTHONIOENCODING="latin-1"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("latin-1").strip() == "ok: héllo ? ? done"
    conversation_id, [answer] = stored(tmp_path)
    assert answer.error is None and answer.content == ANSWER

    shown = subprocess.run(
        [sys.executable, "-m", "threadline", "logs", "show", conversation_id],
        capture_output=True,
        env=environment(server, tmp_path, PYTHONIOENCODING="ascii"),
        timeout=120,
    )
    listed = subprocess.run(
        [sys.executable, "-m", "threadline", "logs", "list"],
        capture_output=True,
        env=environment(server, tmp_path, PYTHONIOENCODING="ascii"),
        timeout=120,
    )
    for run in (shown, listed):
        assert run.returncode == 0, run.stderr
        assert b"Traceback" not in run.stderr
    assert b"ok: h?llo" in shown.stdout


def test_a_reader_that_goes_away_stops_the_showing_not_the_turn(server: FakeOpenAI, tmp_path: Path) -> None:
    server.add(Answer("A long answer. " * 400))
    reading, writing = os.pipe()
    os.close(reading)  # the reader is gone before the first word: every write to stdout fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "threadline", "prompt", "-m", "openai:gpt-4o-mini", "Tell me."],
            stdout=writing,
            stderr=subprocess.PIPE,
            env=environment(server, tmp_path),
            timeout=120,
        )
    finally:
        os.close(writing)
    assert done.returncode == 0, done.stderr
    assert b"Error" not in done.stderr and b"Traceback" not in done.stderr and b"Exception" not in done.stderr
    _, [answer] = stored(tmp_path)
    assert answer.error is None and answer.content == "A long answer. " * 400
