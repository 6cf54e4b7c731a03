"""Tools chosen per request: dynamic providers, objects mentioned in user messages, re-binding after a reload,
and real names everywhere the user looks (docs/architecture.md#tools)."""

from __future__ import annotations

from typing import Any

from threadline import (
    Attachment,
    Conversation,
    ConversationConfig,
    MessageList,
    Tool,
    ToolMessage,
    Toolset,
    dynamic_tools,
    llm,
)
from threadline.testing import ScriptedModel

from ._support import call, calls


class Notes:
    """A notebook the user can @-mention."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add_note(self, text: str) -> str:
        """Add a note."""
        self.items.append(text)
        return f"added {text!r}"

    def list_notes(self) -> list[str]:
        """All notes."""
        return self.items


class Lights:
    name = "lights"

    def switch(self, on: bool) -> str:
        """Switch the lights."""
        return "on" if on else "off"


def clock() -> str:
    """The time."""
    return "12:00"


def calendar() -> str:
    """Today's events."""
    return "nothing"


def test_a_dynamic_provider_is_evaluated_before_every_request() -> None:
    seen: list[int] = []

    def provider(conversation: Conversation) -> list[Any]:
        seen.append(len(conversation.messages))
        # Offer the calendar only once the clock has been read.
        used_clock = any(isinstance(m, ToolMessage) and m.tool_name == "clock" for m in conversation.messages)
        return [clock, calendar] if used_clock else [clock]

    model = ScriptedModel([calls(call("clock")), calls(call("calendar")), "Free at noon."])
    text = llm.model(model).tools(provider).request("When am I free?").prompt()
    assert text == "Free at noon."
    assert seen == [1, 3, 5]
    assert [r.tool_names for r in model.requests] == [["clock"], ["clock", "calendar"], ["clock", "calendar"]]


def test_dynamic_tools_marker_for_providers_without_annotation() -> None:
    calls_made: list[Any] = []

    def provider(conv):  # type: ignore[no-untyped-def]
        calls_made.append(conv)
        return Toolset([clock], name="time")

    model = ScriptedModel(["ok"])
    conversation = llm.model(model).tools(dynamic_tools(provider)).request("time?").prompt_conversation()
    conversation.continuation.prompt()
    assert calls_made == [conversation]
    assert model.requests[0].tool_names == ["clock"]


def test_dynamic_provider_may_return_nothing_or_a_single_tool() -> None:
    answers: list[Any] = [None, Tool(clock), clock]

    def provider(conversation: Conversation) -> Any:
        return answers.pop(0)

    model = ScriptedModel(["a", "b", "c"])
    conversation = llm.model(model).tools(provider).request("1").prompt_conversation()
    conversation.continuation.prompt()
    conversation.continuation.request("2").prompt()
    conversation.continuation.request("3").prompt()
    assert [r.tool_names for r in model.requests] == [[], ["clock"], ["clock"]]


def test_mentioned_objects_offer_their_tools_from_then_on() -> None:
    notes = Notes()
    model = ScriptedModel(
        [
            "Hi.",
            calls(call("Notes.add_note", {"text": "milk"})),
            "Noted.",
            calls(call("Notes.list_notes"), call("lights.switch", {"on": True})),
            "You have milk; lights on.",
        ]
    )
    conversation = llm.model(model).tools(clock).request("hello").prompt_conversation()
    conversation.continuation.prompt()
    assert model.requests[0].tool_names == ["clock"]

    mention = Attachment.mention("notes", notes)
    conversation.continuation.request("remember milk in @notes", attachments=[mention]).prompt()
    assert sorted(model.requests[1].tool_names) == ["Notes.add_note", "Notes.list_notes", "clock"]
    assert notes.items == ["milk"]

    # A later message mentions another object: both objects' tools are offered (mentions accumulate).
    conversation.continuation.request(
        "what is in my notes? and @lights on", attachments=[Attachment.mention("lights", Lights())]
    ).prompt()
    assert sorted(model.requests[3].tool_names) == [
        "Notes.add_note",
        "Notes.list_notes",
        "clock",
        "lights.switch",
    ]
    results = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert [r.content for r in results] == ["added 'milk'", '["milk"]', "on"]
    conversation.messages.validate()


def test_mentions_survive_a_reload_once_attached_again() -> None:
    notes = Notes()
    model = ScriptedModel(["ok"])
    conversation = (
        llm.model(model).request("see @notes", attachments=[Attachment.mention("notes", notes)]).prompt_conversation()
    )
    conversation.continuation.prompt()
    saved = conversation.messages.to_json()

    restored = MessageList.from_json(saved)
    assert restored[0].attachments[0].ref == "notes"  # type: ignore[union-attr]
    assert restored[0].attachments[0].object is None  # type: ignore[union-attr]
    model2 = ScriptedModel(["before attach", calls(call("Notes.add_note", {"text": "eggs"})), "added"])
    again = Conversation(messages=restored, config=ConversationConfig(model=model2))
    again.continuation.request("anything?").prompt()
    assert model2.requests[0].tool_names == []  # nothing live to call yet

    fresh = Notes()
    again.attach("notes", fresh)
    again.continuation.request("add eggs").prompt()
    assert sorted(model2.requests[1].tool_names) == ["Notes.add_note", "Notes.list_notes"]
    assert fresh.items == ["eggs"]
    assert notes.items == []
    again.messages.validate()


def test_attach_without_a_mention_in_the_log_offers_the_tools() -> None:
    model = ScriptedModel(["ok"])
    conversation = Conversation(config=ConversationConfig(model=model))
    conversation.attach("lights", Lights())
    conversation.continuation.request("go").prompt()
    assert model.requests[0].tool_names == ["lights.switch"]


def test_log_and_requests_only_show_real_names() -> None:
    notes = Notes()
    toolset = Toolset.from_object(notes, name="My Notes")
    model = ScriptedModel([calls(call("My Notes.add_note", {"text": "x"})), "done"])
    conversation = llm.model(model).tools(toolset).request("add x").prompt_conversation()
    conversation.continuation.prompt()
    names = {spec.name for r in model.requests for spec in r.tools}
    assert names == {"My Notes.add_note", "My Notes.list_notes"}
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage)
    assert (result.tool_name, result.content, result.is_error) == ("My Notes.add_note", "added 'x'", False)
    assert "My_Notes" not in conversation.messages.to_json()


def test_toolset_instructions_join_the_system_prompt_while_its_tools_are_offered() -> None:
    toolset = Toolset([clock], name="time", instructions="Always read the clock before answering about time.")
    model = ScriptedModel(["with", "without"])
    conversation = llm.model(model).tools(toolset).request("time?").prompt_conversation()
    conversation.continuation.prompt()
    assert "Always read the clock" in model.requests[0].messages[0].content
    conversation.apply_config_deltas({"tools": []})
    conversation.continuation.request("again").prompt()
    assert "Always read the clock" not in model.requests[1].messages[0].content
    assert all("Always read the clock" not in m.content for m in conversation.messages)  # never stored
