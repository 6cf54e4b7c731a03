"""Tool calls that wait, from the command line, as a user runs it: ``threadline awaiting``, ``approve``, ``deny``,
``submit`` and ``resume`` in subprocesses on a SQLite store whose conversation a ScriptedModel turn left waiting;
the model that goes on after a decision is the fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.cli._run import run_cli
from tests.providers.servers import Answer, FakeOpenAI
from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, ToolMessage
from threadline.message_list import call_waits
from threadline.message_types import ApprovalMessage
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel

MODEL = "openai:gpt-4o-mini"

TOOLS = '''
from pathlib import Path

from threadline import tool

PAID = Path({paid!r})


@tool(approval=True)
def pay(amount: float, to: str) -> str:
    """Pay someone."""
    with PAID.open("a", encoding="utf-8") as file:
        file.write(f"{{amount:g}} {{to}}\\n")
    return f"paid {{amount:g}} to {{to}}"


@tool(external=True)
def ask_human(question: str) -> str:
    """Ask a person, who answers later."""
    raise AssertionError("an external tool is never run here")
'''


class Shop:
    """A tools module on disk (for ``-T FILE:pay``), the same module imported here, and a store."""

    def __init__(self, tmp_path: Path) -> None:
        self.paid = tmp_path / "paid.txt"
        self.module_path = tmp_path / "shop_tools.py"
        self.module_path.write_text(TOOLS.format(paid=str(self.paid)), encoding="utf-8")
        spec = importlib.util.spec_from_file_location("shop_tools_for_test", self.module_path)
        assert spec is not None and spec.loader is not None
        self.module: ModuleType = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)
        self.url = f"sqlite:///{tmp_path / 'store.db'}"
        self.store: Store = open_store(self.url)

    def tool_spec(self, name: str = "pay") -> str:
        return f"{self.module_path}:{name}"

    def waiting_conversation(self, *calls: ToolCall) -> str:
        """A stored conversation whose turn asked for ``calls`` and ended "awaiting"."""
        model = ScriptedModel([AssistantMessage(tool_calls=list(calls)), "unused"])
        config = ConversationConfig(model=model, tools=[self.module.pay, self.module.ask_human])
        conversation = Conversation(config=config, store=self.store)
        conversation.continuation.request("pay bob 5").prompt()
        assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "awaiting"
        return conversation.id

    def loaded(self, conversation_id: str) -> Conversation:
        config = ConversationConfig(tools=[self.module.pay, self.module.ask_human])
        return Conversation.load(conversation_id, self.store, config)

    def paid_lines(self) -> list[str]:
        return self.paid.read_text(encoding="utf-8").splitlines() if self.paid.exists() else []


PAY = ToolCall(id="c1", name="pay", arguments={"amount": 5, "to": "bob"})
ASK = ToolCall(id="c2", name="ask_human", arguments={"question": "Which bob?"})


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    made = Shop(tmp_path)
    try:
        yield made
    finally:
        made.store.close()


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


def openai_env(server: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-approvals-0123456789"}


def cli(shop: Shop, *args: str, **kwargs: Any) -> Any:
    return run_cli(*args, store_url=shop.url, **kwargs)


def test_awaiting_lists_the_waiting_calls_as_text_and_json(shop: Shop) -> None:
    cid = shop.waiting_conversation(PAY, ASK)
    shop.waiting_conversation(ToolCall(id="c9", name="pay", arguments={"amount": 1, "to": "eve"}))
    expected = {item.call.id: item for item in shop.loaded(cid).awaiting}

    listed = cli(shop, "awaiting", cid)
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert f"conversation {cid}" in out
    assert "c1  pay  approval" in out and "c2  ask_human  external" in out
    assert '"amount": 5' in out and expected["c1"].arguments_sha256[:12] in out
    assert "pay needs approval" in out or "approval" in out
    assert "c9" not in out  # only that conversation's calls
    assert f"threadline approve {cid} c1" in out and f"threadline submit {cid} c2" in out

    everywhere = cli(shop, "awaiting", "--json")
    assert everywhere.returncode == 0, everywhere.stderr
    rows = json.loads(everywhere.stdout)
    assert sorted((row["conversation"] == cid, row["call"]) for row in rows) == [
        (False, "c9"),
        (True, "c1"),
        (True, "c2"),
    ]
    row = next(row for row in rows if row["call"] == "c1")
    assert row == {
        "conversation": cid,
        "call": "c1",
        "tool": "pay",
        "kind": "approval",
        "reason": expected["c1"].reason,
        "arguments": {"amount": 5, "to": "bob"},
        "raw_arguments": None,
        "arguments_sha256": expected["c1"].arguments_sha256,
    }


def test_awaiting_escapes_terminal_controls_in_arguments(shop: Shop) -> None:
    cid = shop.waiting_conversation(ToolCall(id="c1", name="pay", arguments={"amount": 5, "to": "b\x1b[31mob\u202e"}))
    listed = cli(shop, "awaiting")
    assert listed.returncode == 0, listed.stderr
    assert "\x1b" not in listed.stdout and "\u202e" not in listed.stdout
    assert "\\u001b[31mob\\u202e" in listed.stdout and cid in listed.stdout


def test_awaiting_says_when_nothing_waits(shop: Shop) -> None:
    listed = cli(shop, "awaiting")
    assert listed.returncode == 0, listed.stderr
    assert "No tool calls wait" in listed.stdout
    assert json.loads(cli(shop, "awaiting", "--json").stdout) == []


def test_approve_then_resume_runs_the_tool_once_and_the_log_validates(shop: Shop, server: FakeOpenAI) -> None:
    cid = shop.waiting_conversation(PAY)
    approved = cli(shop, "approve", cid, "c1", "--by", "alice", "--reason", "fine")
    assert approved.returncode == 0, approved.stderr
    assert "approved c1 (pay) by alice: fine" in approved.stdout
    assert f"threadline resume {cid}" in approved.stderr
    assert shop.paid_lines() == []  # approving runs nothing

    server.add(Answer("Paid bob 5."))
    resumed = cli(shop, "resume", cid, "-m", MODEL, "-T", shop.tool_spec(), env=openai_env(server))
    assert resumed.returncode == 0, resumed.stderr
    assert shop.paid_lines() == ["5 bob"]
    assert "Paid bob 5." in resumed.stdout
    assert "paid 5 to bob" in resumed.stderr  # the result of the call it ran, shown
    log = shop.store.load(cid)
    log.validate()
    # requested, approved, started (written just before the call ran), its result, the answer
    assert [m.role for m in log] == ["user", "assistant", "approval", "approval", "approval", "tool", "assistant"]
    decision = log[3]
    assert isinstance(decision, ApprovalMessage) and (decision.state, decision.by) == ("approved", "alice")

    again = cli(shop, "resume", cid, "-m", MODEL, "-T", shop.tool_spec(), env=openai_env(server))
    assert again.returncode == 2
    assert "nothing to go on with" in again.stderr
    assert shop.paid_lines() == ["5 bob"]  # run once
    assert len(shop.store.load(cid)) == len(log)


def test_approve_with_edited_arguments_and_a_short_hash(shop: Shop, server: FakeOpenAI) -> None:
    cid = shop.waiting_conversation(PAY)
    short = shop.loaded(cid).awaiting[0].arguments_sha256[:12]
    done = cli(
        shop, "approve", cid, "c1", "--sha256", short, "--arguments", '{"amount": 6, "to": "bob"}',
        "-T", shop.tool_spec(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'with arguments {"amount": 6, "to": "bob"}' in done.stdout
    server.add(Answer("Paid 6."))
    resumed = cli(shop, "resume", cid, "-m", MODEL, "-T", shop.tool_spec(), env=openai_env(server))
    assert resumed.returncode == 0, resumed.stderr
    assert shop.paid_lines() == ["6 bob"]
    shop.store.load(cid).validate()


def test_resume_without_the_tool_of_an_approved_call_runs_nothing(shop: Shop, server: FakeOpenAI) -> None:
    cid = shop.waiting_conversation(PAY)
    assert cli(shop, "approve", cid, "c1").returncode == 0
    before = shop.store.load(cid).to_json()
    resumed = cli(shop, "resume", cid, "-m", MODEL, env=openai_env(server))
    assert resumed.returncode == 2
    assert "pass -T" in resumed.stderr and len(resumed.stderr.strip().splitlines()) == 1
    assert shop.store.load(cid).to_json() == before and server.count == 0


def test_deny_logs_the_denial_result(shop: Shop, server: FakeOpenAI) -> None:
    cid = shop.waiting_conversation(PAY)
    denied = cli(shop, "deny", cid, "c1", "--reason", "too much", "--by", "carol")
    assert denied.returncode == 0, denied.stderr
    assert "denied by carol: too much" in denied.stdout
    log = shop.store.load(cid)
    log.validate()
    result = log[-1]
    assert isinstance(result, ToolMessage) and result.is_error and result.content == "denied by carol: too much"
    server.add(Answer("I did not pay."))
    resumed = cli(shop, "resume", cid, "-m", MODEL, env=openai_env(server))
    assert resumed.returncode == 0, resumed.stderr
    assert "I did not pay." in resumed.stdout and shop.paid_lines() == []


def test_submit_gives_the_result_of_an_external_call(shop: Shop) -> None:
    cid = shop.waiting_conversation(ASK)
    done = cli(shop, "submit", cid, "c2", "--content", "Bob Smith")
    assert done.returncode == 0, done.stderr
    assert "submitted a result for c2 (ask_human)" in done.stdout
    log = shop.store.load(cid)
    log.validate()
    result = log[-1]
    assert isinstance(result, ToolMessage) and (result.content, result.is_error) == ("Bob Smith", False)
    assert call_waits(log).waiting == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("approve", "{cid}", "nope"), "no such call"),
        (("approve", "{cid}", "c1", "--sha256", "0" * 64), "are not the ones this decision was made on"),
        (("approve", "{cid}", "c1", "--arguments", '{"amount": "lots"}', "-T", "{tool}"), "do not fit tool 'pay'"),
        (("approve", "{cid}", "c1", "--arguments", '{"amount": 6, "to": "bob"}'), "pass -T"),
        (("approve", "{cid}", "c2"), "use submit_result"),
        (("submit", "{cid}", "c1", "--content", "x"), "use approve or deny"),
        (("deny", "{cid}", "c1", "--reason", "no", "--sha256", "abc"), "at least 12 hex digits"),
        (("approve", "no-such-conversation", "c1"), "no conversation"),
    ],
)
def test_bad_decisions_are_one_line_and_change_nothing(shop: Shop, args: tuple[str, ...], says: str) -> None:
    cid = shop.waiting_conversation(PAY, ASK)
    before = shop.store.load(cid).to_json()
    done = cli(shop, *(arg.replace("{cid}", cid).replace("{tool}", shop.tool_spec()) for arg in args))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and says in lines[0], done.stderr
    assert shop.store.load(cid).to_json() == before


def test_a_decided_call_cannot_be_decided_again(shop: Shop) -> None:
    cid = shop.waiting_conversation(PAY)
    assert cli(shop, "approve", cid, "c1", "--by", "alice").returncode == 0
    before = shop.store.load(cid).to_json()
    for args in (("approve", cid, "c1"), ("deny", cid, "c1", "--reason", "no")):
        done = cli(shop, *args)
        assert done.returncode == 2
        assert "it was approved already, by alice" in done.stderr
        assert shop.store.load(cid).to_json() == before


def test_logs_show_prints_requested_approved_and_denied_entries(shop: Shop) -> None:
    cid = shop.waiting_conversation(PAY, ToolCall(id="c3", name="pay", arguments={"amount": 99, "to": "eve"}))
    conversation = shop.loaded(cid)
    conversation.approve("c1", by="alice", reason="small")
    conversation.deny("c3", by="bob", reason="eve is unknown")
    for extra in ((), ("--all",)):
        shown = cli(shop, "logs", "show", cid, *extra)
        assert shown.returncode == 0, shown.stderr
        out = shown.stdout
        assert out.count("approval · requested") == 2
        assert "approval · approved" in out and "pay (c1) approved by alice" in out and "small" in out
        assert "approval · denied" in out and "pay (c3) denied by bob" in out
        assert "denied by bob: eve is unknown" in out  # the result the model reads
