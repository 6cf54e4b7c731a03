"""Calls that wait, across real processes killed with SIGKILL (docs/failure-rules.md#crashes): between the wait
and the decision, between the decision and the resumed call, inside the approved call; two processes deciding the
same call at once; a decision for another conversation's call. The log in the store always validates and no call is
lost; a call runs once unless the process died inside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from threadline import ApprovalMessage, AwaitingDecision, Conversation, ToolMessage
from threadline.store import Store

from ._approval_child import config, start

CHILD = Path(__file__).with_name("_approval_child.py")
ROOT = Path(__file__).parents[2]


def spawn(mode: str, url: str, conversation_id: str, ledger: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen(
        [sys.executable, str(CHILD), mode, url, conversation_id, str(ledger)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def until(child: subprocess.Popen[str], line: str) -> None:
    """Wait for the child to print ``line`` (it has reached its point); fail with its stderr if it exits first."""
    assert child.stdout is not None
    got = child.stdout.readline().strip()
    if got != line:
        child.kill()
        _, err = child.communicate(timeout=30)
        raise AssertionError(f"child printed {got!r}, not {line!r}: {err}")


def kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.txt"


@pytest.fixture
def conversation_id() -> str:
    return f"pay-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def waiting(store: Store, store_url: str, conversation_id: str, ledger: Path) -> Iterator[str]:
    """A conversation whose call ``c1`` waits for approval, started by a process that was then killed."""
    child = spawn("wait", store_url, conversation_id, ledger)
    until(child, "ready")
    kill(child)
    yield conversation_id


def payments(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


def decisions(store: Store, conversation_id: str) -> list[ApprovalMessage]:
    return [m for m in store.load(conversation_id) if type(m) is ApprovalMessage and m.state in ("approved", "denied")]


def results(store: Store, conversation_id: str, call_id: str = "c1") -> list[ToolMessage]:
    return [m for m in store.load(conversation_id) if isinstance(m, ToolMessage) and m.tool_call_id == call_id]


def resumed(store: Store, conversation_id: str, ledger: Path) -> Conversation:
    conversation = Conversation.load(conversation_id, store, config(ledger, ["Paid."]))
    assert conversation.resume().stop_reason == "end"
    store.load(conversation_id).validate()
    return conversation


def test_killed_between_the_wait_and_the_decision(store: Store, waiting: str, ledger: Path) -> None:
    store.load(waiting).validate()
    conversation = Conversation.load(waiting, store, config(ledger, ["Paid."]))
    assert [call.call.id for call in conversation.awaiting] == ["c1"]
    conversation.approve("c1", by="alice")
    assert conversation.resume().stop_reason == "end"
    store.load(waiting).validate()
    assert payments(ledger) == ["paid 5.0 to bob"]
    assert [r.content for r in results(store, waiting)] == ["paid 5.0 to bob"]


def test_killed_between_the_decision_and_the_resumed_call(
    store: Store, store_url: str, waiting: str, ledger: Path
) -> None:
    child = spawn("approve", store_url, waiting, ledger)
    until(child, "ready")
    kill(child)
    assert [(d.state, d.by) for d in decisions(store, waiting)] == [("approved", "alice")]
    assert Conversation.load(waiting, store, config(ledger, [])).awaiting == []
    resumed(store, waiting, ledger)
    assert payments(ledger) == ["paid 5.0 to bob"]
    assert [r.content for r in results(store, waiting)] == ["paid 5.0 to bob"]
    assert [(d.state, d.by) for d in decisions(store, waiting)] == [("approved", "alice")]


def test_killed_inside_the_approved_call_the_call_waits_for_a_person_again(
    store: Store, store_url: str, waiting: str, ledger: Path
) -> None:
    child = spawn("run", store_url, waiting, ledger)
    until(child, "ready")  # inside pay: its payment is in the ledger, its result is not in the log
    kill(child)
    store.load(waiting).validate()
    assert payments(ledger) == ["paid 5.0 to bob"]
    assert results(store, waiting) == []
    # The "started" entry written before pay ran tells the next turn it may have run: it is not run a second time
    # behind anyone's back, it waits for a person again.
    conversation = Conversation.load(waiting, store, config(ledger, ["Paid."]))
    assert conversation.resume().stop_reason == "awaiting"
    assert payments(ledger) == ["paid 5.0 to bob"]
    [again] = conversation.awaiting
    assert again.call.id == "c1" and "may have run" in (again.reason or "")
    conversation.deny("c1", by="alice", reason="it went through the first time")
    assert conversation.resume().stop_reason == "end"
    assert payments(ledger) == ["paid 5.0 to bob"]
    assert [r.content for r in results(store, waiting)] == ["denied by alice: it went through the first time"]
    store.load(waiting).validate()


@pytest.mark.parametrize(("first", "second"), [("approve!", "approve!"), ("approve!", "deny!")])
def test_two_processes_deciding_one_call_at_once_one_wins(
    store: Store, store_url: str, waiting: str, ledger: Path, first: str, second: str
) -> None:
    children = [spawn(mode, store_url, waiting, ledger) for mode in (first, second)]
    for child in children:
        until(child, "loaded")  # both have loaded the conversation while c1 waits
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outcomes = [child.communicate(timeout=120) for child in children]
    codes = sorted(child.returncode for child in children)
    assert codes == [0, 2], outcomes
    loser = next(err for child, (_, err) in zip(children, outcomes, strict=True) if child.returncode == 2)
    assert "AwaitingDecision" in loser
    assert "already" in loser, loser
    store.load(waiting).validate()
    assert len(decisions(store, waiting)) == 1
    winner = decisions(store, waiting)[0]
    denied_results = results(store, waiting)
    if winner.state == "denied":
        assert [r.is_error for r in denied_results] == [True]
    else:
        assert denied_results == []
        resumed(store, waiting, ledger)
        assert payments(ledger) == ["paid 5.0 to bob"]


def test_a_decision_for_a_call_of_another_conversation_is_refused(store: Store, ledger: Path) -> None:
    first = start(store, "conv-a", ledger)
    start(store, "conv-b", ledger, call_id="b1")  # a call only conversation B has
    before = {cid: store.load(cid).to_json() for cid in ("conv-a", "conv-b")}
    for decide in (first.approve, first.deny):
        with pytest.raises(AwaitingDecision, match="no such call in this conversation"):
            decide("b1", by="alice")
    assert {cid: store.load(cid).to_json() for cid in ("conv-a", "conv-b")} == before
    assert [w.call.id for w in Conversation.load("conv-b", store, config(ledger, [])).awaiting] == ["b1"]
    assert [w.call.id for w in Conversation.load("conv-a", store, config(ledger, [])).awaiting] == ["c1"]
    assert payments(ledger) == []
