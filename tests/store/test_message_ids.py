"""One message per id in a conversation (issue 8, item 5): the same message appended again is skipped (a retry after
a crash relies on it), a different message with a stored id is refused with a clear error and nothing of its append
is written, an import repeating an id is refused whole, and a process forked mid-millisecond mints its own ids —
on SQLite, PostgreSQL and the memory store."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.store._backends import backend_url
from threadline import AssistantMessage, StoreError, ToolCall, ToolMessage, UserMessage
from threadline.store import ConversationInfo, ImportItem, Store, open_store


def test_the_same_message_again_is_skipped(any_store: Store) -> None:
    info = any_store.create_conversation()
    message = UserMessage(content="hello")
    any_store.append(info.id, [message])
    # A copy read back from the store is the same message too (what a crash-recovery retry appends).
    any_store.append(info.id, [any_store.load(info.id)[0], message])
    assert any_store.load(info.id) == [message]
    assert any_store.get_conversation(info.id).message_count == 1


def test_a_different_message_with_a_stored_id_is_refused_and_nothing_is_appended(any_store: Store) -> None:
    info = any_store.create_conversation()
    first = UserMessage(content="first")
    any_store.append(info.id, [first])
    impostor = AssistantMessage(id=first.id, content="another message")
    new = UserMessage(content="new")
    with pytest.raises(StoreError, match=f"different message with id '{first.id}'"):
        any_store.append(info.id, [new, impostor])
    assert any_store.load(info.id) == [first]  # the whole append was rolled back, `new` included
    assert any_store.get_conversation(info.id).message_count == 1
    any_store.append(info.id, [new])  # and the store goes on working
    assert [m.content for m in any_store.load(info.id)] == ["first", "new"]


def test_a_tool_result_sharing_its_assistants_id_is_refused(any_store: Store) -> None:
    info = any_store.create_conversation()
    call = AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments={})])
    any_store.append(info.id, [UserMessage(content="q"), call])
    with pytest.raises(StoreError, match="different message"):
        any_store.append(info.id, [ToolMessage(id=call.id, tool_call_id="c1", tool_name="f", content="ok")])
    result = ToolMessage(tool_call_id="c1", tool_name="f", content="ok")
    any_store.append(info.id, [result])
    stored = any_store.load(info.id)
    stored.validate()
    assert stored[-1] == result


def test_one_append_holding_two_different_messages_with_one_id_is_refused(any_store: Store) -> None:
    info = any_store.create_conversation()
    first = UserMessage(content="a")
    with pytest.raises(StoreError, match="share the id"):
        any_store.append(info.id, [first, UserMessage(id=first.id, content="b")])
    assert len(any_store.load(info.id)) == 0


def test_an_import_repeating_a_message_id_is_refused_whole(any_store: Store) -> None:
    message = UserMessage(content="a")
    stamp = datetime.now(UTC)
    items = [
        ImportItem(
            ConversationInfo(id="ok", title=None, created_at=stamp, updated_at=stamp), [UserMessage(content="x")]
        ),
        ImportItem(
            ConversationInfo(id="dup", title=None, created_at=stamp, updated_at=stamp),
            [message, AssistantMessage(content="b"), message],
        ),
    ]
    with pytest.raises(StoreError, match="message 2 repeats the id"):
        any_store.import_conversations(items)
    assert not any_store.has_conversation("ok") and not any_store.has_conversation("dup")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_parent_and_forked_child_append_to_one_conversation(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The clock is held in one millisecond: the case where a child would go on minting its parent's next ids.
    frozen = time.time_ns()
    monkeypatch.setattr(time, "time_ns", lambda: frozen)
    with backend_url(backend, tmp_path) as url:
        store = open_store(url)
        try:
            info = store.create_conversation()
            children = []
            for index in range(3):
                pid = os.fork()
                if pid == 0:  # pragma: no cover - runs in the child, with a store of its own
                    code = 1
                    try:
                        with open_store(url) as own:
                            own.append(info.id, [UserMessage(content=f"from child {index}")])
                        code = 0
                    finally:
                        os._exit(code)
                children.append(pid)
            store.append(info.id, [UserMessage(content="from parent")])
            for pid in children:
                assert os.waitpid(pid, 0)[1] == 0
            contents = sorted(m.content for m in store.load(info.id))
            assert contents == ["from child 0", "from child 1", "from child 2", "from parent"]
        finally:
            store.close()
