"""Ctrl-C during a streamed answer, as a user presses it: ``prompt``, ``chat`` and ``demo`` run as subprocesses, on
the embedded model and on an HTTP model (the fake OpenAI server, its stream stalled mid-answer), and get SIGINT once
part of the answer is on the screen.

Each must log the partial answer as a failure of type ``interrupted`` before it closes the store, then end with
one line and exit code 130: no traceback, no asyncio noise. The stored log validates and continues.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI, Stall, ToolUse
from tests.real_models import never_stop_option
from tests.store._backends import backend_url
from threadline import AssistantMessage, MessageList, ToolMessage, UserMessage, open_store

STORY = "Once upon a time there was a dragon who loved long stories."
SHOWN = "Once upon a time"  # what the stalled stream shows before it stops: four 4-character pieces
NOISE = ("Traceback", "Task was destroyed", "aclose", "Exception ignored", "never retrieved", "RuntimeError")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


def start(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "threadline", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=full_env,
    )


def interrupt_when_shown(
    process: subprocess.Popen[bytes], shown: str = "", *, at_least: int = 0, timeout: float = 300
) -> tuple[str, str]:
    """Read stdout until ``shown`` (and ``at_least`` bytes) are on it, send SIGINT, and return the whole stdout
    and stderr."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while shown.encode() not in seen or len(seen) < at_least:
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            rest, err = process.communicate()
            raise AssertionError(f"never showed {shown!r}: {(seen + rest).decode()!r} {err.decode()!r}")
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            seen += os.read(process.stdout.fileno(), 4096)
    process.send_signal(signal.SIGINT)
    try:
        rest, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        rest, err = process.communicate()
        raise AssertionError(f"still running two minutes after Ctrl-C: {err.decode()!r}") from None
    return (seen + rest).decode(), err.decode()


def assert_interrupted(returncode: int, stderr: str, conversation_id: str | None) -> None:
    """Exit 130, one ``Error:`` line (the last one, naming the conversation) and none of the usual noise."""
    assert returncode == 130, stderr
    for noise in NOISE:
        assert noise not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    assert errors == [lines[-1]], stderr
    assert errors[0].startswith("Error: interrupted")
    if conversation_id is not None:
        assert f"conversation {conversation_id} keeps everything up to here" in errors[0]


def only_conversation(store_url: str | None = None) -> tuple[str, MessageList]:
    with open_store(store_url) as store:
        [info] = store.list_conversations(limit=10)
        return info.id, store.load(info.id)


