"""The log's text rule: lone surrogates become U+FFFD wherever text enters the log, times are UTC, values nest at most
`MAX_NESTING` deep — so every log in memory can be written as JSON and read back (issue 8, item 2).

A lone surrogate is what ``os.fsdecode``/``os.listdir`` give for a file name that is not UTF-8, what ``sys.argv`` and
stdin give for such bytes, and what a JSON ``"\\ud800"`` escape decodes to.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Attachment,
    LLMError,
    MessageList,
    MessageListDeserializationError,
    MessageMeta,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from threadline._text import MAX_NESTING, replace_surrogates, replace_surrogates_in

BAD = os.fsdecode(b"report-\xff.txt")  # 'report-\udcff.txt'
FIXED = "report-\ufffd.txt"


def roundtrip(log: MessageList) -> MessageList:
    """The log written as JSON and read back; fails the test if either step raises."""
    text = log.to_json()
    text.encode("utf-8")  # the JSON is real UTF-8 text
    again = MessageList.from_json(text)
    assert again == log
    return again


# -- the rule itself ---------------------------------------------------------------------------------------------
def test_lone_surrogates_become_the_replacement_character() -> None:
    assert BAD == "report-\udcff.txt"
    assert replace_surrogates(BAD) == FIXED
    assert replace_surrogates("\ud800x\udfff") == "\ufffdx\ufffd"


def test_a_surrogate_pair_is_joined_into_its_character() -> None:
    assert replace_surrogates("smile \ud83d\ude00") == "smile \U0001f600"


def test_clean_text_is_returned_as_is() -> None:
    text = "naïve café ☕ \U0001f600"
    assert replace_surrogates(text) is text
    value = {"a": [1, "é", {"b": None}]}
    assert replace_surrogates_in(value) is value


def test_nested_values_are_cleaned_keys_included() -> None:
    cleaned = replace_surrogates_in({BAD: [BAD, {"k": (BAD, 1)}], "n": 2.5})
    assert cleaned == {FIXED: [FIXED, {"k": (FIXED, 1)}], "n": 2.5}


# -- every message constructor -------------------------------------------------------------------------------------
def test_every_text_field_of_every_message_follows_the_rule() -> None:
    meta = MessageMeta(run_id=BAD, node_id=BAD, agent_id=BAD, ui={BAD: {"nested": [BAD]}})
    log = MessageList(
        [
            SystemMessage(content=BAD, meta=meta),
            UserMessage(
                content=BAD,
                attachments=[Attachment("file", data=b"\xff", name=BAD, path=BAD), Attachment.mention(BAD, object())],
            ),
            AssistantMessage(
                id=f"a-{BAD}",
                content=BAD,
                model=BAD,
                tool_calls=[ToolCall(id=f"c-{BAD}", name=BAD, arguments={BAD: BAD, "list": [BAD]})],
            ),
            ToolMessage(tool_call_id=f"c-{BAD}", tool_name=BAD, content=BAD),
            AssistantMessage(
                content=BAD,
                tool_calls=[ToolCall(id="c2", name="f", raw_arguments=f"{{{BAD}")],
                error=LLMError(type=BAD, message=BAD),
            ),
        ]
    )
    system, user, called, result, failed = log
    assert system.content == FIXED
    assert system.meta.run_id == system.meta.node_id == system.meta.agent_id == FIXED
    assert system.meta.ui == {FIXED: {"nested": [FIXED]}}
    assert user.content == FIXED
    assert [a.name for a in user.attachments] == [FIXED, None]
    assert user.attachments[0].path == FIXED and user.attachments[1].ref == FIXED
    assert called.id == f"a-{FIXED}" and called.content == FIXED and called.model == FIXED
    call = called.tool_calls[0]
    assert (call.id, call.name, call.arguments) == (f"c-{FIXED}", FIXED, {FIXED: FIXED, "list": [FIXED]})
    assert (result.tool_call_id, result.tool_name, result.content) == (f"c-{FIXED}", FIXED, FIXED)
    assert failed.tool_calls[0].raw_arguments == f"{{{FIXED}"
    assert failed.error == LLMError(type=FIXED, message=FIXED)
    log.validate()  # the result still answers its call: both ids were cleaned alike
    roundtrip(log)


def test_a_tool_result_holding_a_file_name_that_is_not_utf8_can_be_saved() -> None:
    log = MessageList(
        [
            UserMessage(content="list my files"),
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="list_files", arguments={})]),
            ToolMessage(tool_call_id="c1", tool_name="list_files", content=BAD),
        ]
    )
    assert roundtrip(log)[2].content == FIXED


# -- every reader --------------------------------------------------------------------------------------------------
ESCAPED = "report-\\udcff.txt"  # as a JSON escape: what json.dumps writes for BAD


def readers_with_escapes() -> list[tuple[str, str]]:
    v2 = {
        "version": "2.0",
        "messages": [
            {"role": "user", "id": "u1", "created_at": "2024-01-01T00:00:00Z", "content": "@"},
            {
                "role": "assistant",
                "id": "a1",
                "created_at": "2024-01-01T00:00:01Z",
                "tool_calls": [{"id": "c1", "name": "@", "arguments": {"@": "@"}}],
            },
            {"role": "tool", "id": "t1", "created_at": "2024-01-01T00:00:02Z", "tool_call_id": "c1",
             "tool_name": "@", "content": "@"},
        ],
    }  # fmt: skip
    fluent = {
        "version": "1.0",
        "messages": [
            {"type": "TextMessage", "role": "user", "text": "@"},
            {"type": "ToolCallMessage", "tool_name": "@", "tool_call_id": "c1", "arguments": {"@": "@"}, "result": "@"},
        ],
    }
    openai = [
        {"role": "user", "content": "@"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "@", "arguments": '{"%": "%"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "@"},
    ]
    return [
        ("2.0", json.dumps(v2).replace("@", ESCAPED)),
        ("1.0", json.dumps(fluent).replace("@", ESCAPED)),
        # The arguments are JSON text inside JSON: their escape is escaped once more.
        ("openai", json.dumps(openai).replace("@", ESCAPED).replace("%", ESCAPED.replace("\\", "\\\\"))),
    ]


@pytest.mark.parametrize(("form", "text"), readers_with_escapes(), ids=[r[0] for r in readers_with_escapes()])
def test_surrogate_escapes_in_json_are_read_under_the_rule(form: str, text: str) -> None:
    for log in (MessageList.from_json(text), MessageList.from_dict(json.loads(text))):
        texts = [m.content for m in log]
        assert FIXED in texts[0]
        call = next(m for m in log if isinstance(m, AssistantMessage)).tool_calls[0]
        assert call.name == FIXED and call.arguments == {FIXED: FIXED}
        assert next(m for m in log if isinstance(m, ToolMessage)).content == FIXED
        log.validate()
        roundtrip(log)


# -- times ---------------------------------------------------------------------------------------------------------
def test_times_are_kept_in_utc() -> None:
    paris = timezone(timedelta(hours=2))
    message = UserMessage(content="hi", created_at=datetime(2024, 5, 1, 12, 0, tzinfo=paris))
    assert message.created_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert message.created_at.tzinfo is UTC
    naive = UserMessage(content="hi", created_at=datetime(2024, 5, 1, 12, 0))
    assert naive.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    roundtrip(MessageList([message, naive]))


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_a_time_with_no_utc_equivalent_is_refused_by_every_reader(stamp: str) -> None:
    document = {"version": "2.0", "messages": [{"role": "user", "content": "hi", "created_at": stamp}]}
    with pytest.raises(MessageListDeserializationError, match=r"messages\[0\]") as info:
        MessageList.from_json(json.dumps(document))
    assert "UTC" in str(info.value)
    with pytest.raises(MessageListDeserializationError, match=r"messages\[0\]"):
        MessageList.from_dict(document)


def test_a_time_with_no_utc_equivalent_is_refused_by_the_constructor() -> None:
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-1)))
    with pytest.raises(ValueError, match="UTC"):
        UserMessage(content="hi", created_at=late)


# -- nesting -------------------------------------------------------------------------------------------------------
def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return value


def test_arguments_nested_deeper_than_the_limit_are_refused() -> None:
    ToolCall(id="c", name="f", arguments={"x": nested(MAX_NESTING - 1)})
    with pytest.raises(ValueError, match="nested"):
        ToolCall(id="c", name="f", arguments={"x": nested(MAX_NESTING + 5)})
    with pytest.raises(ValueError, match="nested"):
        SystemMessage(content="x", meta=MessageMeta(ui={"x": nested(MAX_NESTING + 5)}))


@pytest.mark.parametrize("depth", [MAX_NESTING + 5, 900])
def test_deep_arguments_in_any_reader_are_a_deserialization_error(depth: int) -> None:
    arguments = {"x": nested(depth)}
    v2 = {"version": "2.0", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "name": "f",
          "arguments": arguments}]}]}  # fmt: skip
    fluent = {"version": "1.0", "messages": [{"type": "ToolCallMessage", "tool_name": "f", "tool_call_id": "c",
              "arguments": arguments, "result": "ok"}]}  # fmt: skip
    openai = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": arguments}}]}]
    for document in (v2, fluent, openai):
        with pytest.raises(MessageListDeserializationError):
            MessageList.from_dict(document)


def test_deep_arguments_given_as_json_text_are_kept_raw() -> None:
    raw = json.dumps({"x": nested(MAX_NESTING + 5)})
    openai = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": raw}}]}]
    log = MessageList.from_dict(openai)
    call = log[0].tool_calls[0]
    assert call.raw_arguments == raw and call.arguments == {}
    roundtrip(log)


def test_text_set_after_a_message_was_made_is_cleaned_when_it_is_written() -> None:
    message = AssistantMessage(content="fine", tool_calls=[ToolCall(id="c1", name="f", arguments={"a": 1})])
    message.content = BAD  # attribute assignment: the constructor never saw this text
    message.tool_calls[0].arguments = {"path": BAD}
    log = MessageList([message])
    again = MessageList.from_json(log.to_json())
    assert again[0].content == FIXED and again[0].tool_calls[0].arguments == {"path": FIXED}
    assert message.content == FIXED  # fixed in place: memory and what was written agree
    assert again == log


def test_a_message_changed_after_it_was_made_can_still_be_stored() -> None:
    from threadline.store import open_store

    with open_store("memory://") as store:
        info = store.create_conversation()
        message = UserMessage(content="fine")
        message.content = BAD
        store.append(info.id, [message])
        assert store.load(info.id)[0].content == FIXED


@pytest.mark.parametrize(
    "content",
    ["\\ud800", "x\\ud800", "\\ud800x", "\\uDBFF", "ab\\udc80", "\\ud83d\\ude00 and \\ud800"],
    ids=["high alone", "high at the end", "high then one char", "upper-case hex", "low at the end", "pair then lone"],
)
def test_a_lone_surrogate_escape_anywhere_in_a_string_reads_as_the_replacement(content: str) -> None:
    """Before, a lone high surrogate near the end of a string was "not valid JSON: Input data was truncated" (msgspec's
    words for it, which named no surrogate, so the reader that takes such escapes was never asked)."""
    text = '[{"role": "user", "content": "' + content + '"}]'
    [message] = MessageList.from_json(text)
    assert message.content == json.loads(f'"{content}"').encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert "\ufffd" in message.content
    [again] = MessageList.from_json(text.encode("utf-8"))
    assert again.content == message.content
