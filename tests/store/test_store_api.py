"""The `Store` interface, on SQLite, PostgreSQL (and the in-memory store): what a caller stores is what it gets back."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.store._backends import write_cache_row
from threadline import (
    AssistantMessage,
    Attachment,
    LLMError,
    MessageList,
    MessageMeta,
    StoreError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from threadline.store import ConversationInfo, ImportItem, Store, latest_conversation_id, open_store

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def every_kind() -> list:
    """One message of every kind and every optional field a log can hold."""
    meta = MessageMeta(mode="agent", run_id="run-1", node_id="n1", agent_id="a1", ui={"collapsed": True, "x": [1]})
    return [
        SystemMessage(content="You are terse."),
        UserMessage(
            content="Look at this, and mind the notes",
            attachments=[
                Attachment("image", data=PNG, media_type="image/png", name="dot.png"),
                Attachment("mention", ref="notes"),
                Attachment("file", url="https://example.invalid/a.txt", name="a.txt"),
            ],
            meta=MessageMeta(mode="chat"),
        ),
        AssistantMessage(
            content="Let me check.",
            tool_calls=[
                ToolCall(id="c1", name="Notes.add_note", arguments={"text": "hé ✓", "tags": ["a"], "n": 1.5}),
                ToolCall(id="c2", name="search", raw_arguments='{"q": "unterminated'),
            ],
            model="scripted",
            usage=Usage(input_tokens=12, output_tokens=3),
            meta=meta,
        ),
        ToolMessage(tool_call_id="c1", tool_name="Notes.add_note", content="ok", duration_ms=1.25, meta=meta),
        ToolMessage(tool_call_id="c2", tool_name="search", content="Invalid arguments", is_error=True),
        AssistantMessage(
            content="The answer is 4",
            error=LLMError(type="timeout", message="read timed out", retryable=True),
            model="openai:gpt-4o",
        ),
        AssistantMessage(content="", error=LLMError(type="server", message="500")),
        UserMessage(content="ui only", meta=MessageMeta(include_in_context=False, ui={"widget": {"kind": "chart"}})),
        AssistantMessage(content="Done."),
    ]


def test_every_message_kind_round_trips(any_store: Store) -> None:
    info = any_store.create_conversation("kinds")
    messages = every_kind()
    any_store.append(info.id, messages)
    loaded = any_store.load(info.id)
    assert isinstance(loaded, MessageList)
    assert list(loaded) == messages
    loaded.validate()
    user = loaded[1]
    assert isinstance(user, UserMessage)
    assert user.attachments[0].read_bytes() == PNG
    assert [a.kind for a in user.attachments] == ["image", "mention", "file"]
    call = loaded[2].tool_calls[1]  # type: ignore[union-attr]
    assert call.raw_arguments == '{"q": "unterminated' and call.arguments == {}
    assert loaded[5].error == LLMError(type="timeout", message="read timed out", retryable=True)  # type: ignore[union-attr]
    assert any_store.get_conversation(info.id).message_count == len(messages)


def test_append_is_idempotent_on_message_id(any_store: Store) -> None:
    info = any_store.create_conversation()
    first, second, third = UserMessage(content="a"), AssistantMessage(content="b"), UserMessage(content="c")
    any_store.append(info.id, [first, second])
    any_store.append(info.id, [second, first, third, third])  # a retry of a partly stored batch
    any_store.append(info.id, [third])
    any_store.append(info.id, [])
    assert [m.content for m in any_store.load(info.id)] == ["a", "b", "c"]
    assert any_store.get_conversation(info.id).message_count == 3


def test_stored_messages_do_not_change_with_the_caller_objects(any_store: Store) -> None:
    info = any_store.create_conversation()
    message = UserMessage(content="original")
    any_store.append(info.id, [message])
    message.content = "edited later"
    assert any_store.load(info.id)[0].content == "original"  # type: ignore[union-attr]


def test_unknown_conversations_are_refused_clearly(any_store: Store) -> None:
    for action in (
        lambda: any_store.append("nope", [UserMessage(content="x")]),
        lambda: any_store.append("nope", []),
        lambda: any_store.load("nope"),
        lambda: any_store.get_conversation("nope"),
        lambda: any_store.update_metadata("nope", title="t"),
        lambda: any_store.delete_conversation("nope"),
        lambda: any_store.save_artifact("nope", "a", "text"),
    ):
        with pytest.raises(StoreError, match="no conversation 'nope'"):
            action()
    assert any_store.has_conversation("nope") is False


def test_create_with_an_existing_id_is_refused(any_store: Store) -> None:
    any_store.create_conversation("first", id="conv-1")
    with pytest.raises(StoreError, match="already exists"):
        any_store.create_conversation("second", id="conv-1")
    assert any_store.get_conversation("conv-1").title == "first"


def test_metadata_title_and_mode(any_store: Store) -> None:
    info = any_store.create_conversation("Trip", {"owner": "ana", "tags": ["x"]})
    assert (info.title, info.active_mode, dict(info.metadata), info.message_count) == (
        "Trip",
        None,
        {"owner": "ana", "tags": ["x"]},
        0,
    )
    assert info.created_at.tzinfo is not None
    updated = any_store.update_metadata(info.id, active_mode="agent", metadata={"tags": ["y"], "n": 2})
    assert updated.active_mode == "agent"
    assert updated.title == "Trip"  # None leaves a value alone
    assert dict(updated.metadata) == {"owner": "ana", "tags": ["y"], "n": 2}
    renamed = any_store.update_metadata(info.id, title="Trip to Rome")
    assert (renamed.title, renamed.active_mode) == ("Trip to Rome", "agent")
    assert renamed.updated_at >= info.updated_at
    with pytest.raises(StoreError, match="JSON"):
        any_store.update_metadata(info.id, metadata={"bad": object()})


def test_list_conversations_most_recent_first_with_paging(any_store: Store) -> None:
    ids = [any_store.create_conversation(f"c{i}").id for i in range(5)]
    any_store.append(ids[1], [UserMessage(content="bump")])  # now the most recently updated
    listed = [info.id for info in any_store.list_conversations()]
    assert listed[0] == ids[1]
    assert sorted(listed) == sorted(ids)
    page1 = any_store.list_conversations(limit=2)
    page2 = any_store.list_conversations(limit=2, offset=2)
    page3 = any_store.list_conversations(limit=2, offset=4)
    assert [i.id for i in page1 + page2 + page3] == listed
    assert latest_conversation_id(any_store) == ids[1]
    with pytest.raises(ValueError):
        any_store.list_conversations(limit=-1)


def test_latest_conversation_of_an_empty_store_is_none(any_store: Store) -> None:
    assert latest_conversation_id(any_store) is None
    assert any_store.list_conversations() == []


def test_delete_removes_messages_and_artifacts(any_store: Store) -> None:
    keep = any_store.create_conversation("keep")
    gone = any_store.create_conversation("gone")
    any_store.append(keep.id, [UserMessage(content="k")])
    any_store.append(gone.id, [UserMessage(content="g")])
    any_store.save_artifact(gone.id, "out", "full output")
    any_store.delete_conversation(gone.id)
    assert not any_store.has_conversation(gone.id)
    with pytest.raises(StoreError):
        any_store.read_artifact(gone.id, "out")
    assert [m.content for m in any_store.load(keep.id)] == ["k"]  # type: ignore[union-attr]
    # The id is free again and starts empty.
    any_store.create_conversation(id=gone.id)
    assert len(any_store.load(gone.id)) == 0


def test_artifacts_read_by_offset_and_limit(any_store: Store) -> None:
    info = any_store.create_conversation()
    text = "héllo wörld ✓ " * 100
    uri = any_store.save_artifact(info.id, "call_1", text)
    assert uri == f"artifact://{info.id}/call_1"
    assert any_store.read_artifact(info.id, "call_1") == text
    assert any_store.read_artifact(info.id, "call_1", 1, 5) == text[1:6]  # characters, not bytes
    assert any_store.read_artifact(info.id, "call_1", 1390) == text[1390:]
    assert any_store.read_artifact(info.id, "call_1", 5000, 10) == ""
    assert any_store.read_artifact(info.id, "call_1", 0, 0) == ""
    any_store.save_artifact(info.id, "call_1", "replaced")
    assert any_store.read_artifact(info.id, "call_1") == "replaced"
    with pytest.raises(StoreError, match="no artifact 'other'"):
        any_store.read_artifact(info.id, "other")
    other = any_store.create_conversation()
    with pytest.raises(StoreError):  # artifacts belong to their conversation
        any_store.read_artifact(other.id, "call_1")
    for bad in ("../x", "a/b", "", ".."):
        with pytest.raises(ValueError, match="invalid artifact name"):
            any_store.save_artifact(info.id, bad, "x")
    with pytest.raises(ValueError, match="negative"):
        any_store.read_artifact(info.id, "call_1", -1)


def test_request_cache(any_store: Store) -> None:
    assert any_store.cache_get("h1") is None
    value = {"text": "Paris", "messages": [{"role": "user", "content": "\u0000 nul"}], "n": 1.5, "ok": True}
    any_store.cache_put("h1", value)
    assert any_store.cache_get("h1") == value
    any_store.cache_put("h1", ["replaced"])
    assert any_store.cache_get("h1") == ["replaced"]
    with pytest.raises(StoreError, match="JSON"):
        any_store.cache_put("h2", {"x": object()})
    assert any_store.cache_get("h2") is None


def test_request_cache_raw_bytes(any_store: Store) -> None:
    # The stored JSON itself, for a reader that decodes it straight into its own types.
    assert any_store.cache_get_raw("h1") is None
    value = {"text": "Paris ✓", "messages": [{"role": "user", "content": "\u0000 nul"}], "n": 1.5, "ok": True}
    any_store.cache_put("h1", value)
    raw = any_store.cache_get_raw("h1")
    assert isinstance(raw, bytes) and json.loads(raw) == value
    any_store.cache_put("h1", ["replaced"])
    assert json.loads(any_store.cache_get_raw("h1") or b"") == ["replaced"]


def test_the_default_raw_cache_read_encodes_the_decoded_value() -> None:
    # What a backend that does not keep JSON itself inherits from Store.
    store = open_store("memory://")
    store.cache_put("k", {"a": [1, "é", None]})
    assert json.loads(Store.cache_get_raw(store, "k") or b"") == {"a": [1, "é", None]}
    assert Store.cache_get_raw(store, "missing") is None


@pytest.mark.parametrize("damaged", ['{"text": "Sun', "not JSON at all", ""])
def test_a_damaged_cache_row_is_read_as_stored_and_named_when_decoded(
    store: Store, store_url: str, damaged: str
) -> None:
    store.cache_put("k", {"v": 1})
    write_cache_row(store_url, "k", damaged)
    assert store.cache_get_raw("k") == damaged.encode()  # its reader judges it
    with pytest.raises(StoreError, match="cached value under 'k' is damaged"):
        store.cache_get("k")
    store.cache_put("k", {"v": 2})  # a new value replaces it
    assert store.cache_get("k") == {"v": 2}


def test_pages(any_store: Store) -> None:
    info = any_store.create_conversation()
    page = any_store.save_page("Chart", "<h1>Hi</h1>", "h1{}", "alert(1)", conversation_id=info.id)
    loaded = any_store.get_page(page.id)
    assert loaded == page
    assert (loaded.title, loaded.html, loaded.css, loaded.js, loaded.conversation_id) == (
        "Chart",
        "<h1>Hi</h1>",
        "h1{}",
        "alert(1)",
        info.id,
    )
    assert any_store.get_page(any_store.save_page("Bare", "<p>x</p>").id).conversation_id is None
    with pytest.raises(StoreError, match="no page"):
        any_store.get_page("missing")
    with pytest.raises(ValueError, match="limit is 50,000"):
        any_store.save_page("Big", "x" * 50_001)


def test_import_conversations_is_all_or_nothing(any_store: Store) -> None:
    existing = any_store.create_conversation("existing", id="b")
    stamp = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    first = ImportItem(
        ConversationInfo(id="a", title="A", created_at=stamp, updated_at=stamp + timedelta(hours=1), active_mode="run"),
        [UserMessage(content="hi"), AssistantMessage(content="hello")],
    )
    clash = ImportItem(ConversationInfo(id="b", title="B", created_at=stamp, updated_at=stamp), [])
    with pytest.raises(StoreError, match="already exists"):
        any_store.import_conversations([first, clash])
    assert not any_store.has_conversation("a")  # the first one was not written either
    assert any_store.get_conversation("b") == existing
    infos = any_store.import_conversations([first])
    assert infos[0].message_count == 2
    info = any_store.get_conversation("a")
    assert (info.title, info.created_at, info.updated_at, info.active_mode) == (
        "A",
        stamp,
        stamp + timedelta(hours=1),
        "run",
    )
    assert list(any_store.load("a")) == list(first.messages)
    any_store.append("a", [UserMessage(content="more")])  # an imported conversation continues normally
    assert len(any_store.load("a")) == 3


def test_closed_store_refuses_work(store_url: str) -> None:
    store = open_store(store_url)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_conversations()
    store.close()  # closing twice is harmless


def test_data_survives_reopening(store_url: str) -> None:
    messages = every_kind()
    with open_store(store_url) as store:
        info = store.create_conversation("persisted")
        store.append(info.id, messages)
        store.save_artifact(info.id, "x", "artifact text")
        store.cache_put("k", {"v": 1})
    with open_store(store_url) as store:
        assert list(store.load(info.id)) == messages
        assert store.get_conversation(info.id).title == "persisted"
        assert store.read_artifact(info.id, "x") == "artifact text"
        assert store.cache_get("k") == {"v": 1}


def test_nul_characters_in_titles_and_artifacts_do_not_fail_a_save(any_store: Store) -> None:
    # A tool may return binary-looking text; saving it must not break the turn. (PostgreSQL text cannot hold NUL,
    # so that backend keeps U+FFFD in its place; the log itself, stored as JSON, keeps it exactly.)
    info = any_store.create_conversation("a\x00b")
    any_store.append(info.id, [UserMessage(content="x\x00y")])
    any_store.save_artifact(info.id, "bin", "head\x00tail")
    assert any_store.get_conversation(info.id).title in ("a\x00b", "a\ufffdb")
    assert any_store.read_artifact(info.id, "bin", 5) == "tail"
    assert any_store.load(info.id)[0].content == "x\x00y"  # type: ignore[union-attr]
