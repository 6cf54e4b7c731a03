"""`Conversation.fork(at=…)`: continue a copy of a log from any message, with or without a store, and leave the
original alone (docs/architecture.md#conversations-and-the-builder)."""

from __future__ import annotations

import pytest

from threadline import AssistantMessage, Conversation, StoreError, ToolCall, UserError, llm
from threadline.store import open_store
from threadline.testing import ScriptedModel


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def weather_conversation(store=None) -> Conversation:
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="w1", name="get_weather", arguments={"city": "Paris"})]), "Sunny."]
    )
    builder = llm.model(model).tools(get_weather).request("Weather in Paris?")
    if store is not None:
        builder = builder.store(store)
    conv = builder.prompt_conversation()
    conv.continuation.prompt()
    return conv


def test_fork_in_memory_copies_up_to_the_message_and_keeps_the_tool_group() -> None:
    conv = weather_conversation()
    call_message = conv.messages[1]
    fork = conv.fork(at=call_message.id)
    assert [m.role for m in fork.messages] == ["user", "assistant", "tool"]  # the call's result comes along
    assert fork.id != conv.id and len(conv.messages) == 4

    # The fork continues on another model; the original is untouched, and the configs are separate objects.
    fork.continuation.model(ScriptedModel(["Cloudy, says the other model."])).request("Sure?").prompt()
    assert fork.text == "Cloudy, says the other model."
    assert len(conv.messages) == 4 and conv.text == "Sunny."
    assert fork.config is not conv.config and fork.config.tools is not conv.config.tools
    fork.messages.validate()

    whole = conv.fork()
    assert [m.id for m in whole.messages] == [m.id for m in conv.messages]
    with pytest.raises(UserError, match="no message 'nope'"):
        conv.fork(at="nope")


def test_fork_with_a_store_is_stored_and_records_its_origin(tmp_path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/forks.db")
    conv = weather_conversation(store)
    fork = conv.fork(at=conv.messages[0].id, title="Try again")
    assert fork.store is store and [m.role for m in fork.messages] == ["user"]
    info = store.get_conversation(fork.id)
    assert info.title == "Try again"
    assert info.metadata["forked_from"] == {"conversation": conv.id, "message": conv.messages[0].id}

    fork.continuation.model(ScriptedModel(["Rainy."])).prompt()  # answers the copied question anew
    assert [m.content for m in store.load(fork.id)] == ["Weather in Paris?", "Rainy."]
    assert len(store.load(conv.id)) == 4
    with pytest.raises(StoreError, match="no message 'nope'"):
        conv.fork(at="nope")
    store.close()


@pytest.mark.parametrize("stored", [False, True])
def test_a_fork_offers_the_tools_of_the_objects_mentioned_before_it(stored: bool, tmp_path) -> None:
    """Before, a fork of a stored conversation lost the @-mentioned objects (a fork in memory kept them)."""
    from threadline import Attachment

    class Notes:
        def add_note(self, text: str) -> str:
            """Add a note."""
            return "saved"

    store = open_store(f"sqlite:///{tmp_path / 'log.db'}") if stored else None
    model = ScriptedModel(["ok", "fork ok"])
    builder = llm.model(model).request("Note this", attachments=[Attachment.mention("notes", Notes())])
    conversation = (builder.store(store) if store is not None else builder).prompt_conversation()
    conversation.run_sync()
    conversation.fork().continuation.request("Again").prompt()
    assert [request.tool_names for request in model.requests] == [["Notes.add_note"], ["Notes.add_note"]]
    if store is not None:
        store.close()
