"""``threadline worker --status``: the turns the queue holds, running (on which worker) and queued behind them."""

from __future__ import annotations

import subprocess
import sys

from tests.durable._workers import Workers, wait_for
from tests.providers.servers._base import Answer, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.durable import Client


def status(workers: Workers) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "threadline", "worker", "--status", "--store", workers.url],
        cwd=workers.dir,
        env=workers.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_status_lists_the_running_turn_with_its_worker_and_the_one_queued_behind_it(
    workers: Workers, server: FakeOpenAI
) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 1}'),)), Answer(text="First."), Answer(text="Second."))
    workers.start(worker_id="w7")
    with Client(workers.url) as client:
        first = client.submit("Run slow", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        second = client.submit("And then?", app="chat", conversation_id=first.conversation_id)
        shown = status(workers).splitlines()
        assert shown[0] == "queue threadline_turns.openai: no rate limit, no limit per worker", shown
        lines = shown[1:]
        assert len(lines) == 2, lines
        running, queued = sorted(lines, key=lambda line: not line.startswith("running"))
        assert running.startswith("running") and "on w7" in running and f"turn {first.id}" in running
        assert queued.startswith("queued") and "waiting for a worker" in queued and f"turn {second.id}" in queued
        assert f"conversation {first.conversation_id}" in queued  # one turn at a time per conversation
        (workers.dir / "go").write_text("")
        assert first.result(timeout=60).text == "First."
        assert second.result(timeout=60).text == "Second."
    assert status(workers).splitlines()[1:] == ["No turn is queued or running."]


def test_a_worker_without_an_app_is_a_usage_error(workers: Workers) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "threadline", "worker", "--store", workers.url],
        cwd=workers.dir,
        env=workers.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "needs at least one --app" in done.stderr
