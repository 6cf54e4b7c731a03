"""The builder's own system prefix (mode rules, tool policy, persona, toolset instructions, the run's directive and
brief, a summary note) is paid for out of the budget before any log message: before, it was added after the window
had spent the whole budget, so a request came out far over ``max_tokens`` while its report said it was not."""

from __future__ import annotations

from threadline import assistant, user
from threadline.context import ContextBuilder, ContextSettings, RunBrief, estimate_tokens
from threadline.messages import MessageList


def _log(pairs: int = 20) -> MessageList:
    log = MessageList()
    for number in range(pairs):
        log.append(user(f"question {number} " + "q" * 80))
        log.append(assistant("answer " + "a" * 80))
    log.append(user("latest"))
    return log


def _tokens(messages: list[object]) -> int:
    return sum(estimate_tokens(message.content or "") + 4 for message in messages)  # type: ignore[attr-defined]


def test_a_long_prefix_leaves_less_room_for_the_log_and_the_request_stays_within_the_budget() -> None:
    builder = ContextBuilder(ContextSettings(max_tokens=1000))
    plain = builder.build(_log())
    heavy = builder.build(_log(), "run", persona="p" * 1200, instructions=["i" * 800])
    assert len(heavy.report.kept) < len(plain.report.kept)
    for built in (plain, heavy):
        assert _tokens(built.messages) == built.report.estimated_tokens <= 1000
        assert not built.report.over_budget
        assert built.messages[-1].content == "latest"


def test_a_prefix_over_the_budget_by_itself_is_reported_over_budget() -> None:
    builder = ContextBuilder(ContextSettings(max_tokens=1000))
    built = builder.build(
        _log(), "run", persona="p" * 2000, run_brief=RunBrief(directive="d" * 2000), instructions=["i" * 2000]
    )
    assert built.report.over_budget
    assert [message.content for message in built.messages[built.report.prefix_messages :]] == ["latest"]
    assert _tokens(built.messages) == built.report.estimated_tokens


def test_a_summary_note_is_paid_for_only_when_something_is_dropped() -> None:
    builder = ContextBuilder(ContextSettings(max_tokens=100_000))
    whole = builder.build(_log(), summary="They asked twenty questions.")
    assert whole.report.summary is None and _tokens(whole.messages) == whole.report.estimated_tokens
    tight = ContextBuilder(ContextSettings(max_tokens=600)).build(_log(), summary="They asked twenty questions.")
    assert tight.report.summary == "They asked twenty questions."
    assert _tokens(tight.messages) == tight.report.estimated_tokens <= 600
