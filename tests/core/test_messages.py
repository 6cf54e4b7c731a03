"""The log's message kinds, their constructors and metadata, `MessageList` and its protocol check
(docs/file-format.md#message-kinds)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

import threadline
from threadline import (
    AssistantMessage,
    Attachment,
    LLMError,
    MessageList,
    MessageMeta,
    ProtocolError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    assistant,
    system,
    user,
)

ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


# -- kinds --------------------------------------------------------------------------------------------------------
def test_each_kind_is_a_msgspec_struct_tagged_by_role() -> None:
    samples = {
        "system": SystemMessage(content="rules"),
        "user": UserMessage(content="hi"),
        "assistant": AssistantMessage(content="hello"),
        "tool": ToolMessage(tool_call_id="c1", tool_name="f", content="42"),
    }
    for role, message in samples.items():
        assert isinstance(message, msgspec.Struct)
        assert msgspec.to_builtins(message)["role"] == role


def test_field_defaults_match_the_design() -> None:
    u = UserMessage(content="hi")
    assert u.attachments == []
    a = AssistantMessage()
    assert (a.content, a.tool_calls, a.error, a.model, a.usage) == (None, [], None, None, None)
    t = ToolMessage(tool_call_id="c1", tool_name="f", content="x")
    assert t.is_error is False
    assert t.duration_ms is None
    meta = MessageMeta()
    assert (meta.mode, meta.run_id, meta.node_id, meta.agent_id) == (None, None, None, None)
    assert meta.include_in_context is True
    assert meta.ui == {}


def test_ids_are_ulids_unique_and_sorted_in_creation_order() -> None:
    ids = [UserMessage(content=str(i)).id for i in range(5000)]
    assert all(ULID.match(i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)


def test_created_at_is_now_in_utc() -> None:
    before = datetime.now(UTC)
    message = user("hi")
    after = datetime.now(UTC)
    assert message.created_at.tzinfo is not None
    assert message.created_at.utcoffset() == timedelta(0)
    assert before <= message.created_at <= after


def test_constructors_build_the_right_kinds() -> None:
    image = Attachment.image(b"\x89PNG\r\n\x1a\n0000")
    s, u, a = system("rules"), user("look", attachments=[image]), assistant("ok")
    assert type(s) is SystemMessage and s.content == "rules"
    assert type(u) is UserMessage and u.content == "look" and u.attachments == [image]
    assert type(a) is AssistantMessage and a.content == "ok" and a.tool_calls == []
    assert image.media_type == "image/png"
    assert threadline.system is system and threadline.user is user and threadline.assistant is assistant


def test_every_constructor_and_class_takes_meta() -> None:
    meta = MessageMeta(mode="agent", run_id="r1", node_id="n1", agent_id="a1", include_in_context=False, ui={"w": 1})
    made = [
        system("x", meta=meta),
        user("x", meta=meta),
        assistant("x", meta=meta),
        SystemMessage(content="x", meta=meta),
        UserMessage(content="x", meta=meta),
        AssistantMessage(content="x", meta=meta),
        ToolMessage(tool_call_id="c", tool_name="f", content="x", meta=meta),
    ]
    assert all(message.meta is meta for message in made)


def test_shared_default_meta_refuses_writes_to_ui_with_a_clear_error() -> None:
    first, second = user("a"), user("b")
    with pytest.raises(TypeError, match="shared default meta"):
        first.meta.ui["collapsed"] = True
    with pytest.raises(TypeError, match="shared default meta"):
        first.meta.ui.update(collapsed=True)
    with pytest.raises(TypeError, match="shared default meta"):
        first.meta.ui.setdefault("collapsed", True)
    assert second.meta.ui == {}


def test_shared_default_meta_refuses_in_place_union() -> None:
    first, second = user("a"), assistant("b")
    ui = first.meta.ui
    with pytest.raises(TypeError, match="shared default meta"):
        ui |= {"collapsed": True}
    assert second.meta.ui == {}


def test_a_message_given_its_own_meta_can_carry_ui_extras() -> None:
    message = user("a")
    message.meta = MessageMeta(ui={"collapsed": True})
    message.meta.ui["widget"] = "card"
    assert message.meta.ui == {"collapsed": True, "widget": "card"}
    assert user("b").meta.ui == {}


def test_messages_without_tool_calls_or_attachments_refuse_in_place_writes() -> None:
    bare, other = AssistantMessage(content="a"), AssistantMessage(content="b")
    call = ToolCall(id="c1", name="f")
    for write in (
        lambda: bare.tool_calls.append(call),
        lambda: bare.tool_calls.extend([call]),
        lambda: bare.tool_calls.insert(0, call),
    ):
        with pytest.raises(TypeError, match="give it its own first"):
            write()
    with pytest.raises(TypeError, match="give it its own first"):
        user("x").attachments.append(Attachment.image(b"\x89PNG\r\n\x1a\nxx"))
    with pytest.raises(TypeError, match="give it its own first"):
        calls = AssistantMessage().tool_calls
        calls += [call]
    assert other.tool_calls == [] and user("y").attachments == []


def test_a_message_given_its_own_list_can_grow_it() -> None:
    message = AssistantMessage(content="a")
    message.tool_calls = [ToolCall(id="c1", name="f")]
    message.tool_calls.append(ToolCall(id="c2", name="g"))
    assert [c.id for c in message.tool_calls] == ["c1", "c2"]
    assert AssistantMessage().tool_calls == []
    assert AssistantMessage(tool_calls=[]).tool_calls == []
    assert MessageList([AssistantMessage(tool_calls=[])]).to_dict()["messages"][0].get("tool_calls") is None


def test_own_metas_do_not_share_their_ui_dict() -> None:
    one, two = MessageMeta(), MessageMeta()
    one.ui["x"] = 1
    assert two.ui == {}


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=3, output_tokens=4) + Usage(input_tokens=10, output_tokens=1)
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (13, 5, 18)


def test_attachment_rejects_bad_kinds_and_mentions_without_ref() -> None:
    with pytest.raises(ValueError, match="unknown attachment kind"):
        Attachment("video")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a ref"):
        Attachment("mention")


def test_image_attachment_from_a_path_reads_the_bytes_now(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "pic.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\nDATA")
    image = Attachment.image(path)
    path.unlink()  # the log stays self-contained
    assert image.read_bytes() == b"\x89PNG\r\n\x1a\nDATA"
    assert image.media_type == "image/png"
    assert image.name == "pic.png"


# -- MessageList ----------------------------------------------------------------------------------------------
def test_messagelist_is_a_mutable_sequence_of_messages() -> None:
    log = MessageList()
    assert len(log) == 0 and not log
    a, b, c = user("a"), assistant("b"), user("c")
    log.append(a)
    log.extend([b, c])
    assert len(log) == 3
    assert list(log) == [a, b, c]
    assert log[0] is a and log[-1] is c
    assert log == [a, b, c]


def test_slices_are_messagelists_and_copies_are_independent() -> None:
    log = MessageList([user("a"), assistant("b"), user("c")])
    head = log[:2]
    assert isinstance(head, MessageList)
    assert list(head) == list(log)[:2]
    head.append(assistant("d"))
    assert len(log) == 3
    copy = log.copy()
    assert isinstance(copy, MessageList) and copy == log
    copy.append(assistant("e"))
    assert len(log) == 3 and len(copy) == 4


def test_messagelist_refuses_things_that_are_not_messages() -> None:
    with pytest.raises(TypeError, match="item 0 is a dict"):
        MessageList([{"role": "user", "content": "x"}])  # type: ignore[list-item]
    log = MessageList([user("a")])
    with pytest.raises(TypeError, match="item 1 is a str"):
        log.append("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 2 is a int"):
        log.extend([assistant("b"), 3])  # type: ignore[list-item]
    assert len(log) == 1  # nothing partial


# -- validate ------------------------------------------------------------------------------------------------
def _assistant_calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name="f", arguments={}) for i in ids])


def _result(call_id: str) -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, tool_name="f", content="ok")


def test_a_complete_log_validates() -> None:
    log = MessageList(
        [
            system("rules"),
            user("q"),
            _assistant_calls("c1", "c2"),
            _result("c2"),
            _result("c1"),
            AssistantMessage(content="answer"),
            user("again"),
            _assistant_calls("c3"),
            _result("c3"),
            AssistantMessage(error=LLMError(type="server", message="boom", retryable=True), content="par"),
        ]
    )
    log.validate()


def test_a_log_ending_with_unanswered_calls_validates() -> None:
    MessageList([user("q"), _assistant_calls("c1", "c2"), _result("c1")]).validate()
    MessageList([user("q"), _assistant_calls("c1")]).validate()


def test_orphan_tool_result_is_refused_with_index_and_rule() -> None:
    log = MessageList([user("q"), _result("nope")])
    with pytest.raises(ProtocolError, match=r"message 1: .*'nope'") as info:
        log.validate()
    assert (info.value.index, info.value.rule) == (1, "orphan")


def test_result_answering_a_call_of_another_earlier_turn_is_an_orphan() -> None:
    log = MessageList([user("q"), _assistant_calls("c1"), _result("c1"), assistant("a"), _result("c1")])
    with pytest.raises(ProtocolError) as info:
        log.validate()
    assert info.value.index == 4
    assert info.value.rule in ("orphan", "duplicate")


def test_duplicate_result_is_refused() -> None:
    log = MessageList([user("q"), _assistant_calls("c1", "c2"), _result("c1"), _result("c1")])
    with pytest.raises(ProtocolError, match="more than once") as info:
        log.validate()
    assert (info.value.index, info.value.rule) == (3, "duplicate")


def test_results_after_the_next_user_message_are_refused() -> None:
    log = MessageList([user("q"), _assistant_calls("c1"), user("hurry"), _result("c1")])
    with pytest.raises(ProtocolError, match="'c1'") as info:
        log.validate()
    assert info.value.index == 2
    assert info.value.rule == "unanswered"


def test_results_after_the_next_assistant_message_are_refused() -> None:
    log = MessageList([user("q"), _assistant_calls("c1"), assistant("done"), _result("c1")])
    with pytest.raises(ProtocolError) as info:
        log.validate()
    assert info.value.index == 2
    assert info.value.rule == "unanswered"


def test_the_same_call_id_twice_in_one_message_is_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        MessageList([user("q"), _assistant_calls("c1", "c1")]).validate()
    assert info.value.index == 1


def test_pending_tool_calls_lists_what_a_crash_left() -> None:
    log = MessageList([user("q"), _assistant_calls("c1", "c2", "c3"), _result("c2")])
    assert [c.id for c in log.pending_tool_calls()] == ["c1", "c3"]
    log.extend([_result("c1"), _result("c3")])
    assert log.pending_tool_calls() == []


def test_names_may_be_str_subclasses() -> None:
    import enum

    class Name(enum.StrEnum):
        NOTES = "Notes.add"

    call = ToolCall(id="c1", name=Name.NOTES)
    result = ToolMessage(tool_call_id="c1", tool_name=Name.NOTES, content="ok")
    assert call.name == "Notes.add" and result.tool_name == "Notes.add"
    assert AssistantMessage(model=Name.NOTES).model == "Notes.add"
    MessageList([user("q"), AssistantMessage(tool_calls=[call]), result]).validate()


def test_two_messages_with_one_id_break_the_protocol() -> None:
    call = _assistant_calls("c1")
    result = ToolMessage(id=call.id, tool_call_id="c1", tool_name="f", content="ok")
    with pytest.raises(ProtocolError, match="already the id of message 1") as info:
        MessageList([user("q"), call, result]).validate()
    assert info.value.index == 2 and info.value.rule == "duplicate_message_id"
