"""Tool calls that wait for a person or for a result from outside, on `ScriptedModel` turns with a real SQLite
store: the wait is in the log, any holder of the store decides it, and the next turn goes on from there."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import (
    ApprovalMessage,
    ApprovalRequired,
    AssistantMessage,
    AwaitingDecision,
    Conversation,
    ConversationConfig,
    ToolCall,
    ToolMessage,
    UserError,
    llm,
    tool,
)
from threadline import user as user_message
from threadline.engine.waits import started_entry
from threadline.message_list import call_waits
from threadline.messages import arguments_sha256
from threadline.store import open_store
from threadline.testing import ScriptedModel
from threadline.tools import call_approved


def calls(*items: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items])


class Bank:
    """Tools that record what they did, so a test sees how often each ran."""

    def __init__(self) -> None:
        self.paid: list[tuple[float, str]] = []
        self.looked: list[str] = []

        @tool(approval=True)
        def pay(amount: float, to: str) -> str:
            """Pay someone."""
            self.paid.append((amount, to))
            return f"paid {amount:g} to {to}"

        @tool
        def lookup(name: str) -> str:
            """Look someone up."""
            self.looked.append(name)
            return f"{name} is a friend"

        self.pay, self.lookup = pay, lookup


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "approvals.db")) as opened:
        yield opened


def waiting_turn(store, bank: Bank, *answers: Any) -> tuple[Conversation, ScriptedModel]:
    model = ScriptedModel(
        [calls(("c1", "pay", {"amount": 5, "to": "bob"}), ("c2", "lookup", {"name": "bob"})), *answers]
    )
    conversation = Conversation(config=ConversationConfig(model=model, tools=[bank.pay, bank.lookup]), store=store)
    assert conversation.continuation.request("Pay bob 5").prompt() == ""
    return conversation, model


def test_a_call_that_needs_approval_waits_and_the_others_run(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank)

    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "awaiting"
    assert bank.paid == [] and bank.looked == ["bob"]
    [waiting] = conversation.awaiting
    assert (waiting.call.id, waiting.tool, waiting.kind) == ("c1", "pay", "approval")
    assert waiting.arguments_sha256 == arguments_sha256(waiting.call)
    assert [m.role for m in conversation.messages] == ["user", "assistant", "approval", "tool"]
    stored = store.load(conversation.id)
    stored.validate()
    assert stored == conversation.messages
    assert len(model.requests) == 1  # the turn did not go back to the model


def test_approve_from_another_process_then_resume_runs_the_call_once(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank, "Done: paid bob.")
    config = ConversationConfig(model=model, tools=[bank.pay, bank.lookup])
    elsewhere = Conversation.load(conversation.id, store, config)

    decision = elsewhere.approve("c1", by="alice", reason="known payee")
    assert (decision.state, decision.by, decision.reason) == ("approved", "alice", "known payee")
    result = elsewhere.resume()

    assert result.stop_reason == "end" and result.text == "Done: paid bob."
    assert bank.paid == [(5.0, "bob")]
    log = store.load(conversation.id)
    assert [m.role for m in log] == [
        "user",
        "assistant",
        "approval",
        "tool",
        "approval",
        "approval",
        "tool",
        "assistant",
    ]
    entries = [(m.state, m.by) for m in log if isinstance(m, ApprovalMessage)]
    assert entries == [("requested", None), ("approved", "alice"), ("started", None)]  # started: just before it ran
    sent = model.requests[-1].messages
    assert not any(isinstance(m, ApprovalMessage) for m in sent)
    # results go to the model in call order, whatever order they were logged in
    assert [m.content for m in sent if isinstance(m, ToolMessage)] == ["paid 5 to bob", "bob is a friend"]
    store.load(conversation.id).validate()
    again = elsewhere.resume()  # nothing to go on from: nothing runs, the model is not asked
    assert (again.stop_reason, again.new_messages, len(model.requests)) == ("end", [], 2)
    assert bank.paid == [(5.0, "bob")]


def test_a_second_decision_on_the_same_call_is_refused_and_nothing_is_written(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank)
    other = Conversation.load(conversation.id, store)
    other.deny("c1", by="bob", reason="not today")
    before = store.load(conversation.id)

    with pytest.raises(AwaitingDecision, match="denied already, by bob"):
        conversation.approve("c1", by="alice")  # this object had not seen the denial: it catches up first
    assert store.load(conversation.id) == before
    assert conversation.messages == before


def test_deny_logs_the_decision_and_the_result_the_model_reads(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank, "Understood, I did not pay.")
    conversation.deny("c1", by="carol", reason="over budget")
    assert [m.role for m in conversation.messages][-2:] == ["approval", "tool"]
    denial = conversation.messages[-1]
    assert isinstance(denial, ToolMessage) and denial.is_error
    assert denial.content == "denied by carol: over budget"
    assert conversation.awaiting == []

    assert conversation.resume().text == "Understood, I did not pay."
    assert bank.paid == []
    assert "denied by carol: over budget" in [m.content for m in model.requests[-1].messages]


def test_edited_arguments_are_checked_against_the_schema_and_used(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank, "ok")
    before = list(conversation.messages)
    with pytest.raises(UserError, match="do not fit tool 'pay'"):
        conversation.approve("c1", arguments={"amount": "lots", "to": "bob"})
    assert list(store.load(conversation.id)) == before

    conversation.approve("c1", by="alice", arguments={"amount": 4.5, "to": "bob"})
    conversation.resume()
    assert bank.paid == [(4.5, "bob")]
    approved = [m for m in conversation.messages if isinstance(m, ApprovalMessage) and m.state == "approved"]
    assert approved[0].arguments == {"amount": 4.5, "to": "bob"}
    assert approved[0].arguments_sha256 == arguments_sha256(
        ToolCall(id="c1", name="pay", arguments={"amount": 5, "to": "bob"})
    )


def test_a_decision_bound_to_other_arguments_is_refused(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank)
    with pytest.raises(UserError, match="not the ones this decision was made on"):
        conversation.approve("c1", arguments_sha256="0" * 64)
    assert conversation.awaiting[0].call.id == "c1"
    conversation.approve("c1", arguments_sha256=conversation.awaiting[0].arguments_sha256)
    assert conversation.awaiting == []


def test_a_new_request_while_calls_wait_is_refused_naming_them(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank)
    before = list(conversation.messages)
    with pytest.raises(AwaitingDecision, match=r"c1 \(pay: approve or deny") as raised:
        conversation.continuation.request("And pay carol too").prompt()
    assert raised.value.calls == ["c1"]
    assert list(store.load(conversation.id)) == before
    with pytest.raises(AwaitingDecision):
        conversation.add(AssistantMessage(content="x"))
    assert len(model.requests) == 1


def test_a_turn_started_while_calls_wait_ends_at_once(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank)
    result = conversation.resume()
    assert result.stop_reason == "awaiting" and result.new_messages == []
    assert len(model.requests) == 1


def test_unknown_calls_and_calls_of_another_conversation_are_refused(store) -> None:
    bank = Bank()
    first, _ = waiting_turn(store, bank)
    second, _ = waiting_turn(store, Bank())
    # Ids are made unique within a log only: the second conversation's call is "c1" too. A call id that exists in
    # the second conversation only:
    second_only = ScriptedModel([calls(("only-b", "pay", {"amount": 1, "to": "x"}))])
    third = Conversation(config=ConversationConfig(model=second_only, tools=[bank.pay]), store=store)
    third.continuation.request("pay x").prompt()
    for call_id, why in (("nope", "no such call"), ("only-b", "no such call"), ("c2", "it has its result already")):
        with pytest.raises(AwaitingDecision, match=why):
            first.approve(call_id)
    assert first.awaiting[0].call.id == "c1"
    assert second.awaiting[0].call.id == "c1"


def test_an_external_tool_waits_for_its_result(store) -> None:
    @tool(external=True)
    def pick_file(prompt: str) -> str:
        """Ask the user's browser for a file."""
        raise AssertionError("an external tool's body never runs here")

    model = ScriptedModel([calls(("f1", "pick_file", {"prompt": "Which report?"})), "Got report.pdf."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[pick_file]), store=store)
    conversation.continuation.request("Summarise my report").prompt()
    [waiting] = conversation.awaiting
    assert waiting.kind == "external" and "from outside" in (waiting.reason or "")
    with pytest.raises(AwaitingDecision, match="waits for a result from outside, not a decision"):
        conversation.approve("f1")

    conversation.submit_result("f1", {"name": "report.pdf", "pages": 3})
    assert conversation.resume().text == "Got report.pdf."
    result = model.requests[-1].messages[-1]
    assert isinstance(result, ToolMessage) and result.content == '{"name":"report.pdf","pages":3}'
    store.load(conversation.id).validate()


