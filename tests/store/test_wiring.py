"""The turn engine with a store (docs/architecture.md#how-a-message-reaches-the-store): every message is in the store
the moment it exists, a stored conversation reloads and continues, the active mode and the title are kept, and attached
objects re-bind."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Attachment,
    ContextSettings,
    Conversation,
    ConversationConfig,
    ModelError,
    StoreError,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    llm,
)
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel, ScriptedRequest


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def ask(*calls: ToolCall, content: str | None = None) -> AssistantMessage:
    return AssistantMessage(content=content, tool_calls=list(calls))


def test_each_message_is_stored_the_moment_it_exists(store: Store) -> None:
    seen: list[list[str]] = []

    def snapshot(request: ScriptedRequest) -> Any:
        # What a second reader (another connection) finds in the store while the model is being called.
        # (The test servers have no password, so the store's redacted URL opens the same database.)
        with open_store(store.url) as reader:
            seen.append([type(m).__name__ for m in reader.load(conversation_id)])
        return ask(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})) if len(seen) == 1 else "Sunny."

    conversation_id = "conv-live"
    model = ScriptedModel([snapshot, snapshot])
    text = (
        llm.model(model).tools(get_weather).store(store).conversation_id(conversation_id).request("Weather?").prompt()
    )
    assert text == "Sunny."
    # During the first call the user message was already stored; during the second, the call and its result.
    assert seen == [["UserMessage"], ["UserMessage", "AssistantMessage", "ToolMessage"]]
    stored = store.load(conversation_id)
    assert [type(m).__name__ for m in stored] == ["UserMessage", "AssistantMessage", "ToolMessage", "AssistantMessage"]
    stored.validate()


def test_reload_and_continue_on_another_model(store: Store) -> None:
    first = ScriptedModel([ask(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})), "22 C in Paris."])
    conversation = (
        llm.model(first)
        .tools(get_weather)
        .store(store)
        .mode("agent")
        .request("Weather in Paris?")
        .prompt_conversation()
    )
    text = conversation.continuation.prompt()
    assert text == "22 C in Paris."
    info = store.get_conversation(conversation.id)
    assert (info.title, info.active_mode, info.message_count) == ("Weather in Paris?", "agent", 4)

    reloaded = Conversation.load(conversation.id, store)
    assert list(reloaded.messages) == list(conversation.messages)
    assert reloaded.config.mode == "agent"
    second = ScriptedModel(["And 18 C in Rome."])
    answer = reloaded.continuation.model(second).tools(get_weather).request("And Rome?").prompt()
    assert answer == "And 18 C in Rome."
    # The new model was sent the whole stored history, tool call and result included.
    sent = second.requests[0].messages
    assert any(isinstance(m, ToolMessage) and m.content == "22 C in Paris" for m in sent)
    assert [m.content for m in store.load(conversation.id) if isinstance(m, UserMessage)] == [
        "Weather in Paris?",
        "And Rome?",
    ]


def test_builder_conversation_id_continues_a_stored_conversation(store: Store) -> None:
    llm.model(ScriptedModel(["One."])).store(store).conversation_id("fixed").request("First").prompt()
    llm.model(ScriptedModel(["Two."])).store(store).conversation_id("fixed").request("Second").prompt()
    contents = [m.content for m in store.load("fixed")]
    assert contents == ["First", "One.", "Second", "Two."]
    assert store.get_conversation("fixed").title == "First"


def test_title_comes_from_the_first_user_message_even_when_the_mode_was_stored_first(store: Store) -> None:
    builder = llm.model(ScriptedModel(["ok"])).store(store).mode("chat").request("  Plan   my trip  ")
    conv = builder.prompt_conversation()
    assert store.get_conversation(conv.id).title == "Plan my trip"
    assert store.get_conversation(conv.id).active_mode == "chat"


def test_a_failed_model_call_is_stored_with_its_partial_output(store: Store) -> None:
    model = ScriptedModel([ModelError("connection reset", type="network", partial="The capital is", retryable=True)])
    conversation = llm.model(model).store(store).request("Capital of France?").prompt_conversation()
    with pytest.raises(ModelError):
        conversation.continuation.prompt()
    stored = store.load(conversation.id)
    failure = stored[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.content == "The capital is"
    assert failure.error is not None and failure.error.type == "network" and failure.error.retryable
    # "continue" resumes from the stored failure.
    again = ScriptedModel([" Paris."])
    assert Conversation.load(conversation.id, store).continuation.model(again).request("continue").prompt() == " Paris."
    assert "The capital is" in str(again.requests[0].messages[-2].content)


def test_conversation_with_messages_is_stored_whole(store: Store) -> None:
    messages = [UserMessage(content="hi"), AssistantMessage(content="hello")]
    conversation = Conversation(messages, store=store)
    assert list(store.load(conversation.id)) == messages
    with pytest.raises(UserError, match="already exists"):
        Conversation(messages, store=store, id=conversation.id)
    with pytest.raises(StoreError, match="no conversation"):
        Conversation.load("missing", store)


class Notes:
    """A notebook the user mentions with @notes."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add_note(self, text: str) -> str:
        """Add a note."""
        self.items.append(text)
        return f"saved {text!r}"


def test_attached_objects_rebind_after_a_store_round_trip(store: Store) -> None:
    notes = Notes()
    model = ScriptedModel([ask(ToolCall(id="n1", name="Notes.add_note", arguments={"text": "milk"})), "Noted."])
    conversation = (
        llm.model(model)
        .store(store)
        .request("@notes remember milk", attachments=[Attachment.mention("notes", notes)])
        .prompt_conversation()
    )
    assert conversation.continuation.prompt() == "Noted."
    assert notes.items == ["milk"]
    stored_user = store.load(conversation.id)[0]
    assert isinstance(stored_user, UserMessage)
    assert stored_user.attachments[0].ref == "notes" and stored_user.attachments[0].object is None

    reloaded = Conversation.load(conversation.id, store)
    # Without the object, its tools cannot be offered...
    unbound = ScriptedModel(["I cannot reach your notes."])
    reloaded.continuation.model(unbound).request("anything else?").prompt()
    assert "Notes.add_note" not in unbound.requests[0].tool_names
    # ...after attach() they are, and calls reach the new object.
    fresh = Notes()
    reloaded.attach("notes", fresh)
    rebound = ScriptedModel([ask(ToolCall(id="n2", name="Notes.add_note", arguments={"text": "eggs"})), "Noted too."])
    assert reloaded.continuation.model(rebound).request("and eggs").prompt() == "Noted too."
    assert "Notes.add_note" in rebound.requests[0].tool_names
    assert fresh.items == ["eggs"] and notes.items == ["milk"]
    assert [m.content for m in store.load(conversation.id) if isinstance(m, ToolMessage)] == [
        "saved 'milk'",
        "saved 'eggs'",
    ]


def test_large_tool_output_is_saved_as_an_artifact_in_the_store(store: Store) -> None:
    def dump() -> str:
        """A very long output."""
        return "line of output\n" * 1000

    model = ScriptedModel([ask(ToolCall(id="big", name="dump")), "Summarized."])
    config = ConversationConfig(context=ContextSettings(tool_preview_chars=100))
    conversation = Conversation(config=config, store=store)
    conversation.continuation.model(model).tools(dump).request("Dump it").prompt()
    assert store.read_artifact(conversation.id, "big") == "line of output\n" * 1000
    assert store.read_artifact(conversation.id, "big", 15, 4) == "line"
    assert f"artifact://{conversation.id}/big" in str(model.requests[1].messages[-1].content)
