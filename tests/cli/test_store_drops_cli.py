"""PostgreSQL going away while ``threadline prompt -c`` shows its final answer (issue 31, item 2.3).

Before: the whole answer was printed, the command exited 1 with the driver's error, the answer was not in the log
(the next ``-c`` went on without it), and psycopg-pool's own log lines ("discarding closed connection …") reached the
terminal. Now the append is tried once more on a fresh connection (appends are idempotent by message id), so a
restart costs nothing; when the server stays down, the answer is still shown, one line says it was not saved, and
the next ``-c`` continues from what was. Real subprocesses, a real PostgreSQL: the shared server's connections of
one command are ended with ``pg_terminate_backend`` (what a restart looks like to a client); a private instance is
stopped for the server that stays down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._dropping_server import DropDuring, DroppingOpenAI
from tests.providers.servers import Answer, ToolUse
from tests.store._backends import postgres_url
from tests.store._pg_drops import PrivateServer, application_name, terminate, with_query
from threadline import AssistantMessage, MessageList, ToolMessage, UserMessage, open_store

FINAL = "It is sunny in Oslo, 21 degrees, with a light breeze from the fjord."
TOOLS = '''
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}, 21 degrees"
'''
NOISE = ("psycopg", "discarding", "Traceback", "WARNING", "connection <", "pool")


@pytest.fixture
def server() -> Iterator[DroppingOpenAI]:
    with DroppingOpenAI() as fake:
        yield fake  # type: ignore[misc]


def prompt(url: str, server: DroppingOpenAI, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-drops-0123456789",
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "threadline", "prompt", "-m", "openai:gpt-4o-mini", "--store", url, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def only_log(url: str) -> MessageList:
    with open_store(url) as store:
        [info] = store.list_conversations(limit=10)
        return store.load(info.id)


def assert_quiet(stderr: str) -> None:
    for noise in NOISE:
        assert noise not in stderr, stderr


def tool_loop(ended: list[int], end_connections: object) -> tuple[Answer, DropDuring]:
    """A call of ``lookup``, then the final answer, during which the connections are ended."""

    def action() -> None:
        ended.append(end_connections())  # type: ignore[operator]

    call = Answer(tool_calls=(ToolUse("lookup", '{"city": "Oslo"}', id="call_oslo"),))
    return call, DropDuring(Answer(FINAL), after=4, action=action)


def test_a_restart_while_the_final_answer_streams_loses_nothing(server: DroppingOpenAI, tmp_path: Path) -> None:
    (tmp_path / "droptools.py").write_text(TOOLS, encoding="utf-8")
    name = application_name()
    with postgres_url() as schema_url:
        url = with_query(schema_url, f"application_name={name}")
        server.reply("Hello! Ask me about the weather.")
        assert prompt(url, server, tmp_path, "Hello").returncode == 0

        ended: list[int] = []
        server.add(*tool_loop(ended, lambda: terminate(name)))
        done = prompt(url, server, tmp_path, "-c", "-T", "droptools:lookup", "What is the weather in Oslo?")
        assert ended and ended[0] >= 1  # the command's connections were ended while it showed the answer
        assert done.returncode == 0, done.stderr
        assert done.stdout == FINAL + "\n"
        assert_quiet(done.stderr)
        log = only_log(url)
        log.validate()
        assert [type(m) for m in log[2:]] == [UserMessage, AssistantMessage, ToolMessage, AssistantMessage]
        assert log[-1].content == FINAL

        # The next -c sends the answer back.
        server.reply("You are welcome.")
        follow = prompt(url, server, tmp_path, "-c", "Thanks!")
        assert follow.returncode == 0, follow.stderr
        sent = server.requests[-1].json["messages"]
        assert any(message["role"] == "assistant" and message.get("content") == FINAL for message in sent)


def test_a_server_that_stays_down_says_the_answer_shown_was_not_saved(server: DroppingOpenAI, tmp_path: Path) -> None:
    (tmp_path / "droptools.py").write_text(TOOLS, encoding="utf-8")
    with PrivateServer() as private:
        url = with_query(private.dsn, "connect_timeout=3")
        server.reply("Hello! Ask me about the weather.")
        first = prompt(url, server, tmp_path, "Hello")
        assert first.returncode == 0, first.stderr

        def stop() -> int:
            private.stop()
            return 1

        ended: list[int] = []
        server.add(*tool_loop(ended, stop))
        done = prompt(url, server, tmp_path, "-c", "-T", "droptools:lookup", "What is the weather in Oslo?")
        assert ended == [1]
        assert done.returncode == 1, done.stderr
        assert done.stdout == FINAL + "\n"  # the answer was shown whole
        assert_quiet(done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, done.stderr
        assert "the answer shown above was not saved" in errors[0]
        assert done.stderr.rstrip().endswith(errors[0])

        private.start()
        log = only_log(url)
        log.validate()
        assert FINAL not in [message.content for message in log]
        server.reply("Sunny, as far as I know.")
        follow = prompt(url, server, tmp_path, "-c", "And now?")
        assert follow.returncode == 0, follow.stderr
        assert follow.stdout == "Sunny, as far as I know.\n"
        log = only_log(url)
        log.validate()
        assert log[-1].content == "Sunny, as far as I know."
        assert not log.pending_tool_calls()
