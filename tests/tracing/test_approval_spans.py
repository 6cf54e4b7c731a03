"""What a tracing back end shows of tool calls that wait: an event on the turn's span for each request (and each
approval by rule), ``stop_reason=awaiting``, a short span per decision made between turns, an approved call's
``execute_tool`` span marked approved, and a tool that asks for approval not shown as failed. Reasons are content:
recorded only with ``include_content=True``, and masked of secrets like every other content."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import StatusCode

from threadline import (
    ApprovalRequired,
    AssistantMessage,
    Conversation,
    ConversationConfig,
    ToolCall,
    tool,
)
from threadline.store import open_store
from threadline.testing import ScriptedModel
from threadline.tools import call_approved

from .conftest import Spans

SECRET = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"


def calls(*pairs: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=id, name=name, arguments=arguments) for id, name, arguments in pairs]
    )


paid: list[float] = []


@tool(approval=lambda arguments: f"{arguments['amount']} is a lot" if arguments["amount"] > 10 else False)
def pay(amount: float) -> str:
    """Pay someone."""
    paid.append(amount)
    return f"paid {amount}"


@tool(external=True)
def sign(document: str) -> str:
    """A person signs a document (the result comes from outside)."""
    raise AssertionError("never run here")


@tool
def transfer(amount: float) -> str:
    """Move money; asks for approval over 100."""
    if amount > 100 and not call_approved():
        raise ApprovalRequired(f"{amount} is over the limit of 100")
    return f"moved {amount}"


@tool(approval=lambda arguments: f"uses key {arguments['api_key']}")
def deploy(api_key: str) -> str:
    """Deploy with a key."""
    return "deployed"


def attributes(item: Any) -> dict[str, Any]:
    return dict(item.attributes or {})


def events(span: Any, prefix: str = "threadline.approval.") -> list[tuple[str, dict[str, Any]]]:
    return [(event.name, attributes(event)) for event in span.events if event.name.startswith(prefix)]


def conversation(tmp_path: Any, answers: list[Any], tools: list[Any]) -> Conversation:
    store = open_store(str(tmp_path / "log.db"))
    return Conversation(config=ConversationConfig(model=ScriptedModel(answers), tools=tools), store=store)


def test_a_waiting_call_is_an_event_of_its_turn_which_stops_awaiting(spans: Spans, tmp_path: Any) -> None:
    paid.clear()
    chat = conversation(tmp_path, [calls(("c1", "pay", {"amount": 50}), ("c2", "pay", {"amount": 2})), "Paid."], [pay])
    chat.continuation.request("pay").prompt()

    turn = spans.one("invoke_agent threadline")
    assert attributes(turn)["threadline.turn.stop_reason"] == "awaiting"
    assert events(turn) == [
        (
            "threadline.approval.requested",
            {
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.name": "pay",
                "threadline.approval.kind": "approval",
                "threadline.approval.state": "requested",
            },
        )
    ]  # no reason without content
    # The call that needed no approval ran; the one that waits has no execute_tool span yet.
    [ran] = spans.named("execute_tool pay")
    assert attributes(ran)["gen_ai.tool.call.id"] == "c2"
    assert paid == [2]
    assert turn.status.status_code is StatusCode.UNSET


def test_a_decision_between_turns_is_a_span_and_the_approved_call_runs_marked_approved(
    spans: Spans, tmp_path: Any
) -> None:
    paid.clear()
    chat = conversation(tmp_path, [calls(("c1", "pay", {"amount": 50})), "Paid."], [pay])
    chat.continuation.request("pay").prompt()
    chat.approve("c1", by="alice", reason="known payee")

    decision = spans.one("approve pay")
    assert decision.parent is None  # nothing was current: a root span, found by its conversation id
    assert attributes(decision)["gen_ai.conversation.id"] == chat.id
    assert attributes(decision)["threadline.approval.by"] == "alice"
    assert events(decision) == [
        (
            "threadline.approval.approved",
            {
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.name": "pay",
                "threadline.approval.kind": "approval",
                "threadline.approval.state": "approved",
                "threadline.approval.by": "alice",
            },
        )
    ]

    assert chat.resume().stop_reason == "end"
    assert paid == [50]
    _first, second = spans.named("invoke_agent threadline")
    assert attributes(second)["threadline.turn.stop_reason"] == "end"
    run = spans.one("execute_tool pay")
    assert run.parent is not None and run.parent.span_id == second.context.span_id
    assert attributes(run)["threadline.tool.approved"] is True
    assert run.status.status_code is StatusCode.UNSET


def test_a_decision_made_inside_a_span_is_its_child(spans: Spans, tmp_path: Any) -> None:
    chat = conversation(tmp_path, [calls(("c1", "pay", {"amount": 50})), "No."], [pay])
    chat.continuation.request("pay").prompt()
    outer_tracer = spans.provider.get_tracer("web")
    with outer_tracer.start_as_current_span("POST /approve") as outer:
        chat.deny("c1", by="bob", reason="too much")
    denial = spans.one("deny pay")
    assert denial.parent is not None and denial.parent.span_id == outer.get_span_context().span_id
    [(name, event)] = events(denial)
    assert name == "threadline.approval.denied" and event["threadline.approval.by"] == "bob"
    assert "threadline.approval.reason" not in event
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_a_submitted_result_is_a_span(spans: Spans, tmp_path: Any) -> None:
    chat = conversation(tmp_path, [calls(("c1", "sign", {"document": "lease"})), "Signed."], [sign])
    chat.continuation.request("sign it").prompt()
    [(_, requested)] = events(spans.one("invoke_agent threadline"))
    assert requested["threadline.approval.kind"] == "external"
    chat.submit_result("c1", "signed by Carol")
    submitted = spans.one("submit_result sign")
    assert attributes(submitted)["threadline.tool.result.is_error"] is False
    assert "gen_ai.tool.call.result" not in attributes(submitted)  # content only with include_content
    assert [name for name, _ in events(submitted)] == ["threadline.approval.submitted"]
    assert chat.resume().text == "Signed."


def test_a_tool_that_asks_for_approval_is_not_a_failed_span(spans: Spans, tmp_path: Any) -> None:
    chat = conversation(tmp_path, [calls(("c1", "transfer", {"amount": 500})), "Moved."], [transfer])
    chat.continuation.request("move 500").prompt()
    asked = spans.one("execute_tool transfer")
    assert asked.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes(asked)
    assert attributes(asked)["threadline.tool.awaiting"] == "approval"
    turn = spans.one("invoke_agent threadline")
    assert attributes(turn)["threadline.turn.stop_reason"] == "awaiting"
    assert [name for name, _ in events(turn)] == ["threadline.approval.requested"]

    chat.approve("c1", by="alice")
    assert chat.resume().text == "Moved."
    ran = [span for span in spans.named("execute_tool transfer") if span is not asked]
    assert len(ran) == 1 and attributes(ran[0])["threadline.tool.approved"] is True
    assert ran[0].status.status_code is StatusCode.UNSET


def test_approval_by_rule_is_an_event_of_the_turn_that_runs_the_call(spans: Spans, tmp_path: Any) -> None:
    paid.clear()
    chat = conversation(
        tmp_path,
        [calls(("c1", "pay", {"amount": 50})), "Paid.", calls(("c2", "pay", {"amount": 60})), "Paid again."],
        [pay],
    )
    chat.continuation.request("pay").prompt()
    chat.approve("c1", by="alice", scope="conversation")
    assert attributes(spans.one("approve pay"))["threadline.approval.scope"] == "conversation"
    chat.resume()
    assert chat.continuation.request("pay again").prompt() == "Paid again."
    third = spans.named("invoke_agent threadline")[-1]
    assert events(third) == [
        (
            "threadline.approval.approved",
            {
                "gen_ai.tool.call.id": "c2",
                "gen_ai.tool.name": "pay",
                "threadline.approval.kind": "approval",
                "threadline.approval.state": "approved",
                "threadline.approval.by": "rule",
            },
        ),
        (  # written just before the call runs: a crash inside it would make it wait for a person again
            "threadline.approval.started",
            {
                "gen_ai.tool.call.id": "c2",
                "gen_ai.tool.name": "pay",
                "threadline.approval.kind": "approval",
                "threadline.approval.state": "started",
            },
        ),
    ]
    assert paid == [50, 60]


def test_reasons_are_content_and_masked_of_secrets(spans: Spans, tmp_path: Any) -> None:
    spans.instrument(include_content=True)
    chat = conversation(tmp_path, [calls(("c1", "deploy", {"api_key": "hunter2-very-secret"})), "Done."], [deploy])
    chat.continuation.request("deploy").prompt()
    [(_, requested)] = events(spans.one("invoke_agent threadline"))
    assert requested["threadline.approval.reason"].startswith("uses key ")
    chat.approve("c1", by="alice", reason=f"key {SECRET} checked")
    [(_, approved)] = events(spans.one("approve deploy"))
    assert approved["threadline.approval.reason"].startswith("key ")
    chat.resume()
    text = spans.text()
    assert "hunter2-very-secret" not in text
    assert SECRET not in text
