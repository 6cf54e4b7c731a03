"""What threadline caches about tools never keeps a user's objects alive (issue 8, item 14).

A tool's signature is read once per function (that is what makes ``.tools(fn)`` cheap on every request), but an
object whose methods were offered, a closure made per request, a dynamic-tools provider and an object bound to a
mention are all freed once the caller drops them.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

from threadline import Conversation, ConversationConfig, Toolset, llm
from threadline.testing import ScriptedModel
from threadline.tools import Tool, resolve_tools

from ._support import call, calls


class Notes:
    """A notebook."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> str:
        """Add a note."""
        self.items.append(text)
        return "noted"


class Shelf:
    """Offers the tools of its notebook, chosen per request (a dynamic-tools provider that is a method)."""

    def __init__(self) -> None:
        self.notes = Notes()

    def offer(self, conversation: Conversation) -> Any:
        return [self.notes.add]


def alive(refs: list[weakref.ref[Any]]) -> int:
    gc.collect()
    return sum(ref() is not None for ref in refs)


def test_objects_whose_methods_were_offered_are_freed() -> None:
    refs: list[weakref.ref[Any]] = []
    for _ in range(100):
        notes = Notes()
        refs.append(weakref.ref(notes))
        llm.tools(notes.add)  # a builder made and dropped, as a request handler does
    del notes
    assert alive(refs) == 0


def test_closures_offered_as_tools_are_freed() -> None:
    refs: list[weakref.ref[Any]] = []
    for _ in range(100):

        def lookup(query: str) -> str:
            """Look something up."""
            return query

        refs.append(weakref.ref(lookup))
        llm.tools(lookup)
    del lookup
    assert alive(refs) == 0


def test_objects_offered_as_toolsets_and_used_in_a_turn_are_freed_with_the_conversation() -> None:
    notes = Notes()
    ref = weakref.ref(notes)
    model = ScriptedModel([calls(call("Notes.add", {"text": "milk"})), "done"])
    conversation = llm.model(model).tools(Toolset.from_object(notes)).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    assert notes.items == ["milk"]
    del notes, conversation, model
    assert alive([ref]) == 0


def test_dynamic_tool_providers_are_freed() -> None:
    shelf = Shelf()
    ref = weakref.ref(shelf)
    model = ScriptedModel([calls(call("add", {"text": "eggs"})), "done"])
    conversation = llm.model(model).tools(shelf.offer).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    assert shelf.notes.items == ["eggs"]
    del shelf, conversation, model
    assert alive([ref]) == 0


def test_an_object_replaced_on_a_mention_is_freed() -> None:
    first, second = Notes(), Notes()
    ref = weakref.ref(first)
    model = ScriptedModel([calls(call("Notes.add", {"text": "milk"})), "done"])
    conversation = Conversation(config=ConversationConfig(model=model))
    conversation.attach("notes", first)
    assert conversation.continuation.request("remember milk").prompt() == "done"
    assert first.items == ["milk"]
    conversation.attach("notes", second)  # e.g. the notebook was reopened
    del first
    assert alive([ref]) == 0


def test_the_signature_is_read_once_per_function_yet_each_tool_is_its_own() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    one, two = Tool(add), Tool(add, name="plus", description="Sum.")
    assert (one.name, one.description) == ("add", "Add two numbers.")
    assert (two.name, two.description) == ("plus", "Sum.")
    assert one.parameters == two.parameters
    assert two.validate({"a": "1", "b": 2}) == {"a": 1, "b": 2}
    # Methods of different instances share the reading, and each tool calls its own instance.
    left, right = Notes(), Notes()
    tools = resolve_tools([Toolset.from_object(left, name="L"), Toolset.from_object(right, name="R")]).tools
    tools["L.add"].handler(text="x")
    assert (left.items, right.items) == (["x"], [])
