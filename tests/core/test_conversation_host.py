"""The seams of a conversation (issue 32): the user's `Conversation` over its `ConversationHost`, which owns the
write-through; each message is checked once on its way to the store, and the answers to calls a crash left
unanswered are written on the same path, without recording through the conversation again."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline import AssistantMessage, Conversation, ToolCall, ToolMessage, llm, user
from threadline.conversation import ConversationHost
from threadline.engine import INTERRUPTED_TOOL
from threadline.store import open_store
from threadline.testing import ScriptedModel

PUBLIC = {
    "acquire",
    "acquire_async",
    "add",
    "apply_config_deltas",
    "approve",
    "attach",
    "awaiting",
    "build_context",
    "config",
    "continuation",
    "cost",
    "deny",
    "fork",
    "hold",
    "host",
    "id",
    "last_turn",
    "load",
    "messages",
    "read_artifact",
    "record",
    "release",
    "resume",
    "run",
    "run_sync",
    "set_store",
    "store",
    "submit_result",
    "text",
}


def test_the_conversation_keeps_what_users_call_and_its_host_the_plumbing() -> None:
    conversation = Conversation()
    public = {name for name in dir(conversation) if not name.startswith("_")}
    assert public == PUBLIC
    assert isinstance(conversation.host, ConversationHost) and conversation.host.conversation is conversation
    for plumbing in ("known_call_ids", "resolve_model", "resolve_tools", "build_request_context", "artifact_reader"):
        assert callable(getattr(conversation.host, plumbing))


@pytest.mark.parametrize("backend", ["sqlite", "memory", None])
def test_a_message_is_checked_once_on_its_way_to_the_store(
    tmp_path: Path, backend: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadline.conversation import host
    from threadline.store import _common

    store = (
        None
        if backend is None
        else open_store(f"sqlite:///{tmp_path / 'log.db'}" if backend == "sqlite" else "memory://")
    )
    conversation = Conversation(store=store)
    checked: list[str] = []
    for module in (host, _common):
        original = module.field_problem
        monkeypatch.setattr(
            module, "field_problem", lambda message, original=original: checked.append(message.id) or original(message)
        )
    message = user("hello")
    conversation.add(message)
    assert checked == [message.id]
    if store is not None:
        assert list(store.load(conversation.id)) == [message]
        store.append(conversation.id, [user("direct")])  # a store's own callers are still checked by it
        assert len(checked) == 2
        store.close()


def test_unanswered_calls_are_answered_on_the_record_path_without_recording_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crashed = [user("weather?"), AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather")])]
    conversation = Conversation(crashed)
    recorded: list[object] = []
    original = ConversationHost.record
    monkeypatch.setattr(ConversationHost, "record", lambda self, m: recorded.append(m) or original(self, m))
    conversation.add(user("and tomorrow?"))
    assert len(recorded) == 1  # the repair did not go through record again
    repaired = conversation.messages[2]
    assert isinstance(repaired, ToolMessage) and repaired.content == INTERRUPTED_TOOL
    conversation.messages.validate()


def test_last_turn_is_the_turn_that_ran() -> None:
    conversation = llm.model(ScriptedModel(["one", "two"])).request("a").prompt_conversation()
    assert conversation.last_turn is None
    first = conversation.run_sync()
    assert conversation.last_turn is first and first.text == "one"
    assert conversation.continuation.request("b").prompt() == "two"
    assert conversation.last_turn is not first and conversation.last_turn is not None
    assert conversation.last_turn.text == "two"
