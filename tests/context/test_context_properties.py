"""Property-based tests of the context builder: for random logs and random budgets, every request is a valid
protocol, carries the latest user message, respects the budget unless the units that must be kept exceed it, never
contains an orphan, and accounts for every message of the log."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import (
    AssistantMessage,
    ContextBuilder,
    ContextSettings,
    LLMError,
    MessageList,
    MessageMeta,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from threadline.context import estimate_tokens
from threadline.messages import Message

UI_ONLY = MessageMeta(include_in_context=False)
words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=60)


@dataclass
class Log:
    messages: list[Message]


@st.composite
def logs(draw: st.DrawFn) -> Log:
    """A log as the engine writes it: any mix of turns, tool groups (results possibly missing only at the very end,
    as after a crash), failures, system messages and UI-only events."""
    out: list[Message] = []
    counter = 0
    n = draw(st.integers(min_value=0, max_value=40))
    for _ in range(n):
        kind = draw(st.sampled_from(["user", "user", "text", "tools", "tools", "failure", "system", "ui"]))
        if kind == "user":
            out.append(UserMessage(content=draw(words)))
        elif kind == "text":
            out.append(AssistantMessage(content=draw(words)))
        elif kind == "failure":
            out.append(
                AssistantMessage(
                    content=draw(st.sampled_from(["", "partial answ"])),
                    error=LLMError(type="timeout", message="read timed out", retryable=True),
                )
            )
        elif kind == "system":
            out.append(SystemMessage(content=draw(words)))
        elif kind == "ui":
            out.append(
                draw(
                    st.sampled_from(
                        [
                            UserMessage(content="ui event", meta=UI_ONLY),
                            AssistantMessage(content="ui note", meta=UI_ONLY),
                            SystemMessage(content="ui banner", meta=UI_ONLY),
                        ]
                    )
                )
            )
        else:
            calls = []
            for _ in range(draw(st.integers(min_value=1, max_value=3))):
                counter += 1
                calls.append(ToolCall(id=f"call_{counter}", name="lookup", arguments={"q": draw(words)}))
            out.append(AssistantMessage(content=draw(st.sampled_from([None, "let me look"])), tool_calls=calls))
            for call in calls:
                size = draw(st.sampled_from([5, 50, 500, 3000]))
                out.append(
                    ToolMessage(
                        tool_call_id=call.id, tool_name="lookup", content="r" * size, is_error=draw(st.booleans())
                    )
                )
    # A crash may have left the final group without some of its results.
    if out and isinstance(out[-1], ToolMessage) and draw(st.booleans()):
        while out and isinstance(out[-1], ToolMessage) and draw(st.booleans()):
            out.pop()
    return Log(out)


budgets = st.builds(
    lambda **budget: ContextSettings(**budget),
    max_messages=st.integers(min_value=1, max_value=30),
    max_chars=st.integers(min_value=1, max_value=8_000),
    max_tokens=st.one_of(st.none(), st.integers(min_value=1, max_value=2_000)),
    tool_preview_chars=st.integers(min_value=10, max_value=4_000),
)


def _text(message: Message) -> str:
    """What the budget counts of a message: its text, plus each tool call's name and JSON arguments."""
    if isinstance(message, AssistantMessage):
        calls = "".join(call.name + json.dumps(call.arguments, separators=(",", ":")) for call in message.tool_calls)
        return (message.content or "") + calls
    return message.content


def _sendable(message: Message) -> bool:
    return message.meta.include_in_context


def _opening_ids(items: list[Message]) -> set[str]:
    """The sendable system messages opening the log: the caller's instructions, always sent."""
    return {m.id for m in itertools.takewhile(lambda m: isinstance(m, SystemMessage), items) if _sendable(m)}


def _last_unit_ids(items: list[Message]) -> set[str]:
    """Ids of the newest unit: the last sendable message, or the last tool group with its results."""
    sendable = [m for m in items if _sendable(m)]
    if not sendable:
        return set()
    last = sendable[-1]
    if isinstance(last, ToolMessage) or (isinstance(last, AssistantMessage) and last.tool_calls):
        ids: set[str] = set()
        for message in reversed(sendable):
            ids.add(message.id)
            if isinstance(message, AssistantMessage) and message.tool_calls:
                break
        return ids
    return {last.id}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs(), budget=budgets, mode=st.sampled_from(["chat", "agent", "run"]))
