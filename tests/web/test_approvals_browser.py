"""Tool calls that wait, in the viewer (Chromium): a call that needs a decision shows its arguments, why it waits and
the buttons; approving runs it once and the answer streams in; denying logs the reason and the model goes on; an
external call takes its result from the page; a call decided elsewhere first is refused with a clear message and
nothing written; the list shows and filters the conversations that wait."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.web._data import off_loop, simple_conversation
from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, tool
from threadline.store import Store
from threadline.testing import ScriptedModel

ARGUMENTS = {"amount": 5, "to": "<b>bob</b> & <script>alert(1)</script>"}


def payments(ran: list[tuple[float, str]]) -> Any:
    @tool(approval=True)
    def pay(amount: float, to: str) -> str:
        """Pay someone."""
        ran.append((amount, to))
        return f"paid {amount} to {to}"

    return pay


@tool(external=True)
def ask_accountant(question: str) -> str:
    """Ask the accountant (a person answers outside the program)."""
    raise AssertionError("an external tool never runs here")


@off_loop
def waiting_conversation(store: Store, model: ScriptedModel, tools: list[Any], call: ToolCall) -> Conversation:
    """A conversation whose turn ended "awaiting": the model made ``call``, which waits."""
    conv = Conversation(config=ConversationConfig(model=model, tools=tools), store=store)
    assert conv.continuation.request("Please pay bob.").prompt() == ""
    assert conv.last_turn is not None and conv.last_turn.stop_reason == "awaiting"
    return conv


def pay_call(call_id: str = "pay-1") -> ToolCall:
    return ToolCall(id=call_id, name="pay", arguments=ARGUMENTS)


def test_approve_runs_the_call_once_and_the_answer_streams_in(sqlite_store, serve, page) -> None:
    ran: list[tuple[float, str]] = []
    pay = payments(ran)
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()]), "Paid bob 5."], name="scripted")
    conv = waiting_conversation(sqlite_store, model, [pay], pay_call())
    served = serve(sqlite_store, model=model, tools=[pay])

    page.goto(f"{served.url}/c/{conv.id}")
    group = page.locator("#call-pay-1")
    expect(group.locator(".tool-status")).to_have_text("awaiting approval")
    # The arguments as text: the page never takes markup from the log.
    expect(group.locator("pre.arguments")).to_contain_text('"to": "<b>bob</b> & <script>alert(1)</script>"')
    expect(group.locator("b")).to_have_count(0)
    assert page.dialogs == []
    expect(group.locator(".wait-reason")).to_have_text("pay needs approval")
    expect(group.get_by_role("button", name="Deny")).to_be_visible()
    # A turn ended "awaiting" is no message of its own: the user's question and the call, nothing else.
    expect(page.locator("#items > .msg")).to_have_count(2)

    expect(page.locator("#live-state")).to_have_text("live")
    group.get_by_placeholder("Reason (optional)").fill("invoice 42")
    group.get_by_role("button", name="Approve").click()

    expect(page.locator("#items")).to_contain_text("Paid bob 5.")
    expect(group.locator(".tool-status")).to_have_text("ok")
    expect(group.locator(".decision-line")).to_contain_text("approved by viewer")
    expect(group.locator(".decision-line")).to_contain_text("invoice 42")
    expect(group.locator("pre.output")).to_have_text(f"paid 5.0 to {ARGUMENTS['to']}")
    expect(group.get_by_role("button", name="Approve")).to_have_count(0)
    assert ran == [(5.0, ARGUMENTS["to"])]
    log = sqlite_store.load(conv.id)
    log.validate()
    # requested, approved, started (written just before the call ran), its result, the answer
    assert [m.role for m in log] == ["user", "assistant", "approval", "approval", "approval", "tool", "assistant"]
    assert log[3].by == "viewer" and log[3].reason == "invoice 42"

    # After a reload the group reads the same, and no approval entry is shown as a message of its own.
    page.reload()
    expect(group.locator(".decision-line")).to_contain_text("approved by viewer")
    expect(group.locator(".tool-status")).to_have_text("ok")
    expect(page.locator("#items > .msg")).to_have_count(3)
    assert ran == [(5.0, ARGUMENTS["to"])]


def test_deny_with_a_reason_and_the_model_answers(sqlite_store, serve, page) -> None:
    ran: list[tuple[float, str]] = []
    pay = payments(ran)
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()]), "Understood, I will not pay."], name="scripted")
    conv = waiting_conversation(sqlite_store, model, [pay], pay_call())
    served = serve(sqlite_store, model=model, tools=[pay])

    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    group = page.locator("#call-pay-1")
    group.get_by_placeholder("Reason (optional)").fill("not this month")
    group.get_by_role("button", name="Deny").click()

    expect(page.locator("#items")).to_contain_text("Understood, I will not pay.")
    expect(group.locator(".decision-line")).to_contain_text("denied by viewer")
    expect(group.locator(".decision-line")).to_contain_text("not this month")
    expect(group.locator(".tool-status")).to_have_text("error")
    expect(group.locator("pre.output")).to_have_text("denied by viewer: not this month")
    assert ran == []
    log = sqlite_store.load(conv.id)
    log.validate()
    assert log[-1].content == "Understood, I will not pay."


def test_an_external_call_takes_its_result_from_the_page(sqlite_store, serve, page) -> None:
    call = ToolCall(id="ask-1", name="ask_accountant", arguments={"question": "Is the invoice paid?"})
    model = ScriptedModel([AssistantMessage(tool_calls=[call]), "The accountant says it is paid."], name="scripted")
    conv = waiting_conversation(sqlite_store, model, [ask_accountant], call)
    served = serve(sqlite_store, model=model, tools=[ask_accountant])

    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    group = page.locator("#call-ask-1")
    expect(group.locator(".tool-status")).to_have_text("awaiting result")
    expect(group.get_by_role("button", name="Approve")).to_have_count(0)
    group.get_by_label("Result of ask_accountant").fill("Yes, paid on the 3rd.")
    group.get_by_role("button", name="Submit result").click()

    expect(page.locator("#items")).to_contain_text("The accountant says it is paid.")
    expect(group.locator(".tool-status")).to_have_text("ok")
    expect(group.locator("pre.output")).to_have_text("Yes, paid on the 3rd.")
    expect(group.locator(".decision-line")).to_contain_text("answered from outside")
    sqlite_store.load(conv.id).validate()


def test_a_call_decided_elsewhere_first_is_refused_with_nothing_written(sqlite_store, serve, page) -> None:
    ran: list[tuple[float, str]] = []
    pay = payments(ran)
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()]), "never sent"], name="scripted")
    conv = waiting_conversation(sqlite_store, model, [pay], pay_call())
    served = serve(sqlite_store, model=model, tools=[pay])
    # This page does not hear of the other decision (as a page whose live updates lag behind): it still offers
    # the buttons when the other process has decided.
    page.route("**/events*", lambda route: route.abort())
    page.goto(f"{served.url}/c/{conv.id}")
    group = page.locator("#call-pay-1")
    expect(group.get_by_role("button", name="Approve")).to_be_visible()

    @off_loop
    def decide_elsewhere() -> None:
        Conversation.load(conv.id, sqlite_store, ConversationConfig(tools=[pay])).deny("pay-1", by="alice")

    decide_elsewhere()
    before = sqlite_store.load(conv.id).to_json()
    group.get_by_role("button", name="Approve").click()

    status = group.locator(".decide-status")
    expect(status).to_contain_text("Nothing was recorded")
    expect(status).to_contain_text("denied already, by alice")
    expect(status).to_have_class("decide-status bad")
    assert sqlite_store.load(conv.id).to_json() == before
    assert ran == []


def test_a_decision_made_elsewhere_shows_live(sqlite_store, serve, page) -> None:
    ran: list[tuple[float, str]] = []
    pay = payments(ran)
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()])], name="scripted")
    conv = waiting_conversation(sqlite_store, model, [pay], pay_call())
    served = serve(sqlite_store, model=model, tools=[pay])
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    group = page.locator("#call-pay-1")
    expect(group.get_by_role("button", name="Approve")).to_be_visible()

    @off_loop
    def approve_elsewhere() -> None:
        Conversation.load(conv.id, sqlite_store, ConversationConfig(tools=[pay])).approve("pay-1", by="alice")

    approve_elsewhere()
    expect(group.locator(".tool-status")).to_have_text("approved · not run yet")
    expect(group.locator(".decision-line")).to_contain_text("approved by alice")
    expect(group.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.locator("#items > .msg")).to_have_count(2)


def test_the_list_shows_and_filters_the_conversations_that_wait(sqlite_store, serve, page) -> None:
    pay = payments([])
    model = ScriptedModel([AssistantMessage(tool_calls=[pay_call()])], name="scripted")
    waiting = waiting_conversation(sqlite_store, model, [pay], pay_call())
    plain = simple_conversation(sqlite_store, "Plain question", "Plain answer")
    served = serve(sqlite_store, model=model, tools=[pay])

    page.goto(served.url)
    rows = page.locator(".conv-row")
    expect(rows).to_have_count(2)
    waiting_row = rows.filter(has=page.locator(f'a[href="/c/{waiting.id}"]'))
    plain_row = rows.filter(has=page.locator(f'a[href="/c/{plain.id}"]'))
    expect(waiting_row.locator(".badge.waits")).to_have_text("awaiting approval")
    expect(plain_row.locator(".badge.waits")).to_have_count(0)
    page.get_by_role("link", name="Only those waiting").click()
    expect(page).to_have_url(f"{served.url}/?awaiting=1")
    expect(rows).to_have_count(1)
    expect(waiting_row).to_have_count(1)
    page.get_by_role("link", name="Show all").click()
    expect(rows).to_have_count(2)


def test_a_turn_from_the_composer_that_waits_and_an_approval_for_the_rest(sqlite_store, serve, page) -> None:
    ran: list[tuple[float, str]] = []
    pay = payments(ran)
    first = ToolCall(id="pay-a", name="pay", arguments={"amount": 1, "to": "ann"})
    second = ToolCall(id="pay-b", name="pay", arguments={"amount": 2, "to": "ben"})
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[first]), AssistantMessage(tool_calls=[second]), "Paid ann and ben."],
        name="scripted",
    )
    conv = simple_conversation(sqlite_store, "Hello", "Hi.", model="scripted")
    served = serve(sqlite_store, model=model, tools=[pay])
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    page.get_by_label("Message").fill("Pay ann 1 and ben 2")
    page.get_by_role("button", name="Send").click()

    group = page.locator("#call-pay-a")
    expect(group.locator(".tool-status")).to_have_text("awaiting approval")
    expect(page.locator("#turn-status")).to_contain_text("waits for a decision")
    group.get_by_label("approve pay for the rest of this conversation").check()
    group.get_by_role("button", name="Approve").click()

    expect(page.locator("#items")).to_contain_text("Paid ann and ben.")
    expect(group.locator(".decision-line")).to_contain_text("for the rest of this conversation")
    expect(page.locator("#call-pay-b .tool-decision")).to_have_text("approved by rule")
    assert ran == [(1.0, "ann"), (2.0, "ben")]
    sqlite_store.load(conv.id).validate()