def assert_partial_answer_logged(log: MessageList, shown: str) -> AssistantMessage:
    log.validate()
    failure = log[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.error is not None and failure.error.type == "interrupted"
    assert failure.content == shown
    return failure


# -- the embedded model ------------------------------------------------------------------------------------------------
def test_prompt_on_the_local_model_logs_the_partial_answer(tmp_path: Path) -> None:
    command = ["prompt", "-m", "local", "Write a long story about a dragon.", "--temperature", "0"]
    process = start([*command, *never_stop_option()], tmp_path)
    stdout, stderr = interrupt_when_shown(process, at_least=40)  # a few words of the story are on the screen
    conversation_id, log = only_conversation()
    assert_interrupted(process.returncode, stderr, conversation_id)
    assert [type(message) for message in log] == [UserMessage, AssistantMessage]
    failure = assert_partial_answer_logged(log, stdout.removesuffix("\n"))
    assert failure.content and len(failure.content) < 4000  # stopped early, not run to its end
    assert stdout.endswith("\n")  # the answer line is closed before the error line


def test_chat_on_the_local_model_logs_the_partial_answer(tmp_path: Path) -> None:
    process = start(["chat", "-m", "local", "--temperature", "0", *never_stop_option()], tmp_path)
    assert process.stdin is not None
    process.stdin.write(b"Write a long story about a dragon.\n")
    process.stdin.flush()  # kept open: the chat waits for more lines after this turn
    stdout, stderr = interrupt_when_shown(process, at_least=40)
    conversation_id, log = only_conversation()
    assert_interrupted(process.returncode, stderr, conversation_id)
    assert_partial_answer_logged(log, stdout.removesuffix("\n"))


# -- an HTTP model -----------------------------------------------------------------------------------------------------
def openai_env(server: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-interrupt-0123456789"}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_prompt_on_an_http_model_logs_the_partial_answer_and_continues(
    backend: str, server: FakeOpenAI, tmp_path: Path
) -> None:
    with backend_url(backend, tmp_path) as url:
        server.add(Stall(Answer(STORY), after=5))  # the role chunk, then "Once", " upo", "n a ", "time"
        process = start(
            ["prompt", "-m", "openai:gpt-4o-mini", "--store", url, "Tell me a story."], tmp_path, openai_env(server)
        )
        stdout, stderr = interrupt_when_shown(process, SHOWN)
        conversation_id, log = only_conversation(url)
        assert_interrupted(process.returncode, stderr, conversation_id)
        assert stdout == SHOWN + "\n"
        assert_partial_answer_logged(log, SHOWN)

        # The next turn sends the partial answer back, marked as interrupted, and goes on.
        server.reply("…and they lived happily ever after.")
        follow = subprocess.run(
            [
                sys.executable,
                "-m",
                "threadline",
                "prompt",
                "-m",
                "openai:gpt-4o-mini",
                "--store",
                url,
                "--cid",
                conversation_id,
                "Go on.",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, **openai_env(server), "PYTHONUNBUFFERED": "1"},
            timeout=120,
        )
        assert follow.returncode == 0, follow.stderr
        sent = server.requests[-1].json["messages"]
        partial = next(message for message in sent if message["role"] == "assistant")
        assert partial["content"].startswith(SHOWN) and "interrupted" in partial["content"]
        _, log = only_conversation(url)
        log.validate()
        assert log[-1].content == "…and they lived happily ever after."


def test_chat_on_an_http_model_logs_the_partial_answer(server: FakeOpenAI, tmp_path: Path) -> None:
    server.add(Stall(Answer(STORY), after=5))
    process = start(["chat", "-m", "openai:gpt-4o-mini"], tmp_path, openai_env(server))
    assert process.stdin is not None
    process.stdin.write(b"Tell me a story.\n")
    process.stdin.flush()
    stdout, stderr = interrupt_when_shown(process, SHOWN)
    conversation_id, log = only_conversation()
    assert_interrupted(process.returncode, stderr, conversation_id)
    assert stdout == SHOWN + "\n"
    assert_partial_answer_logged(log, SHOWN)


def test_demo_on_an_http_model_logs_the_partial_answer(server: FakeOpenAI, tmp_path: Path) -> None:
    server.add(Stall(Answer(STORY), after=5))
    process = start(
        ["demo", "-m", "openai:gpt-4o-mini", "--out", str(tmp_path / "demo.json")], tmp_path, openai_env(server)
    )
    _, stderr = interrupt_when_shown(process, "assistant › " + SHOWN)
    conversation_id, log = only_conversation()
    assert_interrupted(process.returncode, stderr, conversation_id)
    assert [message.role for message in log] == ["system", "user", "assistant"]
    assert_partial_answer_logged(log, SHOWN)


SLOW_TOOL = """
import time


def slow_lookup(query: str) -> str:
    \"\"\"Look something up (it takes an hour).\"\"\"
    print("TOOL STARTED", flush=True)
    time.sleep(3600)
    return "found"
"""


def test_ctrl_c_while_a_sync_tool_runs_exits_at_once_and_the_call_is_answered_next_run(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    (tmp_path / "slowtools.py").write_text(SLOW_TOOL, encoding="utf-8")
    server.add(Answer(tool_calls=(ToolUse("slow_lookup", '{"query": "dragons"}', id="call_slow"),)))
    args = ["prompt", "-m", "openai:gpt-4o-mini", "-T", "slowtools:slow_lookup", "Look up dragons."]
    process = start(args, tmp_path, openai_env(server))
    # The tool's thread sleeps for an hour: the process must still end right after Ctrl-C.
    _, stderr = interrupt_when_shown(process, "TOOL STARTED")
    conversation_id, log = only_conversation()
    assert_interrupted(process.returncode, stderr, conversation_id)
    log.validate()
    assert [message.role for message in log] == ["user", "assistant"]
    assert log.pending_tool_calls()

    server.reply("No dragons found.")
    follow = subprocess.run(
        [sys.executable, "-m", "threadline", "prompt", "-m", "openai:gpt-4o-mini", "--cid", conversation_id, "Well?"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **openai_env(server)},
        timeout=120,
    )
    assert follow.returncode == 0, follow.stderr
    _, log = only_conversation()
    log.validate()
    repaired = log[2]
    assert isinstance(repaired, ToolMessage) and repaired.tool_call_id == "call_slow" and repaired.is_error
    assert repaired.content.startswith("interrupted")
    assert log[-1].content == "No dragons found."
