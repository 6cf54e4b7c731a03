"""The JSON-file layout (docs/file-format.md#the-json-file-layout: ``conversations/index.json`` +
``conversations/<id>/messages.json``): old files import, threadline's own export imports back unchanged, and a malformed
layout is refused whole, naming the file, position and field."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store.test_store_api import every_kind
from threadline import (
    AssistantMessage,
    MessageListDeserializationError,
    StoreError,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from threadline.store import Store
from threadline.store.jsonfiles import export_layout, read_layout, read_log_file

OLD_INDEX = [
    {
        "id": "conv-old",
        "title": "Trip planning",
        "createdAt": "2024-03-01T09:00:00.000Z",
        "updatedAt": "2024-03-01T09:05:00.000Z",
        "activeType": "agent",
        "packageId": "pkg-7",
    },
    {"id": "conv-empty", "title": "Nothing yet", "createdAt": 1709283600000},
]
OLD_MESSAGES = [
    # Messages written before tool fields existed: role and content only, plus UI extras.
    {"id": "m1", "role": "system", "content": "You plan trips.", "createdAt": "2024-03-01T09:00:00.000Z"},
    {"id": "m2", "role": "user", "content": "Plan Rome", "createdAt": "2024-03-01T09:00:01.000Z", "partType": "text"},
    {"id": "m3", "role": "assistant", "content": "Sure.", "createdAt": "2024-03-01T09:00:02Z", "isCollapsed": False},
    # Newer, protocol-complete messages.
    {
        "id": "m4",
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "Rome hotels"}'}}
        ],
        "mode": "agent",
        "runId": "run-1",
        "createdAt": "2024-03-01T09:00:03Z",
    },
    {
        "id": "m5",
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "3 hotels",
        "toolName": "search",
        "duration": 120,
        "isCollapsed": True,
        "createdAt": "2024-03-01T09:00:04Z",
    },
    {
        "id": "m6",
        "role": "assistant",
        "content": "Hotel A is\n[LLM_ERROR type=timeout message=request timed out]",
        "createdAt": "2024-03-01T09:00:05Z",
    },
    {"id": "m7", "role": "user", "content": "continue", "includeInContext": True, "workflowId": "wf-2"},
]


def write_layout(root: Path, index: Any, messages: dict[str, Any], *, raw: dict[str, str] | None = None) -> Path:
    folder = root / "conversations"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.json").write_text(index if isinstance(index, str) else json.dumps(index))
    for conversation_id, content in messages.items():
        (folder / conversation_id).mkdir(exist_ok=True)
        (folder / conversation_id / "messages.json").write_text(json.dumps(content))
    for conversation_id, text in (raw or {}).items():
        (folder / conversation_id).mkdir(exist_ok=True)
        (folder / conversation_id / "messages.json").write_text(text)
    return root


def test_old_layout_imports_with_tool_fields_and_failures(store: Store, tmp_path: Path) -> None:
    write_layout(tmp_path, OLD_INDEX, {"conv-old": OLD_MESSAGES})
    infos = store.import_conversations(read_layout(tmp_path))
    assert [info.id for info in infos] == ["conv-old", "conv-empty"]
    info = store.get_conversation("conv-old")
    assert (info.title, info.active_mode, info.message_count) == ("Trip planning", "agent", 7)
    assert info.created_at == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    assert dict(info.metadata) == {"packageId": "pkg-7"}
    assert store.get_conversation("conv-empty").created_at == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    log = store.load("conv-old")
    log.validate()
    system, user, text, calls, result, failure, again = log
    assert isinstance(system, SystemMessage) and system.content == "You plan trips."
    assert isinstance(user, UserMessage) and user.id == "m2" and user.meta.ui == {"part_type": "text"}
    assert isinstance(text, AssistantMessage) and text.content == "Sure." and text.meta.ui == {"collapsed": False}
    assert isinstance(calls, AssistantMessage)
    assert calls.tool_calls[0].name == "search" and calls.tool_calls[0].arguments == {"q": "Rome hotels"}
    assert (calls.meta.mode, calls.meta.run_id) == ("agent", "run-1")
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.tool_name, result.content, result.duration_ms) == (
        "call_1",
        "search",
        "3 hotels",
        120.0,
    )
    assert isinstance(failure, AssistantMessage)
    assert failure.content == "Hotel A is"
    assert failure.error is not None and (failure.error.type, failure.error.message) == ("timeout", "request timed out")
    assert isinstance(again, UserMessage) and again.meta.ui == {"workflow_id": "wf-2"}
    assert len(store.load("conv-empty")) == 0


def test_export_then_import_gives_back_the_same_conversation(store: Store, tmp_path: Path) -> None:
    info = store.create_conversation("Everything", {"owner": "ana"})
    messages = every_kind()
    store.append(info.id, messages)
    info = store.update_metadata(info.id, active_mode="run")
    root = export_layout(tmp_path, [(info, list(store.load(info.id)))])
    assert (root / "index.json").is_file() and (root / info.id / "messages.json").is_file()
    items = read_layout(tmp_path)
    assert len(items) == 1
    assert list(items[0].messages) == messages
    imported = items[0].info
    assert (imported.id, imported.title, imported.active_mode, dict(imported.metadata)) == (
        info.id,
        "Everything",
        "run",
        {"owner": "ana"},
    )
    assert (imported.created_at, imported.updated_at) == (info.created_at, info.updated_at)
    store.delete_conversation(info.id)
    store.import_conversations(items)
    assert list(store.load(info.id)) == messages


def test_export_keeps_other_entries_of_an_existing_index(tmp_path: Path, store: Store) -> None:
    write_layout(tmp_path, OLD_INDEX, {"conv-old": OLD_MESSAGES})
    info = store.create_conversation("New one")
    store.append(info.id, [UserMessage(content="hi")])
    export_layout(tmp_path, [(store.get_conversation(info.id), list(store.load(info.id)))])
    ids = [item.info.id for item in read_layout(tmp_path)]
    assert ids == ["conv-old", "conv-empty", info.id]


def test_conversations_dated_before_the_year_1000_import_list_and_sort(store: Store, tmp_path: Path) -> None:
    # Found by the fault campaign (tests/faults): SQLite wrote such a date as "355-09-01T…" (strftime pads no year),
    # which it could not read back: the import succeeded, then every listing of the store failed.
    index = [
        {"id": "ancient", "title": "Old", "createdAt": "0355-09-01T09:01:34.000278Z", "updatedAt": -51000000000000},
        {"id": "recent", "title": "New", "createdAt": "2024-03-01T09:00:00Z", "updatedAt": "2024-03-01T09:00:00Z"},
    ]
    root = tmp_path / "conversations"
    root.mkdir()
    (root / "index.json").write_text(json.dumps(index))
    store.import_conversations(read_layout(tmp_path))
    ancient = store.get_conversation("ancient")
    assert ancient.created_at == datetime(355, 9, 1, 9, 1, 34, 278, tzinfo=UTC)
    assert ancient.updated_at.year == 353
    assert [info.id for info in store.list_conversations()] == ["recent", "ancient"]  # newest first


def test_an_unpadded_year_written_by_an_earlier_version_is_read(tmp_path: Path) -> None:
    import sqlite3

    from threadline import open_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    with open_store(url) as store:
        store.create_conversation("old", id="old")
    with sqlite3.connect(tmp_path / "old.db") as connection:
        connection.execute("UPDATE conversations SET created_at = '355-09-01T09:01:34.000278Z' WHERE id = 'old'")
    connection.close()
    with open_store(url) as store:
        assert store.get_conversation("old").created_at == datetime(355, 9, 1, 9, 1, 34, 278, tzinfo=UTC)


def test_a_single_log_file_imports_as_a_new_conversation(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"version": "2.0", "messages": [{"role": "user", "content": "Hello there"}]}))
    item = read_log_file(path)
    store.import_conversations([item])
    assert store.get_conversation(item.info.id).title == "Hello there"
    fluent = tmp_path / "fluent.json"
    fluent.write_text(
        json.dumps(
            {
                "version": "1.0",
                "messages": [
                    {"type": "TextMessage", "role": "user", "text": "add 2 and 3"},
                    {
                        "type": "ToolCallMessage",
                        "tool_name": "add",
                        "tool_call_id": "t1",
                        "arguments": {"a": 2},
                        "result": 5,
                    },
                ],
            }
        )
    )
    item = read_log_file(fluent, "from-fluent")
    store.import_conversations([item])
    assert [type(m).__name__ for m in store.load("from-fluent")] == ["UserMessage", "AssistantMessage", "ToolMessage"]


MALFORMED: dict[str, tuple[Any, dict[str, Any], dict[str, str], str]] = {
    "broken json in a log": (
        OLD_INDEX,
        {"conv-old": OLD_MESSAGES},
        {"conv-empty": '[{"role": "user", "content": "x"'},
        "not valid JSON",
    ),
    "unknown role": (
        OLD_INDEX,
        {"conv-old": OLD_MESSAGES, "conv-empty": [{"role": "robot", "content": "x"}]},
        {},
        r"messages\[0\]: role: unknown role 'robot'",
    ),
    "result without a call": (
        OLD_INDEX,
        {"conv-old": OLD_MESSAGES, "conv-empty": [{"role": "tool", "tool_call_id": "zz", "content": "x"}]},
        {},
        "no earlier assistant message called",
    ),
    "wrong field type": (
        OLD_INDEX,
        {"conv-old": [*OLD_MESSAGES, {"role": "user", "content": 5}]},
        {},
        r"messages\[7\]: content",
    ),
    "bad timestamp": (
        OLD_INDEX,
        {"conv-old": [{"role": "user", "content": "x", "createdAt": "yesterday"}]},
        {},
        "not an ISO timestamp",
    ),
    "bad tool call": (
        OLD_INDEX,
        {"conv-old": [{"role": "assistant", "tool_calls": [{"function": {}}]}]},
        {},
        r"tool_calls\[0\]",
    ),
    "messages missing that the index counts": (
        [*OLD_INDEX, {"id": "conv-lost", "title": "Lost", "messageCount": 5}],
        {"conv-old": OLD_MESSAGES},
        {},
        r"conv-lost/messages\.json: missing, but .* says the conversation has 5 messages",
    ),
    "path in an id": ([{"id": "../escape"}], {}, {}, "not usable"),
    "duplicate id": ([{"id": "a"}, {"id": "a"}], {}, {}, "listed twice"),
    "index not a list": ({"conversations": "nope"}, {}, {}, "expected a list of conversations"),
    "broken index": ("[{", {}, {}, "not valid JSON"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_layout_is_refused_whole(store: Store, tmp_path: Path, case: str) -> None:
    index, messages, raw, message = MALFORMED[case]
    write_layout(tmp_path, index, messages, raw=raw)
    with pytest.raises(MessageListDeserializationError, match=message) as caught:
        store.import_conversations(read_layout(tmp_path))
    assert "conversations" in str(caught.value)  # the message names the file
    assert store.list_conversations() == []  # nothing written, not even the good conversation


def test_a_folder_without_a_layout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MessageListDeserializationError, match=r"no conversations/index\.json"):
        read_layout(tmp_path)


# -- property-based: random and truncated JSON never escapes as another exception ----------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
field_values = st.one_of(
    json_values, st.sampled_from(["user", "assistant", "tool", "system", "call_1", "2024-01-01T00:00:00Z"])
)
message_like = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "other"])},
    optional=dict.fromkeys(
        (
            "id",
            "content",
            "tool_calls",
            "tool_call_id",
            "toolName",
            "createdAt",
            "duration",
            "mode",
            "error",
            "usage",
            "attachments",
            "includeInContext",
            "isError",
            "ui",
            "runId",
        ),
        field_values,
    ),
)
call_like = st.fixed_dictionaries(
    {"id": st.sampled_from(["call_1", "call_2"])},
    optional={
        "function": st.fixed_dictionaries({}, optional={"name": field_values, "arguments": field_values}),
        "name": field_values,
    },
)
assistant_with_calls = st.builds(
    lambda calls: {"role": "assistant", "tool_calls": calls}, st.lists(call_like, max_size=3)
)
logs = st.one_of(json_values, st.lists(st.one_of(message_like, assistant_with_calls), max_size=6))
index_entries = st.one_of(
    json_values,
    st.lists(
        st.fixed_dictionaries(
            {"id": st.sampled_from(["a", "b", "../x", ""])},
            optional={
                "title": field_values,
                "createdAt": field_values,
                "activeType": field_values,
                "metadata": field_values,
            },
        ),
        max_size=3,
    ),
)


def _import(store: Store, root: Path) -> None:
    try:
        store.import_conversations(read_layout(root))
    except (MessageListDeserializationError, StoreError):
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=index_entries, log_a=logs, log_b=logs)
def test_random_layouts_import_or_fail_cleanly(store: Store, index: Any, log_a: Any, log_b: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = write_layout(Path(folder), index, {"a": log_a, "b": log_b})
        before = len(store.list_conversations(limit=1000))
        try:
            items = read_layout(root)
        except MessageListDeserializationError:
            assert len(store.list_conversations(limit=1000)) == before
            return
        for item in items:
            list(item.messages)
        _import(store, root)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut_index=st.integers(min_value=0, max_value=10_000), cut_log=st.integers(min_value=0, max_value=10_000))
def test_truncated_layout_files_import_or_fail_cleanly(store: Store, cut_index: int, cut_log: int) -> None:
    index_text = json.dumps(OLD_INDEX)
    log_text = json.dumps(OLD_MESSAGES)
    with tempfile.TemporaryDirectory() as folder:
        root = write_layout(
            Path(folder),
            index_text[: cut_index % (len(index_text) + 1)],
            {},
            raw={"conv-old": log_text[: cut_log % (len(log_text) + 1)]},
        )
        _import(store, root)
        for info in store.list_conversations(limit=1000):
            store.load(info.id).validate()
            store.delete_conversation(info.id)


@settings(max_examples=100, deadline=None)
@given(data=st.one_of(logs, st.text(max_size=200)))
def test_random_single_files_read_or_fail_cleanly(data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        try:
            item = read_log_file(path)
        except MessageListDeserializationError:
            return
        assert isinstance(item.info.id, str)
