"""Approval entries through every place a log goes (docs/file-format.md#approvals): SQLite, PostgreSQL and the
memory store, forks, export/import in both file forms and the CLI, and search. They come back byte for byte; a
forged entry is refused on import and nothing is written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_approval_log import Built, logs, target_turn
from threadline import (
    ApprovalMessage,
    AssistantMessage,
    Conversation,
    ConversationConfig,
    MessageList,
    StoreError,
    ToolCall,
    ToolMessage,
    tool,
)
from threadline.message_types import Message, arguments_sha256
from threadline.store import ConversationInfo, ImportItem, Store
from threadline.store.jsonfiles import export_layout, read_layout, read_log_file
from threadline.testing import ScriptedModel

from ._backends import run_cli

STORE_CASES = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@tool(approval=True)
def pay(amount: float, to: str) -> str:
    """Pay someone."""
    return f"paid {amount} to {to}"


@tool
def lookup(name: str) -> str:
    """Look a name up."""
    return f"{name} is nice"


def decided_conversation(store: Store) -> Conversation:
    """A real conversation in ``store``: a call that waited, approved with edited arguments, then run."""
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[
                    ToolCall(id="c1", name="pay", arguments={"amount": 5, "to": "bob"}),
                    ToolCall(id="c2", name="lookup", arguments={"name": "bob"}),
                ]
            ),
            "Paid.",
        ]
    )
    conversation = Conversation(config=ConversationConfig(model=model, tools=[pay, lookup]), store=store)
    conversation.continuation.request("pay bob 5").prompt()
    assert conversation.last_turn.stop_reason == "awaiting"
    conversation.approve("c1", by="carol", reason="invoice matches the ledger", arguments={"amount": 6, "to": "bob"})
    assert conversation.resume().stop_reason == "end"
    return conversation


def listed(store: Store) -> list[str]:
    return [info.id for info in store.list_conversations(limit=1000)]


# -- the stores -------------------------------------------------------------------------------------------------------
@STORE_CASES
@given(logs(), st.data())
def test_any_log_with_entries_survives_the_store(any_store: Store, built: Built, data: st.DataObject) -> None:
    log = built.log()
    info = any_store.create_conversation(title="waits")
    split = data.draw(st.integers(0, len(log)))  # written in two appends, as a turn and a decision are
    any_store.append(info.id, list(log)[:split])
    any_store.append(info.id, list(log)[split:], expected_count=split)
    loaded = any_store.load(info.id)
    assert loaded == log
    assert loaded.to_json() == log.to_json()
    loaded.validate()


def group_end(messages: list[Message], index: int) -> int:
    """Where a fork at ``index`` ends: the results and approval entries right after it belong to its group."""
    end = index + 1
    while end < len(messages) and type(messages[end]) in (ToolMessage, ApprovalMessage):
        end += 1
    return end


@STORE_CASES
@given(logs().filter(lambda built: built.messages), st.data())
def test_a_fork_keeps_the_entries_of_the_tool_group_it_cuts(
    any_store: Store, built: Built, data: st.DataObject
) -> None:
    log = built.log()
    info = any_store.create_conversation(title="waits")
    any_store.append(info.id, list(log))
    at = data.draw(st.integers(0, len(log) - 1))
    fork = any_store.fork_conversation(info.id, log[at].id)
    forked = any_store.load(fork.id)
    forked.validate()
    assert forked.to_json() == log[: group_end(list(log), at)].to_json()


def test_a_fork_at_calls_that_waited_keeps_their_decision_and_results(any_store: Store) -> None:
    conversation = decided_conversation(any_store)
    messages = list(any_store.load(conversation.id))
    group = ["user", "assistant", "approval", "tool", "approval", "approval", "tool"]  # ..., approved, started, ...
    assert [m.role for m in messages] == [*group, "assistant"]
    for at in (1, 2, 3, 4, 5):  # the calls, the request, lookup's result, the approval, the start
        fork = any_store.fork_conversation(conversation.id, messages[at].id)
        forked = any_store.load(fork.id)
        assert [m.role for m in forked] == group
        forked.validate()


def test_search_finds_an_approval_entry_by_its_reason_and_by_whom(any_store: Store) -> None:
    conversation = decided_conversation(any_store)
    messages = list(any_store.load(conversation.id))
    approval = next(m for m in messages if type(m) is ApprovalMessage and m.state == "approved")
    for query in ("ledger", "carol", "invoice carol"):
        found = [message_id for _, message_id in any_store.search_messages(conversation.id, query)]
        assert found == [approval.id], query


# -- export and import ------------------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs())
def test_any_log_with_entries_survives_export_and_import(
    tmp_path_factory: pytest.TempPathFactory, built: Built
) -> None:
    log = built.log()
    folder = tmp_path_factory.mktemp("export")
    now = datetime.now(UTC)
    info = ConversationInfo(id="conv-1", title="t", created_at=now, updated_at=now)
    export_layout(folder, [(info, list(log))])
    (imported,) = read_layout(folder)
    assert MessageList(imported.messages).to_json() == log.to_json()
    single = folder / "log.json"
    single.write_text(log.to_json())
    assert MessageList(read_log_file(single).messages).to_json() == log.to_json()


def test_the_cli_exports_and_imports_entries(store: Store, store_url: str, tmp_path: Path) -> None:
    conversation = decided_conversation(store)
    original = store.load(conversation.id).to_json()
    env = {"THREADLINE_STORE": store_url}
    target = tmp_path / "out.json"
    done = run_cli("export", conversation.id, "-o", str(target), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text())["version"] == "2.2"
    done = run_cli("import", str(target), "--cid", "copy-1", env=env)
    assert done.returncode == 0, done.stderr
    assert store.load("copy-1").to_json() == original
    folder = tmp_path / "layout"
    done = run_cli("export", conversation.id, "--layout", "files", "-o", str(folder), env=env)
    assert done.returncode == 0, done.stderr
    store.delete_conversation(conversation.id)
    done = run_cli("import", str(folder), env=env)
    assert done.returncode == 0, done.stderr
    assert store.load(conversation.id).to_json() == original


def forged_logs(log: MessageList) -> dict[str, list[Message]]:
    """``log`` with its approval forged: bound to other arguments, or with no request before it."""
    messages = list(log)
    approved = next(m for m in messages if type(m) is ApprovalMessage and m.state == "approved")
    other_hash = arguments_sha256(ToolCall(id="c1", name="pay", arguments={"amount": 5000, "to": "mallory"}))
    rehashed = [msgspec.structs.replace(m, arguments_sha256=other_hash) if m is approved else m for m in messages]
    unrequested = [m for m in messages if not (type(m) is ApprovalMessage and m.state == "requested")]
    return {"approval_hash": rehashed, "decision_without_request": unrequested}


@pytest.mark.parametrize("form", ["json", "files"])
def test_the_cli_refuses_a_forged_entry_and_writes_nothing(
    store: Store, store_url: str, tmp_path: Path, form: str
) -> None:
    log = store.load(decided_conversation(store).id)
    before = listed(store)
    for rule, messages in forged_logs(log).items():
        if form == "json":
            source = tmp_path / f"{rule}.json"
            source.write_text(MessageList.unchecked(messages).to_json())
        else:
            now = datetime.now(UTC)
            source = tmp_path / rule
            export_layout(
                source,
                [(ConversationInfo(id=f"forged-{rule}", title="forged", created_at=now, updated_at=now), messages)],
            )
        done = run_cli("import", str(source), env={"THREADLINE_STORE": store_url})
        assert done.returncode != 0
        assert "approval entry" in done.stderr or "not requested" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        assert listed(store) == before


def test_the_store_refuses_to_import_a_forged_entry_and_writes_nothing(any_store: Store) -> None:
    log = any_store.load(decided_conversation(any_store).id)
    before = listed(any_store)
    now = datetime.now(UTC)
    for rule, messages in forged_logs(log).items():
        fine = ImportItem(
            info=ConversationInfo(id="fine", title="fine", created_at=now, updated_at=now), messages=list(log)
        )
        forged = ImportItem(
            info=ConversationInfo(id="forged", title="forged", created_at=now, updated_at=now), messages=messages
        )
        with pytest.raises(StoreError, match=f"rule {rule}.*nothing was imported"):
            any_store.import_conversations([fine, forged])
        assert listed(any_store) == before


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs(target_turn("approved")))
def test_every_valid_log_with_entries_is_imported_whole(any_store: Store, built: Built) -> None:
    now = datetime.now(UTC)
    info = ConversationInfo(id=f"imp-{len(listed(any_store))}", title="imported", created_at=now, updated_at=now)
    any_store.import_conversations([ImportItem(info=info, messages=list(built.messages))])
    assert any_store.load(info.id).to_json() == built.log().to_json()
