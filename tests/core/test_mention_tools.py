"""An @-mentioned object offers the methods that can be described to a model and leaves out the others (dynamic tools:
docs/architecture.md#tools). Before, one method with ``*args`` or a ``Callable`` argument — or mentioning a
`pathlib.Path` — made every later turn of the conversation raise `UserError` before the model was called, for good,
since the mention stays in the log. A mentioned `Tool` or `Toolset` offers its own tools."""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable
from typing import Any

import pytest

from threadline import Attachment, Toolset, llm
from threadline.testing import ScriptedModel

from ._support import call, calls


class Doc:
    """A document the user mentions; it was not written for a model."""

    def read(self) -> str:
        """The document's text."""
        return "the text"

    def log(self, *parts: str) -> None:
        """A helper taking any number of parts."""

    def each(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with every line."""


class Helpers:
    def apply(self, callback: Callable[[int], int]) -> int:
        return callback(1)

    def join(self, *parts: str) -> str:
        return "".join(parts)


def mention_and_talk(obj: Any, *script: Any) -> tuple[ScriptedModel, Any]:
    """Mention ``obj`` in a first turn, then run a second: both reach the model."""
    model = ScriptedModel([*script, "first", "second"])
    mention = Attachment.mention("it", obj)
    conversation = llm.model(model).request("look at @it", attachments=[mention]).prompt_conversation()
    assert conversation.continuation.prompt() == "first"
    assert conversation.continuation.request("and now?").prompt() == "second"
    conversation.messages.validate()
    return model, conversation


def test_the_describable_methods_are_offered_and_the_others_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="threadline.mentions")
    model, conversation = mention_and_talk(Doc(), calls(call("Doc.read")))
    assert all(request.tool_names == ["Doc.read"] for request in model.requests)
    assert conversation.messages[2].content == "the text"
    warnings = [record.getMessage() for record in caplog.records if record.name == "threadline.mentions"]
    # Each left out once (the toolset is made once per object), saying which and why.
    assert len(warnings) == 2
    assert warnings[0].startswith("mention 'it': Doc.each is not offered to the model: ")
    assert warnings[1] == (
        "mention 'it': Doc.log is not offered to the model: *args and **kwargs cannot be described to a model; "
        "name each argument"
    )


class Unreadable(Exception):
    """An exception whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


class Hostile:
    """A type whose pydantic schema cannot be made: making it raises `Unreadable`."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        raise Unreadable


class Fragile:
    def read(self) -> str:
        """The text."""
        return "the text"

    def broken(self, value: Hostile) -> str:
        """Takes a type that cannot be described."""
        return "never"


def test_a_method_left_out_for_an_error_whose_message_cannot_be_read_is_named_and_the_rest_offered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="threadline.mentions")
    model, _ = mention_and_talk(Fragile(), calls(call("Fragile.read")))
    assert all(request.tool_names == ["Fragile.read"] for request in model.requests)
    warnings = [record.getMessage() for record in caplog.records if record.name == "threadline.mentions"]
    assert warnings == [
        "mention 'it': Fragile.broken is not offered to the model: Unreadable (its message could not be read)"
    ]


def test_an_object_with_no_describable_method_adds_no_tools_and_the_turns_go_on() -> None:
    model, _ = mention_and_talk(Helpers())
    assert [request.tool_names for request in model.requests] == [[], []]


def test_a_mentioned_path_offers_its_describable_methods() -> None:
    model, _ = mention_and_talk(pathlib.Path("/tmp"))
    offered = model.requests[-1].tool_names
    assert "tmp.exists" in offered and "tmp.is_dir" in offered
    assert "tmp.joinpath" not in offered  # *pathsegments


def test_a_mentioned_toolset_offers_its_own_tools() -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    model, conversation = mention_and_talk(Toolset([weather], name="Weather"), calls(call("weather", {"city": "Oslo"})))
    assert all(request.tool_names == ["weather"] for request in model.requests)
    assert conversation.messages[2].content == "sunny in Oslo"


def test_a_mentioned_value_with_no_methods_adds_no_tools() -> None:
    model, _ = mention_and_talk(42)
    assert [request.tool_names for request in model.requests] == [[], []]
