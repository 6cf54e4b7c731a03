"""System messages the caller put in the log are log content (docs/file-format.md#system): the window keeps the log's
opening instructions whatever it trims, and a system message recorded between a tool call and its result never costs the
model the real result (issue 8, item 16)."""

from __future__ import annotations

from threadline import (
    AssistantMessage,
    ContextBuilder,
    ContextSettings,
    MessageList,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    llm,
    system,
    user,
)
from threadline.testing import ScriptedModel


def body(messages: list[object], prefix: int) -> list[tuple[str, str | None]]:
    return [(type(m).__name__, getattr(m, "content", None)) for m in messages[prefix:]]


def test_the_callers_agent_instruction_outlives_the_window() -> None:
    """The reproduction r8_agent_dropped.py: `.agent()` at the start, a window of six messages, five questions."""
    model = ScriptedModel(["a"] * 10)
    conversation = llm.model(model).agent("Always answer in French.").request("q1").prompt_conversation()
    conversation.apply_config_deltas({"context": ContextSettings(max_messages=6)})
    conversation.continuation.prompt()
    for i in range(2, 6):
        conversation.continuation.request(f"q{i}").prompt()

    last = model.requests[-1].messages
    assert last[1] == conversation.messages[0]  # right after the builder's prefix, as the log has it
    assert body(last, 1) == [
        ("SystemMessage", "Always answer in French."),
        ("UserMessage", "q3"),
        ("AssistantMessage", "a"),
        ("UserMessage", "q4"),
        ("AssistantMessage", "a"),
        ("UserMessage", "q5"),
    ]
    # Every request of the conversation carried it, also those that trimmed older turns.
    for request in model.requests:
        assert any(m.content == "Always answer in French." for m in request.messages)


def test_opening_instructions_count_against_the_budget_and_older_turns_give_way() -> None:
    log = MessageList(
        [
            system("Rule one."),
            system("Rule two."),
            user("old question"),
            AssistantMessage(content="old answer"),
            user("new question"),
        ]
    )
    built = ContextBuilder(settings=ContextSettings(max_messages=3)).build(log)
    report = built.report
    assert body(built.messages, report.prefix_messages) == [
        ("SystemMessage", "Rule one."),
        ("SystemMessage", "Rule two."),
        ("UserMessage", "new question"),
    ]
    assert report.kept == [log[0].id, log[1].id, log[4].id]
    assert {d.id: d.reason for d in report.dropped} == {
        log[2].id: "budget:max_messages",
        log[3].id: "budget:max_messages",
    }
    assert not report.over_budget
    assert report.dropped_span() == (2, 4)  # what a summarizer is asked to summarize: not the instructions


def test_a_system_message_later_in_the_log_is_history_like_any_other_message() -> None:
    """Only the instructions that open the log are kept whatever happens: a system message added later (for example
    by every ``threadline prompt -c -s …``) is trimmed with the turn it belongs to, or repeated instructions would
    crowd the turns out of the window."""
    log = MessageList(
        [
            user("q1"),
            system("Answer in French from now on."),
            AssistantMessage(content="a1"),
            user("q2"),
        ]
    )
    built = ContextBuilder(settings=ContextSettings(max_messages=2)).build(log)
    assert body(built.messages, built.report.prefix_messages) == [
        ("AssistantMessage", "a1"),
        ("UserMessage", "q2"),
    ]


def test_a_system_message_between_a_call_and_its_result_keeps_the_real_result() -> None:
    """The reproduction r12_window.py."""
    log = MessageList(
        [
            user("q"),
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments={})]),
            system("note added mid-loop"),
            ToolMessage(tool_call_id="c1", tool_name="f", content="REAL RESULT"),
        ]
    )
    log.validate()
    built = ContextBuilder().build(log)
    report = built.report
    assert body(built.messages, report.prefix_messages) == [
        ("UserMessage", "q"),
        ("AssistantMessage", None),
        ("ToolMessage", "REAL RESULT"),
        ("SystemMessage", "note added mid-loop"),  # after the result: providers want results right after the call
    ]
    assert report.synthetic == [] and report.dropped == []
    assert sorted(report.kept) == sorted(m.id for m in log)
    MessageList(built.messages).validate()


def test_system_messages_between_several_results_follow_the_whole_group() -> None:
    calls = [ToolCall(id="a", name="f", arguments={}), ToolCall(id="b", name="f", arguments={})]
    log = MessageList(
        [
            user("q"),
            AssistantMessage(tool_calls=calls),
            ToolMessage(tool_call_id="a", tool_name="f", content="A"),
            system("first note"),
            system("second note"),
            ToolMessage(tool_call_id="b", tool_name="f", content="B"),
            AssistantMessage(content="done"),
        ]
    )
    built = ContextBuilder().build(log)
    assert body(built.messages, built.report.prefix_messages) == [
        ("UserMessage", "q"),
        ("AssistantMessage", None),
        ("ToolMessage", "A"),
        ("ToolMessage", "B"),
        ("SystemMessage", "first note"),
        ("SystemMessage", "second note"),
        ("AssistantMessage", "done"),
    ]
    MessageList(built.messages).validate()


def test_an_orphan_result_behind_a_system_message_is_dropped_and_the_note_kept() -> None:
    log = [
        user("q"),
        SystemMessage(content="note"),
        ToolMessage(tool_call_id="ghost", tool_name="f", content="orphan"),
        UserMessage(content="again"),
    ]
    built = ContextBuilder().build(log)
    assert body(built.messages, built.report.prefix_messages) == [
        ("UserMessage", "q"),
        ("SystemMessage", "note"),
        ("UserMessage", "again"),
    ]
    assert [(d.id, d.reason) for d in built.report.dropped] == [(log[2].id, "orphan")]
