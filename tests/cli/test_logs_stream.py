"""``threadline logs show ID --all`` streams the log (issue 31, item 3): it reads the log from the store a page at a
time and prints each page as it is read, so a long log starts showing at once, in bounded memory; and what it shows
is the whole log, exactly as the log shown in one piece.

Before: the whole log was loaded first (100,000 messages took 87 s to show, most of it rendering): a message
appended while the log was shown never appeared, since the log was read before anything was printed. Real
subprocesses on SQLite and PostgreSQL, their stdout a pipe.
"""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import os
import subprocess
import sys

from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from threadline.messages import Message
from threadline.store import Store

LATE = "appended while the log was being shown"


def turns(count: int, start: int = 0) -> list[Message]:
    """``count`` turns of: question, two calls, their results, an answer (5 messages each)."""
    messages: list[Message] = []
    for turn in range(start, start + count):
        calls = [ToolCall(id=f"call_{turn}_{n}", name="lookup", arguments={"turn": turn, "n": n}) for n in range(2)]
        messages += [
            UserMessage(content=f"question {turn:05d}: where is the nearest station?"),
            AssistantMessage(content=f"Looking it up ({turn}).", tool_calls=calls),
            *(ToolMessage(tool_call_id=c.id, tool_name="lookup", content=f"result {turn:05d}/{c.id}") for c in calls),
            AssistantMessage(content=f"answer {turn:05d}: two streets away, past the bakery.\nSecond line."),
        ]
    return messages


def test_the_log_is_read_while_it_is_shown(store_url: str, store: Store) -> None:
    """The command's stdout is a pipe nobody reads for a while, so the command waits on it after its first lines;
    a message appended meanwhile is shown at the end: the log was still being read."""
    info = store.create_conversation("long")
    store.append(info.id, turns(1_200))  # 6,000 messages, about 4 MB of boxes: far more than a pipe holds
    env = {**os.environ, "THREADLINE_STORE": store_url, "COLUMNS": "120", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline", "logs", "show", info.id, "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        bufsize=0,  # unbuffered: the first line read leaves the rest to communicate(), which reads the pipe itself
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith(b"long  ")  # the header came out while the command still runs
    assert process.poll() is None
    store.append(info.id, [UserMessage(content=LATE)])
    rest, err = process.communicate(timeout=600)
    assert process.returncode == 0, err.decode()
    out = (first + rest).decode()
    assert "question 00000" in out and "answer 01199" in out
    assert out.count("← result ") == 2_400
    assert LATE in out.rsplit("answer 01199", 1)[1]  # before: not shown, the log having been read in one piece


def test_the_streamed_log_is_the_log_shown_in_one_piece(store_url: str, store: Store) -> None:
    """Several pages of the store, with tool groups across their edges, a system message and a result whose call is
    not in the log: --all shows exactly what --last N shows (the log read in one piece), line for line."""
    info = store.create_conversation("pages")
    messages = turns(99)  # 495 messages: the next group crosses the edge of a page of 500
    messages += [SystemMessage(content="You are terse.")]
    messages += turns(2, start=99)
    messages.insert(498, ToolMessage(tool_call_id="call_gone", tool_name="lookup", content="a result without its call"))
    messages += turns(150, start=101)
    store.append(info.id, messages)
    total = len(messages)
    streamed = run_cli("logs", "show", info.id, "--all", "--store", store_url, env={"COLUMNS": "100"})
    whole = run_cli("logs", "show", info.id, "--last", str(total), "--store", store_url, env={"COLUMNS": "100"})
    assert streamed.returncode == 0 and whole.returncode == 0, streamed.stderr + whole.stderr
    assert "earlier message(s) not shown" not in whole.stdout
    assert streamed.stdout == whole.stdout
    assert streamed.stdout.count("╭─ user") == 251
    assert "a result without its call" in streamed.stdout
