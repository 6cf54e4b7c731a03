"""A message with a field of the wrong type never reaches a store.

Messages made in Python are msgspec structs, which check nothing when made: ``UserMessage(content=123)`` exists,
encodes, and no reader takes it back. Kept by a store, one such message made its whole conversation fail to load
("a stored message is damaged"). Now every store's ``append`` and ``import_conversations`` refuse it with the
position and the field, writing nothing; `Conversation.add` refuses it before it reaches the log; and
``validate()`` reports it (rule ``invalid_field``) — on SQLite, PostgreSQL and the memory store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    LLMError,
    MessageList,
    ProtocolError,
    Reasoning,
    StoreError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserError,
    UserMessage,
)
from threadline.messages import MessageMeta
from threadline.store import ConversationInfo, ImportItem, Store, open_store

CALL = ToolCall(id="c1", name="f", arguments={})


def deep_call(depth: int) -> AssistantMessage:
    """A message whose call's arguments were set ``depth`` levels deep after the call was made."""
    arguments: dict[str, Any] = {}
    inner = arguments
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    call = ToolCall(id="c", name="f")
    call.arguments = arguments
    return AssistantMessage(tool_calls=[call])


# (a message made with a field of the wrong type, the words the error names it by)
MISTYPED: list[tuple[Any, str]] = [
    (UserMessage(content=123), "content is of type int, expected str"),
    (UserMessage(content=b"bytes"), "content is of type bytes, expected str"),
    (UserMessage(content=None), "content is of type NoneType, expected str"),
    (SystemMessage(content=["a"]), "content is of type list, expected str"),
    (UserMessage(content="a", attachments=["x.png"]), "attachments[0] is of type str, expected Attachment"),
    (UserMessage(content="a", id=7), "id is of type int, expected str"),
    (UserMessage(content="a", created_at="yesterday"), "created_at is of type str, expected datetime"),
    (UserMessage(content="a", meta=MessageMeta(mode="debug")), "meta.mode is 'debug'"),  # type: ignore[arg-type]
    (UserMessage(content="a", meta=MessageMeta(run_id=5)), "meta.run_id is of type int"),  # type: ignore[arg-type]
    (AssistantMessage(content=3.5), "content is of type float, expected str or None"),
    (AssistantMessage(content="a", model=1), "model is of type int"),
    (AssistantMessage(tool_calls=[ToolCall(id="c", name=5)]), "tool_calls[0].name is of type int, expected str"),
    (AssistantMessage(tool_calls=[ToolCall(id=None, name="f")]), "tool_calls[0].id is of type NoneType"),
    (AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments=[1])]), "tool_calls[0].arguments"),
    (AssistantMessage(tool_calls=[{"id": "c", "name": "f"}]), "tool_calls[0] is of type dict, expected ToolCall"),
    (
        AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments={"when": object()})]),
        "tool_calls[0].arguments cannot be written as JSON",
    ),
    (UserMessage(content="a", meta=MessageMeta(ui={"widget": object()})), "meta.ui cannot be written as JSON"),
    (AssistantMessage(content="a", reasoning=[Reasoning(text=5)]), "reasoning[0].text is of type int, expected str"),
    (AssistantMessage(content="a", reasoning=[Reasoning(signature=1)]), "reasoning[0].signature is of type int"),
    (AssistantMessage(content="a", reasoning=[Reasoning(position=-1)]), "reasoning[0].position is -1"),
    (AssistantMessage(content="a", reasoning=["thinking"]), "reasoning[0] is of type str, expected Reasoning"),
    (AssistantMessage(content="a", usage=Usage(input_tokens="3")), "usage.input_tokens is of type str"),
    (AssistantMessage(content="a", usage=Usage(output_tokens=True)), "usage.output_tokens is of type bool"),
    (AssistantMessage(content="a", error=LLMError(type="x", message=None)), "error.message is of type NoneType"),
    (ToolMessage(tool_call_id="c1", tool_name="f", content={"ok": 1}), "content is of type dict, expected str"),
    (ToolMessage(tool_call_id="c1", tool_name="f", content="ok", is_error="no"), "is_error is of type str"),
    (ToolMessage(tool_call_id="c1", tool_name="f", content="ok", duration_ms="1"), "duration_ms is of type str"),
    # Values JSON cannot hold, or holds as something else (issue 31): before, msgspec wrote bytes as base64 text, a
    # tuple or a set as a list, a datetime as text, so the stored log was no longer the log in memory; nan as null.
    *(
        (
            AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments={"v": value})]),
            f"tool_calls[0].arguments cannot be written as JSON (.v {words}",
        )
        for value, words in [
            (b"raw", "is of type bytes"),
            ((1, 2), "is a tuple"),
            ({1, 2}, "is of type set"),
            (datetime(2024, 5, 1, tzinfo=UTC), "is of type datetime"),
            ({1: "one"}, "has a key of type int"),
        ]
    ),
    (UserMessage(content="a", meta=MessageMeta(ui={"when": b"x"})), "meta.ui cannot be written as JSON (.when is"),
    (ToolMessage(tool_call_id="c1", tool_name="f", content="ok", duration_ms=float("nan")), "duration_ms is nan"),
    (ToolMessage(tool_call_id="c1", tool_name="f", content="ok", duration_ms=float("inf")), "duration_ms is inf"),
    (AssistantMessage(content="a", usage=Usage(input_tokens=-1)), "usage.input_tokens is -1, expected a count"),
    (AssistantMessage(content="a", usage=Usage(output_tokens=2**64)), "usage.output_tokens is 18446744073709551616"),
    # Arguments set deeper than the log keeps after the call was made (made so deep, it is refused at once): before,
    # 3,000 levels broke the check with RecursionError, and 200 were stored and then failed every load.
    *(
        (deep_call(depth), "tool_calls[0].arguments cannot be written as JSON (it is nested more than 128 levels deep)")
        for depth in (200, 3_000)
    ),
]
IDS = [f"{type(message).__name__}-{words.split(' ')[0]}" for message, words in MISTYPED]


