"""One turn at a time per conversation across processes (issue 8, item 3), on SQLite and PostgreSQL: writers that
continue one conversation at once (five rounds of two processes) take turns through the store's lease, so no turn's
tool group is ever split by another writer's message; a second ``threadline prompt`` says it is waiting, or fails
with one clear line when its ``--wait`` runs out; and a writer killed with SIGKILL mid-turn does not keep the next
one out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.store._backends import run_cli
from threadline import AssistantMessage, Conversation, ConversationBusy, ConversationConfig, ToolMessage, UserMessage
from threadline.messages import MessageList
from threadline.store import open_store

CHILD = Path(__file__).with_name("_turn_child.py")
ROOT = Path(__file__).parents[2]
ROUNDS = 5
TURNS = 4


def turn_shapes(log: MessageList) -> list[Any]:
    return [
        ("user", m.content)
        if isinstance(m, UserMessage)
        else ("calls" if isinstance(m, AssistantMessage) and m.tool_calls else type(m).__name__)
        for m in log
    ]


def assert_whole_turns(log: MessageList) -> list[str]:
    """The log validates and is a sequence of whole turns (question, call, result, answer); returns the questions."""
    log.validate()
    shapes = turn_shapes(log)
    assert len(shapes) % 4 == 0, shapes
    questions = []
    for start in range(0, len(shapes), 4):
        kind, question = shapes[start]
        assert kind == "user", shapes
        assert shapes[start + 1 : start + 4] == ["calls", "ToolMessage", "AssistantMessage"], shapes
        questions.append(question)
    for message in log:
        if isinstance(message, AssistantMessage) and not message.tool_calls:
            assert message.content == "answer to rested 0.02"
    return questions


def test_two_processes_continuing_one_conversation_take_turns(store_url: str, tmp_path: Path) -> None:
    with open_store(store_url) as store:
        store.create_conversation("shared", id="shared")
    expected: list[str] = []
    for round_ in range(ROUNDS):
        start = tmp_path / f"start-{round_}"
        names = [f"r{round_}w{k}" for k in range(2)]
        children = [
            subprocess.Popen(
                [sys.executable, str(CHILD), "turns", store_url, "shared", name, str(TURNS), str(start)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in names
        ]
        start.touch()
        for child in children:
            _, err = child.communicate(timeout=300)
            assert child.returncode == 0, err
        expected += [f"{name}-{i}" for name in names for i in range(TURNS)]
        with open_store(store_url) as store:
            questions = assert_whole_turns(store.load("shared"))  # after every run: valid, nothing interleaved
        assert sorted(questions) == sorted(expected), "a message was lost or duplicated"
        for name in names:  # each writer's own turns keep their order
            assert [q for q in questions if q.startswith(f"{name}-")] == [f"{name}-{i}" for i in range(TURNS)]


def start_holder(store_url: str) -> subprocess.Popen[str]:
    """A process in the middle of a turn (its tool call stored, its tool never returning)."""
    holder = subprocess.Popen(
        [sys.executable, str(CHILD), "hold", store_url, "shared"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "in tool"
    return holder


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


def test_a_writer_killed_mid_turn_does_not_keep_the_next_one_out(store_url: str) -> None:
    with open_store(store_url) as store:
        store.create_conversation("shared", id="shared")
    holder = start_holder(store_url)
    try:
        with open_store(store_url) as store:
            waiting = Conversation.load("shared", store, ConversationConfig(busy_timeout=10))
            with pytest.raises(ConversationBusy, match="held by another writer"):
                waiting.acquire(max_wait=0)  # the holder is mid-turn: no one else gets in
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
            # The dead holder's lease went with it (SQLite: the kernel drops its lock; PostgreSQL: the server
            # drops its session's lock). busy_timeout=10 s is a bound only a stuck lease would reach.
            from threadline.testing import ScriptedModel

            model = ScriptedModel(["I am back."])
            assert waiting.continuation.model(model).request("still there?").prompt() == "I am back."
            log = store.load("shared")
            log.validate()
            # What the killed writer stored was read, its dangling call answered "interrupted", then the new turn.
            kinds = [type(m).__name__ for m in log]
            assert kinds == ["UserMessage", "AssistantMessage", "ToolMessage", "UserMessage", "AssistantMessage"]
            repaired = log[2]
            assert isinstance(repaired, ToolMessage) and repaired.is_error and "interrupted" in repaired.content
            assert waiting.messages == log
    finally:
        stop(holder)


TOOLS = """
import os, time
from pathlib import Path


def pause() -> str:
    '''Wait until the test lets go.'''
    Path(os.environ["TL_STARTED"]).touch()
    deadline = time.monotonic() + 120
    while not Path(os.environ["TL_RELEASE"]).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return "rested"
"""


@pytest.fixture
def fake_openai() -> Any:
    from tests.providers.servers import Answer, FakeOpenAI, ToolUse

    server = FakeOpenAI().start()
    turn = (Answer(tool_calls=(ToolUse(name="pause"),)), Answer(text="All rested."))
    server.add(*turn, *turn)
    try:
        yield server
    finally:
        server.stop()


def test_a_second_prompt_waits_visibly_for_the_running_turn(store_url: str, tmp_path: Path, fake_openai: Any) -> None:
    (tmp_path / "slowtools.py").write_text(TOOLS, encoding="utf-8")
    started, release = tmp_path / "started", tmp_path / "release"
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "sk-test",
        "TL_STARTED": str(started),
        "TL_RELEASE": str(release),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    command = [sys.executable, "-m", "threadline", "prompt", "-m", "openai:gpt-test", "-T", "slowtools:pause"]
    common: dict[str, Any] = {"cwd": tmp_path, "env": env, "text": True}
    first = subprocess.Popen(
        [*command, "--store", store_url, "First question"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **common,
    )
    second: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while not started.exists():  # the first turn is inside its tool: it holds the conversation
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.01)
        # A prompt with a short --wait gives up with one clear line, and adds nothing.
        impatient = run_cli(
            "prompt", "-m", "openai:gpt-test", "--store", store_url, "-c", "--wait", "0.5", "Hi", env=env
        )
        assert impatient.returncode != 0
        lines = [line for line in impatient.stderr.splitlines() if line.strip()]
        assert "Traceback" not in impatient.stderr
        assert lines[-1].startswith("Error: conversation ") and "held by another writer" in lines[-1]
        assert any("waiting for another turn" in line for line in lines)

        second = subprocess.Popen(
            [*command, "--store", store_url, "-c", "Second question"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **common,
        )
        assert second.stderr is not None
        seen = ""
        while "waiting for another turn" not in seen:  # it says it waits, and waits
            line = second.stderr.readline()
            assert line, f"the second prompt ended without waiting: {seen}"
            seen += line
        release.touch()
        out1, err1 = first.communicate(timeout=120)
        out2, err2 = second.communicate(timeout=120)
        assert first.returncode == 0, err1
        assert second.returncode == 0, seen + err2
        assert "All rested." in out1 and "All rested." in out2
    finally:
        release.touch()
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()

    with open_store(store_url) as store:
        [info] = store.list_conversations()
        log = store.load(info.id)
    log.validate()
    assert turn_shapes(log) == [
        ("user", "First question"),
        "calls",
        "ToolMessage",
        "AssistantMessage",
        ("user", "Second question"),
        "calls",
        "ToolMessage",
        "AssistantMessage",
    ]
