"""The context builder through the public API: system prefix per mode, mode switching on one log, budgets and the
report, repairs in the request only, and the summarizer."""

from __future__ import annotations

import pytest

from threadline import (
    AssistantMessage,
    ContextBuilder,
    ContextSettings,
    Conversation,
    ConversationConfig,
    LLMError,
    MessageList,
    MessageMeta,
    ModePrompts,
    RunBrief,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Toolset,
    UserMessage,
    llm,
)
from threadline.testing import ScriptedModel

BANNER = "MODE\n- active: {mode}\n- note: history may include other modes; follow current instructions."


def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def test_prefix_per_mode_has_rules_tool_policy_persona_instructions_and_banner() -> None:
    builder = ContextBuilder()
    prompts = builder.prompts
    log = [UserMessage(content="hi")]
    tools = Toolset([lookup], name="Search", instructions="Cite the search result.")

    chat = builder.build(log, "chat", persona="You are Ada.", tools=_resolved(tools)).messages[0].content
    assert chat.startswith(prompts.chat)
    assert prompts.tool_policy in chat
    assert "You are Ada." not in chat  # no persona in chat mode
    assert "Cite the search result." in chat
    assert chat.endswith(BANNER.format(mode="chat"))

    agent = builder.build(log, "agent", persona="You are Ada.", tools=_resolved(tools)).messages[0].content
    assert agent.startswith(prompts.agent)
    assert "You are Ada." in agent
    assert agent.endswith(BANNER.format(mode="agent"))

    run = builder.build(log, "run", persona="You are Ada.").messages[0].content
    assert run.startswith(prompts.agent) and "You are Ada." in run
    assert prompts.tool_policy not in run  # no tools offered, no tool policy
    assert run.endswith(BANNER.format(mode="run"))


def test_custom_mode_prompts_and_run_brief_follow_the_prefix() -> None:
    builder = ContextBuilder(
        prompts=ModePrompts(chat="CHAT RULES", agent="AGENT RULES", tool_policy="", banner="[{mode}]")
    )
    built = builder.build(
        [UserMessage(content="go")],
        "run",
        run_brief=RunBrief(directive="Ship it", node_brief="n1: test", step_context="step 1 of 2"),
    )
    contents = [m.content for m in built.messages]
    assert contents[0] == "AGENT RULES\n\n[run]"
    assert contents[1:4] == ["RUN_DIRECTIVE\nShip it", "NODE_BRIEF\nn1: test", "STEP_CONTEXT\nstep 1 of 2"]
    assert contents[4] == "go"
    assert built.report.prefix_messages == 4


def test_mode_switching_changes_only_the_prefix_and_never_resets_the_log() -> None:
    model = ScriptedModel(["chat answer", "agent answer", "run answer"])
    conv = llm.model(model).persona("You are Ada.").request("first").prompt_conversation()
    _run(conv)
    conv.continuation.mode("agent").request("second").prompt_conversation()
    _run(conv)
    conv.continuation.mode("run").request("third").prompt_conversation()
    _run(conv)

    prefixes = [request.messages[0].content for request in model.requests]
    assert prefixes[0].endswith(BANNER.format(mode="chat")) and "You are Ada." not in prefixes[0]
    assert prefixes[1].endswith(BANNER.format(mode="agent")) and "You are Ada." in prefixes[1]
    assert prefixes[2].endswith(BANNER.format(mode="run"))
    # The whole history travels with every request; nothing of the prefix is stored.
    last = [m.content for m in model.requests[2].messages[1:]]
    assert last == ["first", "chat answer", "second", "agent answer", "third"]
    assert [m.content for m in conv.messages] == [*last, "run answer"]
    assert not any(isinstance(m, SystemMessage) for m in conv.messages)
    # Messages record the mode they were produced in.
    assert [m.meta.mode for m in conv.messages if isinstance(m, AssistantMessage)] == [None, "agent", "run"]