def good_log() -> list[Any]:
    """A log with every kind of field set, all of the right types (none of it may be refused)."""
    return [
        SystemMessage(content="Be brief.", meta=MessageMeta(mode="agent", run_id="r1", ui={"collapsed": True})),
        UserMessage(content="Weather?"),
        AssistantMessage(
            tool_calls=[CALL],
            reasoning=[Reasoning(text="think", signature="sig", provider="anthropic"), Reasoning(position=2)],
            usage=Usage(input_tokens=3, output_tokens=4, reasoning_tokens=1),
            model="anthropic:claude",
        ),
        ToolMessage(tool_call_id="c1", tool_name="f", content="22 C", duration_ms=3),
        AssistantMessage(content="partial", error=LLMError(type="timeout", message="slow", retryable=True)),
    ]


@pytest.mark.parametrize(("message", "words"), MISTYPED, ids=IDS)
def test_the_store_refuses_it_names_it_and_writes_nothing(any_store: Store, message: Any, words: str) -> None:
    info = any_store.create_conversation()
    log = good_log()
    any_store.append(info.id, log[:2])
    before = UserMessage(content="written with it, so not written either")
    with pytest.raises(StoreError, match=r"message 1 .*cannot be stored") as refused:
        any_store.append(info.id, [before, message])
    assert words in str(refused.value) and "nothing was appended" in str(refused.value)
    # The conversation still loads, as it was.
    loaded = any_store.load(info.id)
    loaded.validate()
    assert list(loaded) == log[:2]
    assert any_store.get_conversation(info.id).message_count == 2


@pytest.mark.parametrize(("message", "words"), MISTYPED[:6], ids=IDS[:6])
def test_an_import_holding_it_is_refused_whole(any_store: Store, message: Any, words: str) -> None:
    stamp = datetime.now(UTC)
    items = [
        ImportItem(ConversationInfo(id="fine", title=None, created_at=stamp, updated_at=stamp), good_log()),
        ImportItem(
            ConversationInfo(id="bad", title=None, created_at=stamp, updated_at=stamp),
            [UserMessage(content="q"), message],
        ),
    ]
    with pytest.raises(StoreError, match=r"conversation 'bad': message 1 .*cannot be stored") as refused:
        any_store.import_conversations(items)
    assert words in str(refused.value)
    assert not any_store.has_conversation("fine") and not any_store.has_conversation("bad")


@pytest.mark.parametrize(("message", "words"), MISTYPED, ids=IDS)
def test_validate_reports_it_with_its_position(message: Any, words: str) -> None:
    log = MessageList.unchecked([UserMessage(content="q"), message])
    with pytest.raises(ProtocolError) as reported:
        log.validate()
    assert reported.value.rule == "invalid_field" and reported.value.index == 1
    assert words in str(reported.value)


def test_a_log_of_well_typed_messages_passes_everywhere(any_store: Store) -> None:
    log = good_log()
    MessageList(log).validate()
    info = any_store.create_conversation()
    any_store.append(info.id, log)
    assert list(any_store.load(info.id)) == log


@pytest.mark.parametrize("backend_store", ["sqlite", "memory", None])
def test_a_conversation_refuses_it_before_it_reaches_the_log(tmp_path: Path, backend_store: str | None) -> None:
    store = None
    if backend_store == "sqlite":
        store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    elif backend_store == "memory":
        store = open_store("memory://")
    conversation = Conversation(store=store)
    conversation.add(UserMessage(content="first"))
    with pytest.raises(UserError, match=r"content is of type int, expected str \(nothing was recorded\)"):
        conversation.add(UserMessage(content=42))
    assert [m.content for m in conversation.messages] == ["first"]
    conversation.messages.validate()
    if store is not None:
        assert [m.content for m in Conversation.load(conversation.id, store).messages] == ["first"]
        store.close()
