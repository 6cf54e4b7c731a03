"""``threadline chat`` asking at the terminal about the calls a turn left waiting, as a user answers through stdin:
y approves and the turn goes on (the tool runs once), n asks why and denies, e asks for new arguments until the
tool's schema takes them, and the end of the input leaves the calls waiting with how to decide them later. The model
is the fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._run import run_cli
from tests.providers.servers import Answer, FakeOpenAI, ToolUse
from threadline import AssistantMessage, ToolMessage
from threadline.message_list import call_waits
from threadline.message_types import ApprovalMessage
from threadline.store import open_store

from .test_approvals_cli import MODEL, Shop, openai_env


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


PAY_BOB = ToolUse("pay", '{"amount": 5, "to": "bob"}', id="call_pay")


def chat(shop: Shop, server: FakeOpenAI, stdin: str, *tools: str) -> tuple[object, str]:
    """Run ``threadline chat`` with ``stdin``; the result and the id of the one conversation it made."""
    specs = [arg for name in (tools or ("pay",)) for arg in ("-T", shop.tool_spec(name))]
    done = run_cli("chat", "-m", MODEL, *specs, store_url=shop.url, env=openai_env(server), stdin=stdin)
    with open_store(shop.url) as store:
        [info] = store.list_conversations()
    return done, info.id


def test_chat_y_approves_and_the_turn_goes_on(shop: Shop, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(PAY_BOB,)), Answer("Paid bob 5."))
    done, cid = chat(shop, server, "pay bob 5\ny\n")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert "Approve? [y]es / [n]o / [e]dit" in done.stderr  # type: ignore[attr-defined]
    assert '"amount": 5' in done.stderr  # type: ignore[attr-defined]
    assert "Paid bob 5." in done.stdout  # type: ignore[attr-defined]
    assert shop.paid_lines() == ["5 bob"]
    log = shop.store.load(cid)
    log.validate()
    decisions = [m for m in log if isinstance(m, ApprovalMessage) and m.state in ("approved", "denied")]
    assert [(d.state, d.tool_call_id) for d in decisions] == [("approved", "call_pay")]
    assert isinstance(log[-1], AssistantMessage) and log[-1].content == "Paid bob 5."


def test_chat_n_asks_why_and_denies(shop: Shop, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(PAY_BOB,)), Answer("I did not pay."))
    done, cid = chat(shop, server, "pay bob 5\nn\nnot today\n")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert "Why not?" in done.stderr  # type: ignore[attr-defined]
    assert "I did not pay." in done.stdout  # type: ignore[attr-defined]
    assert shop.paid_lines() == []
    log = shop.store.load(cid)
    log.validate()
    [result] = [m for m in log if isinstance(m, ToolMessage)]
    assert result.is_error and result.content.endswith(": not today")
    assert "not today" in str(server.bodies[-1])  # the model read the denial


def test_chat_e_asks_again_until_the_arguments_fit(shop: Shop, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(PAY_BOB,)), Answer("Paid bob 6."))
    stdin = 'pay bob 5\nx\ne\n{"amount": 6\n{"amount": "lots", "to": "bob"}\n{"amount": 6, "to": "bob"}\n'
    done, cid = chat(shop, server, stdin)
    err = done.stderr  # type: ignore[attr-defined]
    assert done.returncode == 0, err  # type: ignore[attr-defined]
    assert "answer y, n or e" in err
    assert "not JSON" in err and "do not fit tool 'pay'" in err
    assert shop.paid_lines() == ["6 bob"]
    log = shop.store.load(cid)
    log.validate()
    [decision] = [m for m in log if isinstance(m, ApprovalMessage) and m.state == "approved"]
    assert decision.arguments == {"amount": 6, "to": "bob"}


def test_chat_asks_for_the_result_of_an_external_call(shop: Shop, server: FakeOpenAI) -> None:
    ask = ToolUse("ask_human", '{"question": "Which bob?"}', id="call_ask")
    server.add(Answer(tool_calls=(ask,)), Answer("Bob Smith it is."))
    done, cid = chat(shop, server, "who?\nBob Smith\n", "ask_human")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert "The result of ask_human" in done.stderr  # type: ignore[attr-defined]
    assert "Bob Smith it is." in done.stdout  # type: ignore[attr-defined]
    log = shop.store.load(cid)
    log.validate()
    [result] = [m for m in log if isinstance(m, ToolMessage)]
    assert (result.content, result.is_error) == ("Bob Smith", False)


def test_chat_at_the_end_of_the_input_leaves_the_calls_waiting(shop: Shop, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(PAY_BOB,)))
    done, cid = chat(shop, server, "pay bob 5\n")
    err = done.stderr  # type: ignore[attr-defined]
    assert done.returncode == 0, err
    assert "Traceback" not in err
    assert f"threadline approve {cid} call_pay" in err and f"threadline resume {cid}" in err
    log = shop.store.load(cid)
    log.validate()
    assert [item.call.id for item in call_waits(log).waiting] == ["call_pay"]
    assert shop.paid_lines() == [] and server.count == 1

    # Continued later with --cid: the chat asks about the waiting call before anything new.
    server.add(Answer("Paid."))
    again = run_cli(
        "chat", "-m", MODEL, "-T", shop.tool_spec(), "--cid", cid,
        store_url=shop.url, env=openai_env(server), stdin="y\n",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert shop.paid_lines() == ["5 bob"] and "Paid." in again.stdout
    shop.store.load(cid).validate()