def test_every_request_is_valid_and_within_budget(log: Log, budget: ContextSettings, mode: str) -> None:
    items = log.messages
    saved: dict[str, str] = {}

    def sink(name: str, content: str) -> str:
        saved[name] = content
        return f"artifact://conv/{name}"

    built = ContextBuilder(settings=budget).build(MessageList(items), mode, artifacts=sink, conversation_id="conv")
    report = built.report
    request = built.messages
    prefix = request[: report.prefix_messages]
    body = request[report.prefix_messages :]

    # 1. The request is a valid protocol with every call answered.
    whole = MessageList(request)
    whole.validate()
    assert whole.pending_tool_calls() == []
    assert all(isinstance(m, SystemMessage) for m in prefix)
    assert f"- active: {mode}" in prefix[0].content

    # 2. The latest user message is always there, and what follows it is the current turn.
    by_id = {m.id: i for i, m in enumerate(items)}
    users = [m for m in items if isinstance(m, UserMessage) and _sendable(m)]
    body_from_log = [m for m in body if m.id in by_id]
    if users:
        latest = users[-1]
        assert latest.id in {m.id for m in body}
    # Log messages keep their order.
    positions = [by_id[m.id] for m in body_from_log]
    assert positions == sorted(positions)

    # 3. Nothing UI-only, nothing without its call; failures carry the error block.
    for message in body:
        assert message.meta.include_in_context
        if isinstance(message, AssistantMessage):
            assert message.error is None
            original = items[by_id[message.id]]
            assert isinstance(original, AssistantMessage)
            if original.error is not None:
                assert message.content is not None and message.content.endswith("message=read timed out]")

    # 4. The budget holds, unless the units that must be kept alone exceed it.
    n_chars = sum(len(_text(m)) for m in body)
    n_tokens = sum(estimate_tokens(_text(m)) + 4 for m in body)
    if report.over_budget:
        must_keep = _last_unit_ids(items) | ({users[-1].id} if users else set()) | _opening_ids(items)
        assert {m.id for m in body_from_log} <= must_keep
    else:
        assert len(body) <= budget.max_messages
        assert n_chars <= budget.max_chars
        if budget.max_tokens is not None:
            assert n_tokens <= budget.max_tokens

    # 5. Large outputs are previews pointing at a saved artifact, where the preview is shorter than the output; the
    # full text is kept aside.
    for message in body:
        if isinstance(message, ToolMessage) and message.id in by_id:
            original = items[by_id[message.id]]
            assert isinstance(original, ToolMessage)
            limit, size = budget.tool_preview_chars, len(original.content)
            uri = f"artifact://conv/{original.tool_call_id}"
            tail = f"\n…\n[{size} characters in all; showing the first {limit}]\nFull output: {uri}"
            if size > limit + len(tail):
                assert message.content.endswith(tail) and len(message.content) < size
                assert message.content.startswith(original.content[: budget.tool_preview_chars])
                assert saved[original.tool_call_id] == original.content
            else:
                assert message.content == original.content

    # 6. Every log message is either kept or dropped with a reason, never both.
    kept = set(report.kept)
    dropped = {d.id for d in report.dropped}
    assert kept.isdisjoint(dropped)
    assert kept | dropped == {m.id for m in items}
    assert kept == {m.id for m in body_from_log}


@settings(max_examples=200, deadline=None)
@given(log=logs(), budget=budgets)
def test_older_history_is_dropped_first(log: Log, budget: ContextSettings) -> None:
    """Before the latest user message the window is one contiguous stretch ending at it (past the system messages
    opening the log, which are always sent)."""
    items = log.messages
    built = ContextBuilder(settings=budget).build(items)
    kept = set(built.report.kept)
    assert _opening_ids(items) <= kept
    users = [i for i, m in enumerate(items) if isinstance(m, UserMessage) and _sendable(m)]
    if not users:
        return
    latest = users[-1]
    opening = len(list(itertools.takewhile(lambda m: isinstance(m, SystemMessage), items)))
    before = [i for i in range(opening, latest) if items[i].id in kept]
    if not before:
        return
    for i in range(min(before), latest):
        if _sendable(items[i]):
            assert items[i].id in kept, f"message {i} dropped inside the kept stretch"


@st.composite
def messy_logs(draw: st.DrawFn) -> Log:
    """Logs no engine writes (orphan and duplicate results, results after the next user message): the builder must
    still send only valid protocol. Each extra message is a new one (its own id), as in any log."""
    base = draw(logs()).messages
    extra = draw(
        st.lists(
            st.sampled_from(
                [
                    lambda: ToolMessage(tool_call_id="ghost", tool_name="lookup", content="orphan"),
                    lambda: ToolMessage(tool_call_id="call_1", tool_name="lookup", content="duplicate"),
                    lambda: UserMessage(content="interjection"),
                ]
            ).map(lambda make: make()),
            max_size=4,
        )
    )
    for message in extra:
        base.insert(draw(st.integers(min_value=0, max_value=len(base))), message)
    return Log(base)


@settings(max_examples=300, deadline=None)
@given(log=messy_logs(), budget=budgets)
def test_messy_logs_still_give_valid_requests(log: Log, budget: ContextSettings) -> None:
    built = ContextBuilder(settings=budget).build(log.messages)
    whole = MessageList(built.messages)
    whole.validate()
    assert whole.pending_tool_calls() == []


@settings(max_examples=150, deadline=None)
@given(log=messy_logs(), budget=budgets)
def test_a_conversations_cache_never_changes_a_request(log: Log, budget: ContextSettings) -> None:
    """Successive requests of one conversation reuse shaped tool units from a cache; whatever the log does between
    builds (results arriving, messages appended), each request equals a build from scratch."""
    builder = ContextBuilder(settings=budget)
    cache: dict[object, object] = {}

    def sink(name: str, content: str) -> str:
        return f"artifact://conv/{name}"

    items = log.messages
    for end in range(len(items) + 1):
        prefix = items[:end]
        warm = builder.build(prefix, "chat", artifacts=sink, conversation_id="conv", cache=cache)
        cold = builder.build(prefix, "chat", artifacts=sink, conversation_id="conv")
        assert [(m.role, m.id, m.content) for m in warm.messages if m.id not in warm.report.synthetic] == [
            (m.role, m.id, m.content) for m in cold.messages if m.id not in cold.report.synthetic
        ]
        assert warm.report.kept == cold.report.kept
        assert [d.id for d in warm.report.dropped] == [d.id for d in cold.report.dropped]
        assert warm.report.artifacts == cold.report.artifacts
        assert (warm.report.chars, warm.report.estimated_tokens) == (cold.report.chars, cold.report.estimated_tokens)
