"""Crash safety (docs/failure-rules.md#crashes): a process running a tool loop is killed with SIGKILL at each
persistence point; the stored log then loads, validates, is repaired on the next run (dangling calls answered
``interrupted``), and the conversation continues."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from threadline import AssistantMessage, Conversation, MessageList, ToolMessage, UserMessage
from threadline.engine import INTERRUPTED_TOOL
from threadline.store import open_store
from threadline.testing import ScriptedModel

CHILD = Path(__file__).with_name("_crash_child.py")
USER = ("user", "Weather in Paris and Rome?")
CALLS = ("assistant-calls", ("call_a", "call_b"))
RESULT_A = ("tool", "call_a", "sunny in Paris", False)
RESULT_B = ("tool", "call_b", "rainy in Rome", False)

# What the store holds after the kill, per point.
EXPECTED = {
    "before_assistant": [USER],
    "after_assistant": [USER, CALLS],
    "between_results": [USER, CALLS, RESULT_A],
    "during_final": [USER, CALLS, RESULT_A, RESULT_B],
}


def shape(message: object) -> tuple[object, ...]:
    if isinstance(message, UserMessage):
        return ("user", message.content)
    if isinstance(message, AssistantMessage) and message.tool_calls:
        return ("assistant-calls", tuple(call.id for call in message.tool_calls))
    if isinstance(message, AssistantMessage):
        return ("assistant", message.content)
    if isinstance(message, ToolMessage):
        return ("tool", message.tool_call_id, message.content, message.is_error)
    raise AssertionError(message)


def run_child(url: str, conversation_id: str, point: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), url, conversation_id, point],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )


def test_an_uninterrupted_run_stores_the_whole_turn(store_url: str) -> None:
    done = run_child(store_url, "conv", "none")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Paris is sunny and Rome is rainy."
    with open_store(store_url) as store:
        log = store.load("conv")
    log.validate()
    assert [shape(m) for m in log] == [*EXPECTED["during_final"], ("assistant", "Paris is sunny and Rome is rainy.")]


@pytest.mark.parametrize("point", list(EXPECTED))
def test_kill_9_at_each_persistence_point_then_repair_and_continue(store_url: str, point: str) -> None:
    killed = run_child(store_url, "conv", point)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stdout, killed.stderr)

    with open_store(store_url) as store:
        log = store.load("conv")
        assert [shape(m) for m in log] == EXPECTED[point]
        log.validate()  # a log may end with unanswered calls; everything before them is well-formed
        assert store.get_conversation("conv").message_count == len(EXPECTED[point])
        dangling = {"after_assistant": ["call_a", "call_b"], "between_results": ["call_b"]}.get(point, [])
        assert [call.id for call in log.pending_tool_calls()] == dangling

        # The next run (a new process would do the same) repairs the log, and the conversation continues.
        conversation = Conversation.load("conv", store)
        model = ScriptedModel(["Back again."])
        answer = conversation.continuation.model(model).request("Are you there?").prompt()
        assert answer == "Back again."
        repaired = store.load("conv")
    repaired.validate()
    assert list(repaired) == list(conversation.messages)  # the store has everything the process saw
    interrupted = [("tool", call_id, INTERRUPTED_TOOL, True) for call_id in dangling]
    assert [shape(m) for m in repaired] == [
        *EXPECTED[point],
        *interrupted,
        ("user", "Are you there?"),
        ("assistant", "Back again."),
    ]
    # The model was sent a protocol-complete log: every call it sees has its result.
    sent = MessageList(model.requests[0].messages)
    sent.validate()
    assert not sent.pending_tool_calls()


def test_killed_runs_can_be_resumed_without_a_new_message(store_url: str) -> None:
    killed = run_child(store_url, "conv", "between_results")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_store(store_url) as store:
        conversation = Conversation.load("conv", store)
        model = ScriptedModel(["Rome could not be checked; Paris is sunny."])
        assert len(conversation.messages) == 3
        text = conversation.continuation.model(model).prompt()  # no new user message: just run again
        assert text == "Rome could not be checked; Paris is sunny."
        log = store.load("conv")
    log.validate()
    assert [shape(m) for m in log][-2:] == [
        ("tool", "call_b", INTERRUPTED_TOOL, True),
        ("assistant", "Rome could not be checked; Paris is sunny."),
    ]
