"""``threadline demo`` as a new user runs it: a subprocess on the embedded model, no key, no network. The saved file
must be a valid log holding the forced tool call, its real result, and the follow-up answered after the reload.

The first request of each question forces a call; whether the model calls again in its second round, and what it
answers, is its own choice and differs between CPUs (`tests.real_models`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from threadline import AssistantMessage, MessageList, SystemMessage, ToolMessage, UserMessage

from ..real_models import assert_tool_turn


def run_demo(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "THREADLINE_HOME": str(home), "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "threadline", "demo", *args], capture_output=True, text=True, env=env, timeout=900
    )


def fahrenheit(celsius: float) -> str:
    return f"{celsius:g} °C = {celsius * 9 / 5 + 32:g} °F"


def test_demo_runs_saves_reloads_and_continues(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run_demo(home=home)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    saved = home / "demo.json"
    assert saved.is_file()
    # The closing line says where the file is.
    last_line = done.stdout.strip().splitlines()[-1]
    assert str(saved) in last_line.replace("\n", "")

    log = MessageList.from_json(saved.read_text(encoding="utf-8"))
    log.validate()
    messages = list(log)
    assert isinstance(messages[0], SystemMessage)
    users = [m for m in messages if isinstance(m, UserMessage)]
    assert [u.content for u in users] == ["What is 37 degrees Celsius in Fahrenheit?", "And 100 degrees Celsius?"]

    # Each question got a forced tool call, the tool's real result, maybe a second round, then an answer.
    results: list[str] = []
    for number, question in enumerate(users):
        start = messages.index(question) + 1
        end = messages.index(users[number + 1]) if number + 1 < len(users) else len(messages)
        turn = messages[start:end]
        assert_tool_turn(
            turn,
            tools={"Units.celsius_to_fahrenheit": fahrenheit},
            max_rounds=2,
            stop_reason=None,  # not kept in the file
            forced="required",
            max_tokens=256,  # the demo's limit
        )
        results.extend(m.content for m in turn if isinstance(m, ToolMessage))
    assert messages[-1] is not users[-1] and isinstance(messages[-1], AssistantMessage)  # the follow-up's answer

    # What the user saw: the user messages, each tool call grouped with its result, the answers.
    assert "What is 37 degrees Celsius in Fahrenheit?" in done.stdout
    assert done.stdout.count("→ Units.celsius_to_fahrenheit(") == len(results)
    for content in results:
        assert f"← {content}" in done.stdout
    assert "MessageList.from_json" in done.stdout
    assert "Loading local:smollm2" in done.stderr

    # The store holds both conversations, persisted as they happened: the first one, and the reloaded one that
    # continued it, which is the same log as the file.
    from threadline import open_store

    with open_store(f"sqlite:///{home / 'threadline.db'}") as store:
        infos = store.list_conversations()
        assert len(infos) == 2
        continued = store.load(infos[0].id)
        assert continued == log
        first = store.load(infos[1].id)
        assert list(first) == messages[: len(first)] and len(first) == messages.index(users[1])
        assert infos[0].title == "What is 37 degrees Celsius in Fahrenheit?"
    assert f"threadline logs show {infos[0].id}" in last_line


def test_demo_refuses_an_unwritable_out_path_before_running(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = run_demo("--out", str(blocker / "demo.json"), home=tmp_path / "home")
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "Loading" not in done.stderr  # it failed before running the model