def test_budget_drops_oldest_first_and_reports_every_drop_with_its_reason() -> None:
    log = MessageList()
    for i in range(10):
        log.append(UserMessage(content=f"question {i}"))
        log.append(AssistantMessage(content=f"answer {i}"))
    log.append(UserMessage(content="hidden", meta=MessageMeta(include_in_context=False)))
    log.append(UserMessage(content="latest"))
    built = ContextBuilder(settings=ContextSettings(max_messages=5)).build(log)
    body = [m.content for m in built.messages[built.report.prefix_messages :]]
    assert body == ["answer 7", "question 8", "answer 8", "question 9", "answer 9", "latest"][-5:]
    assert built.report.stopped_by == "max_messages"
    reasons = {d.id: d.reason for d in built.report.dropped}
    assert reasons[log[0].id] == "budget:max_messages"
    assert reasons[log[20].id] == "ui_only"
    assert built.report.dropped_count == len(reasons) == len(log) - 5
    assert not built.report.over_budget


def test_a_tool_group_is_kept_or_dropped_whole() -> None:
    call_a, call_b = ToolCall(id="a", name="lookup", arguments={}), ToolCall(id="b", name="lookup", arguments={})
    log = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=[call_a, call_b]),
        ToolMessage(tool_call_id="a", tool_name="lookup", content="x" * 40),
        ToolMessage(tool_call_id="b", tool_name="lookup", content="y" * 40),
        AssistantMessage(content="done"),
        UserMessage(content="next"),
    ]
    # Room for the two newest messages and one more: a group of three does not fit, so none of it is sent.
    built = ContextBuilder(settings=ContextSettings(max_messages=3)).build(log)
    body = built.messages[built.report.prefix_messages :]
    assert [m.content for m in body] == ["done", "next"]
    assert not any(isinstance(m, ToolMessage) for m in body)
    built = ContextBuilder(settings=ContextSettings(max_messages=5)).build(log)
    body = built.messages[built.report.prefix_messages :]
    assert [type(m).__name__ for m in body] == [
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "AssistantMessage",
        "UserMessage",
    ]


def test_when_the_must_keep_units_exceed_the_budget_they_are_sent_and_the_report_says_so() -> None:
    log = [UserMessage(content="old"), UserMessage(content="x" * 500)]
    built = ContextBuilder(settings=ContextSettings(max_chars=100)).build(log)
    assert [m.content for m in built.messages[1:]] == ["x" * 500]
    assert built.report.over_budget


def test_dangling_calls_are_answered_interrupted_in_the_request_but_not_in_the_log() -> None:
    log = MessageList(
        [
            UserMessage(content="q"),
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="lookup", arguments={"q": "x"})]),
        ]
    )
    built = ContextBuilder().build(log)
    last = built.messages[-1]
    assert isinstance(last, ToolMessage) and last.is_error and last.content.startswith("interrupted")
    assert last.tool_call_id == "c1"
    assert len(log) == 2  # the log is untouched
    assert last.id in built.report.synthetic and last.id not in built.report.kept
    MessageList(built.messages).validate()


def test_failures_are_sent_with_their_partial_output_and_an_error_block() -> None:
    failed = AssistantMessage(content="The answer is", error=LLMError(type="timeout", message="read timed out"))
    built = ContextBuilder().build([UserMessage(content="q"), failed, UserMessage(content="continue")])
    sent = built.messages[2]
    assert isinstance(sent, AssistantMessage)
    assert sent.content == "The answer is\n[LLM_ERROR type=timeout message=read timed out]"
    assert sent.error is None and sent.id == failed.id


def test_tool_results_can_be_left_out_and_ui_events_let_in() -> None:
    log = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=[ToolCall(id="c", name="lookup", arguments={})]),
        ToolMessage(tool_call_id="c", tool_name="lookup", content="secret data"),
        AssistantMessage(content="shown in the UI only", meta=MessageMeta(include_in_context=False)),
    ]
    built = ContextBuilder(settings=ContextSettings(include_tool_results=False, include_ui_events=True)).build(log)
    contents = [m.content for m in built.messages[1:]]
    assert "secret data" not in contents
    assert "[tool result omitted from context: 11 characters]" in contents
    assert "shown in the UI only" in contents


