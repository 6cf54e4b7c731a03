"""A process that waits for, decides or runs an approved tool call and is killed with SIGKILL at one point (run by
test_approval_crashes.py as a subprocess).

Usage: python _approval_child.py MODE STORE_URL CONVERSATION_ID LEDGER

MODE:
  wait      start the conversation: a turn whose call ``c1`` (pay) waits for approval; print "ready", block
  approve   approve ``c1``, print "ready", block before resuming
  run       approve ``c1`` and resume: the tool writes its start to LEDGER, prints "ready" and blocks inside the call
  approve!  / deny!   print "loaded", read one line (the barrier), then approve / deny ``c1``; exit 2 with the
            AwaitingDecision on stderr if another process decided first

Blocking is a read of stdin, which the parent never writes (it kills the child instead).
"""

from __future__ import annotations

import sys
from pathlib import Path

from threadline import AssistantMessage, AwaitingDecision, Conversation, ConversationConfig, ToolCall, tool
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel


def make_tools(ledger: Path, *, block: bool = False) -> list[object]:
    """``pay`` (needs approval; appends a line to ``ledger`` when it runs, and with ``block`` then blocks)."""

    @tool(approval=True)
    def pay(amount: float, to: str) -> str:
        """Pay someone."""
        with ledger.open("a") as file:
            file.write(f"paid {amount} to {to}\n")
        if block:
            print("ready", flush=True)
            sys.stdin.readline()
        return f"paid {amount} to {to}"

    return [pay]


def config(ledger: Path, answers: list[object], *, block: bool = False) -> ConversationConfig:
    return ConversationConfig(model=ScriptedModel(answers), tools=make_tools(ledger, block=block))


def start(store: Store, conversation_id: str, ledger: Path, call_id: str = "c1") -> Conversation:
    """The conversation ``conversation_id`` after a turn whose call ``call_id`` (pay) waits for approval."""
    store.create_conversation(title="pay", id=conversation_id)
    call = ToolCall(id=call_id, name="pay", arguments={"amount": 5, "to": "bob"})
    conversation = Conversation.load(conversation_id, store, config(ledger, [AssistantMessage(tool_calls=[call])]))
    conversation.continuation.request("pay bob 5").prompt()
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "awaiting"
    return conversation


def main() -> None:
    mode, url, conversation_id, ledger_name = sys.argv[1:5]
    ledger = Path(ledger_name)
    store = open_store(url)
    if mode == "wait":
        start(store, conversation_id, ledger)
        print("ready", flush=True)
        sys.stdin.readline()
        return
    conversation = Conversation.load(conversation_id, store, config(ledger, ["Paid."], block=mode == "run"))
    if mode in ("approve!", "deny!"):
        print("loaded", flush=True)
        sys.stdin.readline()
        try:
            if mode == "approve!":
                conversation.approve("c1", by=f"process {conversation_id}")
            else:
                conversation.deny("c1", by="another process", reason="no")
        except AwaitingDecision as exc:
            print(f"AwaitingDecision: {exc}", file=sys.stderr, flush=True)
            sys.exit(2)
        return
    conversation.approve("c1", by="alice")
    if mode == "approve":
        print("ready", flush=True)
        sys.stdin.readline()
        return
    assert mode == "run", mode
    conversation.resume()


if __name__ == "__main__":
    main()