def test_a_tool_asks_for_approval_from_its_arguments(store) -> None:
    paid: list[tuple[float, bool]] = []

    @tool
    def pay(amount: float) -> str:
        """Pay."""
        if amount > 100 and not call_approved():
            raise ApprovalRequired(f"{amount:g} is over the limit of 100")
        paid.append((amount, call_approved()))
        return "paid"

    model = ScriptedModel([calls(("small", "pay", {"amount": 20}), ("big", "pay", {"amount": 500})), "Both paid."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[pay]), store=store)
    conversation.continuation.request("Pay both").prompt()
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "awaiting"
    assert paid == [(20.0, False)]
    assert [(w.call.id, w.reason) for w in conversation.awaiting] == [("big", "500 is over the limit of 100")]
    conversation.approve("big", by="dana")
    assert conversation.resume().text == "Both paid."
    assert paid == [(20.0, False), (500.0, True)]
    store.load(conversation.id).validate()


def test_a_rule_of_the_tool_decides_from_the_arguments(store) -> None:
    ran: list[str] = []

    @tool(approval=lambda arguments: "deletes everything" if arguments["path"] == "/" else False)
    def delete(path: str) -> str:
        """Delete a path."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel([calls(("a", "delete", {"path": "/tmp/x"}), ("b", "delete", {"path": "/"}))])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[delete]), store=store)
    conversation.continuation.request("clean up").prompt()
    assert ran == ["/tmp/x"]
    assert [(w.call.id, w.reason) for w in conversation.awaiting] == [("b", "deletes everything")]


def test_a_rule_that_raises_makes_the_call_wait(store) -> None:
    def broken(call: ToolCall) -> bool:
        raise KeyError("limits")

    bank = Bank()
    model = ScriptedModel([calls(("l", "lookup", {"name": "eve"}))])
    conversation = llm.model(model).tools(bank.lookup).approval(broken).store(store).prompt_conversation()
    conversation.run_sync()
    [waiting] = conversation.awaiting
    assert "approval rule of lookup failed" in (waiting.reason or "") and bank.looked == []


def test_the_builders_policy_is_a_default_a_tool_can_override(store) -> None:
    ran: list[str] = []

    @tool
    def read(name: str) -> str:
        """Read."""
        ran.append(name)
        return "text"

    @tool(approval=False)
    def ping() -> str:
        """Ping."""
        ran.append("ping")
        return "pong"

    model = ScriptedModel([calls(("r", "read", {"name": "notes"}), ("p", "ping", {}))])
    llm.model(model).tools(read, ping).approval(True).store(store).request("go").prompt()
    assert ran == ["ping"]
    with pytest.raises(UserError, match="approval must be True, False or a function"):
        llm.approval("yes")  # type: ignore[arg-type]


def test_approval_for_the_rest_of_the_conversation_is_logged_as_by_rule(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(
        store,
        bank,
        "Paid bob.",
        calls(("c3", "pay", {"amount": 7, "to": "carol"})),
        "Paid carol.",
    )
    conversation.approve("c1", by="alice", scope="conversation")
    conversation.resume()
    assert conversation.continuation.request("Now pay carol 7").prompt() == "Paid carol."
    assert bank.paid == [(5.0, "bob"), (7.0, "carol")]
    rule, started = [m for m in conversation.messages if isinstance(m, ApprovalMessage)][-2:]
    assert (rule.tool_call_id, rule.state, rule.by) == ("c3", "approved", "rule")
    assert (started.tool_call_id, started.state) == ("c3", "started")
    store.load(conversation.id).validate()


def test_a_dangling_call_is_answered_interrupted_but_a_waiting_one_never_is(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank)
    waits = call_waits(conversation.messages)
    assert waits.dangling == [] and [w.call.id for w in waits.waiting] == ["c1"]
    conversation.resume()  # a turn's repair runs first: it must leave c1 alone
    assert not any(isinstance(m, ToolMessage) and m.tool_call_id == "c1" for m in conversation.messages)


async def test_resume_in_async_code_runs_the_approved_call(store) -> None:
    bank = Bank()
    model = ScriptedModel([calls(("c1", "pay", {"amount": 5, "to": "bob"})), "Paid."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[bank.pay]), store=store)
    assert await conversation.continuation.request("pay").prompt_async() == ""
    conversation.approve("c1", by="alice")
    roles = [message.role async for message in conversation.run()]
    assert roles == ["approval", "tool", "assistant"] and bank.paid == [(5.0, "bob")]


def test_declaring_approval_wrongly_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="approval must be True, False or a function"):
        tool(approval="always")(lambda: None)  # type: ignore[call-overload]
    with pytest.raises(UserError, match="external tool waits for its result already"):
        tool(approval=True, external=True)(lambda: None)
    with pytest.raises(ValueError, match="approval must be True, False or a function"):
        Conversation().apply_config_deltas({"approval": 3})


def test_prompt_on_a_continuation_with_no_new_request_goes_on_after_the_decision(store) -> None:
    bank = Bank()
    conversation, model = waiting_turn(store, bank, "Paid bob 5.")
    conversation.approve("c1", by="alice")
    assert conversation.continuation.prompt() == "Paid bob 5."
    assert bank.paid == [(5.0, "bob")]
    assert [m.role for m in model.requests[-1].messages][-3:] == ["assistant", "tool", "tool"]


def test_a_resumed_turn_is_not_forced_to_call_the_tool_again(store) -> None:
    bank = Bank()
    model = ScriptedModel([calls(("c1", "pay", {"amount": 5, "to": "bob"})), "Paid."])
    conversation = llm.model(model).tools(bank.pay).tool_choice("pay").store(store).request("pay").prompt_conversation()
    conversation.run_sync()
    assert model.requests[0].tool_choice == "pay"
    conversation.approve("c1")
    assert conversation.resume().text == "Paid."
    assert model.requests[1].tool_choice is None  # the turn goes on from the decided call: it was forced once


def test_an_approved_call_whose_tool_is_missing_is_not_run_as_an_unknown_tool(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank, "Paid.")
    conversation.approve("c1", by="alice")
    bare = Conversation.load(conversation.id, store, ConversationConfig(model=ScriptedModel(["never"])))
    before = list(bare.messages)
    with pytest.raises(UserError, match=r"approved call c1 cannot run: this conversation has no tool 'pay'"):
        bare.resume()
    assert list(store.load(conversation.id)) == before
    assert conversation.resume().text == "Paid."  # with its tools it runs
    assert bank.paid == [(5.0, "bob")]


def test_a_fork_at_a_waiting_call_keeps_its_wait(store) -> None:
    bank = Bank()
    conversation, _ = waiting_turn(store, bank)
    call_message = conversation.messages[1]
    forked = conversation.fork(at=call_message.id)
    assert [m.role for m in forked.messages] == ["user", "assistant", "approval", "tool"]
    assert [w.call.id for w in forked.awaiting] == ["c1"]
    stored = store.fork_conversation(conversation.id, call_message.id)
    assert [m.role for m in store.load(stored.id)] == ["user", "assistant", "approval", "tool"]


def test_a_page_read_from_the_tail_starts_at_the_call_of_its_approval_entries(store) -> None:
    from threadline.store.base import whole_tool_groups

    bank = Bank()
    conversation, _ = waiting_turn(store, bank, "Paid.")
    conversation.approve("c1", by="alice")
    conversation.resume()
    # user, assistant(calls), approval, tool, approval, approval, tool, assistant: the last four start with an
    # approval entry
    page = whole_tool_groups(store, conversation.id, store.read_tail(conversation.id, 4))
    assert [m.role for m in page.messages] == [
        "assistant",
        "approval",
        "tool",
        "approval",
        "approval",
        "tool",
        "assistant",
    ]


def stopped_while_running(store, bank: Bank, *, idempotent: bool) -> tuple[Conversation, ScriptedModel]:
    """A conversation whose approved call began to run and whose process stopped before the result was logged: the
    log as a kill -9 inside the tool leaves it (the crash itself is tests/store/test_approval_crashes.py's)."""
    paid: list[float] = []

    @tool(approval=True, idempotent=idempotent)
    def pay(amount: float, to: str) -> str:
        """Pay someone."""
        paid.append(amount)
        bank.paid.append((amount, to))
        return "paid"

    model = ScriptedModel([calls(("c1", "pay", {"amount": 5, "to": "bob"})), "Paid."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[pay]), store=store)
    conversation.continuation.request("pay").prompt()
    conversation.approve("c1", by="alice")
    conversation.record(started_entry(ToolCall(id="c1", name="pay", arguments={"amount": 5, "to": "bob"})))
    return Conversation.load(conversation.id, store, conversation.config), model


def test_an_approved_call_that_stopped_while_running_waits_for_a_person_again(store) -> None:
    bank = Bank()
    conversation, model = stopped_while_running(store, bank, idempotent=False)
    result = conversation.resume()
    assert result.stop_reason == "awaiting" and bank.paid == [] and len(model.requests) == 1
    [waiting] = conversation.awaiting
    assert waiting.call.id == "c1" and "may have run" in (waiting.reason or "")
    with pytest.raises(AwaitingDecision):
        conversation.continuation.request("hello?").prompt()
    conversation.approve("c1", by="alice", reason="it did not go through")  # a person decides: run it again
    assert conversation.resume().text == "Paid."
    assert bank.paid == [(5.0, "bob")]
    states = [m.state for m in conversation.messages if isinstance(m, ApprovalMessage)]
    assert states == ["requested", "approved", "started", "requested", "approved", "started"]
    store.load(conversation.id).validate()


def test_an_idempotent_tool_stopped_while_running_runs_again_without_asking(store) -> None:
    bank = Bank()
    conversation, _ = stopped_while_running(store, bank, idempotent=True)
    assert conversation.resume().text == "Paid."
    assert bank.paid == [(5.0, "bob")]
    states = [m.state for m in conversation.messages if isinstance(m, ApprovalMessage)]
    assert states == ["requested", "approved", "started"]  # no second start: it runs again as it is
    store.load(conversation.id).validate()


def test_a_recovered_turn_reruns_idempotent_calls_and_asks_about_the_others(store) -> None:
    """What a durable worker's recovery does with the calls its dead predecessor left without results (the crash
    itself is the durable tests'): here the log as it leaves them, an answer whose calls have no results."""
    ran: list[str] = []

    @tool(idempotent=True)
    def lookup(name: str) -> str:
        """Look up."""
        ran.append(name)
        return f"{name} is a friend"

    @tool
    def send(text: str) -> str:
        """Send a message."""
        ran.append(text)
        return "sent"

    model = ScriptedModel(["Sent, and bob is a friend."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[lookup, send]), store=store)
    conversation.add(user_message("look bob up and send hi"))
    conversation.record(calls(("l1", "lookup", {"name": "bob"}), ("s1", "send", {"text": "hi"}), ("u1", "gone", {})))

    result = conversation.run_sync(recover=True)
    assert result.stop_reason == "awaiting" and ran == ["bob"] and len(model.requests) == 0
    [waiting] = conversation.awaiting
    assert waiting.call.id == "s1" and "may have run" in (waiting.reason or "")
    unknown = next(m for m in conversation.messages if isinstance(m, ToolMessage) and m.tool_call_id == "u1")
    assert unknown.content.startswith("interrupted")
    conversation.approve("s1", by="alice")
    assert conversation.resume().text == "Sent, and bob is a friend."
    assert ran == ["bob", "hi"]
    store.load(conversation.id).validate()


def test_without_recovery_the_calls_a_crash_left_are_answered_interrupted(store) -> None:
    bank = Bank()
    model = ScriptedModel(["Sorry, that was interrupted."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[bank.lookup]), store=store)
    conversation.add(user_message("look bob up"))
    conversation.record(calls(("l1", "lookup", {"name": "bob"})))
    assert conversation.run_sync().text == "Sorry, that was interrupted."
    assert bank.looked == []
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage) and result.content.startswith("interrupted")