def test_token_budget_uses_the_given_counter() -> None:
    log = [UserMessage(content="one two three"), AssistantMessage(content="four five"), UserMessage(content="six")]

    def words(text: str) -> int:
        return len(text.split())

    settings = ContextSettings(max_tokens=6, token_counter=words)
    built = ContextBuilder(settings=settings).build(log)
    # "six" costs 1 + 4 overhead = 5; "four five" would bring it to 11 > 6.
    assert [m.content for m in built.messages[1:]] == ["six"]
    assert built.report.stopped_by == "max_tokens"


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_messages"):
        ContextSettings(max_messages=0)
    with pytest.raises(ValueError, match="tool_preview_chars"):
        ContextSettings(tool_preview_chars=0)


async def test_summarizer_adds_a_cached_summary_of_the_dropped_span() -> None:
    summarizer = ScriptedModel(["They discussed apples.", "They discussed apples and pears."])
    model = ScriptedModel(["a1", "a2", "a3"])
    config = ConversationConfig(model=model, context=ContextSettings(max_messages=2, summarizer=summarizer))
    conv = Conversation(config=config)
    conv.add(UserMessage(content="apples?"))
    async for _ in conv:
        pass
    assert summarizer.requests == []  # nothing dropped yet, no summary

    conv.add(UserMessage(content="pears?"))
    # Two builds of the same window: one summarizer call, then the cache.
    first = await conv.host.build_request_context(conv.host.resolve_tools())
    again = await conv.host.build_request_context(conv.host.resolve_tools())
    assert first.report.summary == again.report.summary == "They discussed apples."
    assert len(summarizer.requests) == 1
    assert summarizer.requests[0].messages[-1].content == "User: apples?"
    async for _ in conv:
        pass
    assert len(summarizer.requests) == 1
    sent = model.requests[1].messages
    assert sent[1].content == "SUMMARY OF EARLIER MESSAGES\nThey discussed apples."
    assert [m.content for m in sent[2:]] == ["a1", "pears?"]

    # More falls out of the window: the summary rolls forward from the previous one with only the new messages.
    conv.add(UserMessage(content="plums?"))
    async for _ in conv:
        pass
    assert len(summarizer.requests) == 2
    rolled = summarizer.requests[1].messages[-1].content
    assert rolled == "Summary so far:\nThey discussed apples.\n\nMessages since:\nAssistant: a1\nUser: pears?"
    sent = model.requests[2].messages
    assert sent[1].content == "SUMMARY OF EARLIER MESSAGES\nThey discussed apples and pears."
    assert [m.content for m in sent[2:]] == ["a2", "plums?"]


async def test_a_failing_summarizer_does_not_fail_the_turn() -> None:
    from threadline import ModelError

    summarizer = ScriptedModel([ModelError("summarizer down", type="server")])
    model = ScriptedModel(["a1", "a2"])
    conv = Conversation(
        config=ConversationConfig(model=model, context=ContextSettings(max_messages=1, summarizer=summarizer))
    )
    for text in ("one", "two"):
        conv.add(UserMessage(content=text))
        async for _ in conv:
            pass
    assert conv.text == "a2"
    assert not any("SUMMARY" in m.content for m in model.requests[1].messages if isinstance(m, SystemMessage))


def _resolved(toolset: Toolset):  # type: ignore[no-untyped-def]
    from threadline.tools import resolve_tools

    return resolve_tools([toolset])


def _run(conv: Conversation) -> None:
    import asyncio

    async def go() -> None:
        async for _ in conv:
            pass

    asyncio.run(go())


def test_the_report_prints_briefly_whatever_the_log_size() -> None:
    log = [UserMessage(content=f"message {i}") for i in range(5_000)]
    report = ContextBuilder().build(log).report
    text = repr(report)
    assert "kept=80 messages" in text and "dropped=4920" in text
    assert len(text) < 400 and "message 17" not in text
