"""Tools from functions and objects, toolsets, and the wire-name catalog (docs/architecture.md#tools)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any, Literal

import pydantic
import pytest

import threadline
from threadline import AssistantMessage, Tool, ToolCall, ToolCatalog, Toolset, UserError, tool
from threadline.testing import ScriptedModel
from threadline.tools import encode_result


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    label: str
    sizes: list[int]


def get_weather(city: str, unit: Literal["C", "F"] = "C", days: int | None = None) -> str:
    """Get the current weather for a city.

    Uses the national service.

    Args:
        city: The city's name,
            in English.
        unit: Temperature unit.
        days: How many days of forecast.

    Returns:
        A short description.
    """
    return f"22 {unit} in {city}"


# -- schema from functions ---------------------------------------------------------------------------------------
def test_plain_function_becomes_a_tool_with_name_description_and_schema() -> None:
    made = Tool(get_weather)
    assert made.name == "get_weather"
    assert made.description == "Get the current weather for a city.\n\nUses the national service."
    params = made.parameters
    assert params["type"] == "object"
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["city"] == {"type": "string", "description": "The city's name, in English."}
    assert props["unit"]["enum"] == ["C", "F"]
    assert props["unit"]["default"] == "C"
    assert props["unit"]["description"] == "Temperature unit."
    assert {"type": "integer"} in props["days"]["anyOf"] and {"type": "null"} in props["days"]["anyOf"]
    assert "title" not in json.dumps(params)  # pydantic's titles are noise for a model
    assert made.spec().name == "get_weather" and made.spec().parameters == params


def test_sphinx_style_param_descriptions_are_read_too() -> None:
    def lookup(key: str) -> str:
        """Look a key up.

        :param key: The key to find.
        """
        return key

    assert Tool(lookup).parameters["properties"]["key"]["description"] == "The key to find."


def test_function_without_docstring_or_hints() -> None:
    def anything(a, b=3):  # type: ignore[no-untyped-def]
        return a

    made = Tool(anything)
    assert made.description == ""
    assert made.parameters["required"] == ["a"]
    assert made.parameters["properties"]["b"]["default"] == 3


def test_pydantic_model_and_dataclass_arguments_are_schemas_and_validated_into_instances() -> None:
    def place(point: Point, box: Box) -> str:
        """Place a box at a point."""
        return "ok"

    made = Tool(place)
    defs = made.parameters["$defs"]
    assert defs["Point"]["required"] == ["x"]
    assert defs["Box"]["properties"]["sizes"] == {"type": "array", "items": {"type": "integer"}}
    kwargs = made.validate({"point": {"x": 1}, "box": {"label": "a", "sizes": [1, 2]}})
    assert kwargs["point"] == Point(x=1, y=0)
    assert kwargs["box"] == Box(label="a", sizes=[1, 2])


def test_decorator_overrides_name_description_and_timeout() -> None:
    @tool(name="weather", description="Weather, now.", timeout=2.5)
    def anything(city: str) -> str:
        """Ignored docstring."""
        return city

    assert isinstance(anything, Tool)
    assert (anything.name, anything.description, anything.timeout) == ("weather", "Weather, now.", 2.5)
    assert anything("Paris") == "Paris"  # still callable


def test_bare_decorator_and_threadline_tool_alias() -> None:
    @threadline.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert isinstance(ping, Tool)
    assert (ping.name, ping.description, ping.timeout) == ("ping", "Answer pong.", None)
    assert ping.parameters["properties"] == {}
    assert ping() == "pong"


def test_async_and_sync_handlers_are_both_invoked() -> None:
    async def slow_add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    def add(a: int, b: int) -> int:
        return a + b

    async def run() -> tuple[Any, Any]:
        return await Tool(slow_add).invoke({"a": 1, "b": 2}), await Tool(add).invoke({"a": 3, "b": 4})

    assert Tool(slow_add).is_async and not Tool(add).is_async
    assert asyncio.run(run()) == (3, 7)


def test_callable_object_with_async_call_is_async() -> None:
    class Adder:
        async def __call__(self, a: int) -> int:
            return a + 1

    made = Tool(Adder(), name="adder")
    assert made.is_async
    assert made.parameters["required"] == ["a"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "city: Field required"),
        ({"city": "Paris", "color": "red"}, "color: Extra inputs are not permitted"),
        ({"city": 12}, "city: Input should be a valid string"),
        ({"city": "Paris", "unit": "K"}, "unit: Input should be 'C' or 'F'"),
        ({"city": "Paris", "days": "many"}, "days"),
    ],
)
def test_validation_names_each_offending_field(arguments: dict[str, Any], fragment: str) -> None:
    from threadline.tools import ToolArgumentsError

    with pytest.raises(ToolArgumentsError, match=re.escape(fragment)):
        Tool(get_weather).validate(arguments)


def test_unusable_signatures_are_refused_with_a_clear_error() -> None:
    def star(*args: int) -> None: ...

    def kw(**kwargs: int) -> None: ...

    def positional(a: int, /) -> None: ...

    with pytest.raises(UserError, match=r"\*args and \*\*kwargs"):
        Tool(star)
    with pytest.raises(UserError, match=r"\*args and \*\*kwargs"):
        Tool(kw)
    with pytest.raises(UserError, match="positional-only"):
        Tool(positional)
    with pytest.raises(UserError, match="needs a callable"):
        Tool(42)  # type: ignore[arg-type]


class Opaque:
    """A type pydantic cannot describe."""


def test_argument_types_that_have_no_json_schema_are_refused() -> None:
    def use(thing: Opaque) -> None: ...

    with pytest.raises(UserError, match="JSON schema"):
        Tool(use)


def test_unresolvable_type_hints_are_refused_with_a_clear_error() -> None:
    # Under postponed annotations a class local to a function cannot be resolved from the hint's text.
    class Local(pydantic.BaseModel):
        a: int

    def use(thing: Local) -> None: ...

    with pytest.raises(UserError, match=r"tool 'use': cannot resolve the type hints .*thing: Local"):
        Tool(use)


# -- results ------------------------------------------------------------------------------------------------------
def test_results_are_str_as_is_else_json() -> None:
    assert encode_result("plain text, not JSON") == "plain text, not JSON"
    assert json.loads(encode_result({"a": [1, 2], "b": None})) == {"a": [1, 2], "b": None}
    assert json.loads(encode_result(42)) == 42
    assert json.loads(encode_result(None)) is None
    assert json.loads(encode_result(Point(x=1, y=2))) == {"x": 1, "y": 2}
    assert json.loads(encode_result(Box(label="b", sizes=[3]))) == {"label": "b", "sizes": [3]}
    assert json.loads(encode_result([Point(x=1), Box(label="c", sizes=[])])) == [
        {"x": 1, "y": 0},
        {"label": "c", "sizes": []},
    ]
    assert encode_result("é") == "é"


# -- toolsets from objects ----------------------------------------------------------------------------------------
class Base:
    def inherited(self) -> str:
        """From the base class."""
        return "base"


class Notes(Base):
    """A small notebook."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._secret = "s"

    def add_note(self, text: str) -> str:
        """Add a note.

        Args:
            text: The note.
        """
        self.items.append(text)
        return f"added {text}"

    def count(self) -> int:
        return len(self.items)

    async def clear(self) -> str:
        self.items.clear()
        return "cleared"

    @staticmethod
    def version() -> str:
        return "1"

    @classmethod
    def kind(cls) -> str:
        return cls.__name__

    @property
    def size(self) -> int:
        """How many notes there are."""
        return len(self.items)

    @property
    def _hidden(self) -> int:
        return 0

    def _private(self) -> str:
        return "never"

    def __str__(self) -> str:
        return "notes"

    def __repr__(self) -> str:
        return "Notes()"


def test_from_object_exposes_public_methods_named_by_class() -> None:
    toolset = Toolset.from_object(Notes())
    assert toolset.name == "Notes"
    assert sorted(toolset.names()) == [
        "Notes.add_note",
        "Notes.clear",
        "Notes.count",
        "Notes.inherited",
        "Notes.kind",
        "Notes.version",
    ]
    for item in toolset:
        assert isinstance(item, Tool)
        assert item.name.startswith("Notes.")
        assert not any(part.startswith("_") for part in item.name.split("."))


def test_from_object_descriptions_use_docstrings_else_a_handler_line() -> None:
    toolset = Toolset.from_object(Notes())
    assert toolset["Notes.add_note"].description == "Add a note."
    assert toolset["Notes.add_note"].parameters["properties"]["text"]["description"] == "The note."
    assert toolset["Notes.count"].description == "count handler from Notes"
    assert toolset["Notes.inherited"].description == "From the base class."
    with pytest.raises(KeyError):
        toolset["Notes._private"]


def test_from_object_tools_are_bound_to_the_object() -> None:
    notes = Notes()
    toolset = Toolset.from_object(notes)

    async def run() -> list[Any]:
        return [
            await toolset["Notes.add_note"].invoke({"text": "milk"}),
            await toolset["Notes.count"].invoke({}),
            await toolset["Notes.clear"].invoke({}),
        ]

    assert asyncio.run(run()) == ["added milk", 1, "cleared"]
    assert toolset["Notes.clear"].is_async
    assert "self" not in toolset["Notes.add_note"].parameters["properties"]


def test_from_object_never_exposes_private_dunder_or_object_members() -> None:
    class Sneaky:
        def __call__(self) -> None: ...

        def __getattr__(self, name: str) -> Any:
            return lambda: name

        def _helper(self) -> None: ...

        def visible(self) -> None: ...

    names = Toolset.from_object(Sneaky()).names()
    assert names == ["Sneaky.visible"]
    everything = {name.split(".", 1)[1] for name in Toolset.from_object(Notes(), getters=True).names()}
    assert not {member for member in everything if member.startswith("_")}
    assert not everything & set(dir(object))


def test_from_object_name_resolution() -> None:
    class Named:
        name = "kitchen"

        def switch(self) -> str:
            return "on"

    class NotAStringName:
        name = 3

        def go(self) -> None: ...

    assert Toolset.from_object(Named()).names() == ["kitchen.switch"]
    assert Toolset.from_object(Named(), name="lights").names() == ["lights.switch"]
    assert Toolset.from_object(NotAStringName()).names() == ["NotAStringName.go"]
    assert Toolset.from_object(Named(), name="lights").name == "lights"


def test_from_object_include_and_exclude() -> None:
    assert Toolset.from_object(Notes(), include=["add_note", "count"]).names() == ["Notes.add_note", "Notes.count"]
    names = Toolset.from_object(Notes(), exclude=["clear", "inherited", "kind", "version"]).names()
    assert names == ["Notes.add_note", "Notes.count"]
    assert Toolset.from_object(Notes(), include=["_private", "add_note"]).names() == ["Notes.add_note"]


def test_from_object_getters_expose_public_properties_read_only() -> None:
    notes = Notes()
    toolset = Toolset.from_object(notes, getters=True)
    assert "Notes.get_size" in toolset.names()
    assert "Notes.get__hidden" not in toolset.names() and "Notes.get_hidden" not in toolset.names()
    getter = toolset["Notes.get_size"]
    assert getter.parameters["properties"] == {}
    assert getter.description == "How many notes there are."
    notes.items.extend(["a", "b"])
    assert asyncio.run(getter.invoke({})) == 2  # reads the live value
    assert "Notes.get_size" not in Toolset.from_object(notes).names()


def test_toolset_groups_function_tools_with_instructions() -> None:
    def ping() -> str:
        return "pong"

    toolset = Toolset([get_weather, Tool(ping, name="ping2")], name="misc", instructions="Use them wisely.")
    assert len(toolset) == 2
    assert [t.name for t in toolset] == ["get_weather", "ping2"]
    assert toolset.instructions == "Use them wisely."
    assert toolset["get_weather"].parameters["required"] == ["city"]
    with pytest.raises(UserError, match="not a tool"):
        Toolset([42])  # type: ignore[list-item]


class LazyTools(threadline.BaseToolset):
    """A toolset of a user's own kind: its tools are made on first use (as an MCP server's are listed)."""

    name = "Lazy"
    instructions = "Lazy tools are made when first needed."

    def __init__(self) -> None:
        self.made = 0
        self._tools: list[Tool] | None = None

    def __iter__(self) -> Any:
        if self._tools is None:
            self.made += 1

            def double(n: int) -> int:
                return 2 * n

            self._tools = [Tool(double, name="Lazy.double")]
        return iter(self._tools)


def test_a_toolset_of_ones_own_kind_needs_only_iter_name_and_instructions() -> None:
    with pytest.raises(TypeError):
        threadline.BaseToolset()  # type: ignore[abstract]
    lazy = LazyTools()
    assert lazy.made == 0
    assert lazy.names() == ["Lazy.double"] and len(lazy) == 1 and lazy["Lazy.double"].name == "Lazy.double"
    with pytest.raises(KeyError):
        lazy["Lazy.other"]
    assert lazy.made == 1
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="Lazy.double", arguments={"n": 21})]), "42"]
    )
    conversation = threadline.llm.model(model).tools(lazy).request("double 21").prompt_conversation()
    assert conversation.continuation.prompt() == "42"
    (result,) = [m for m in conversation.messages if isinstance(m, threadline.ToolMessage)]
    assert result.content == "42" and not result.is_error
    assert model.requests[0].tools[0].name == "Lazy.double"
    assert lazy.instructions in model.requests[0].messages[0].content
    generated = threadline.generate_text_sync(
        model=ScriptedModel(
            [AssistantMessage(tool_calls=[ToolCall(id="c1", name="Lazy.double", arguments={"n": 2})]), "4"]
        ),
        prompt="double 2",
        tools=[lazy],
    )
    assert generated.text == "4"


# -- wire names ---------------------------------------------------------------------------------------------------
WIRE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_catalog_keeps_safe_names_and_sanitizes_others() -> None:
    catalog = ToolCatalog(["get_weather", "Notes.add_note", "x-y"])
    assert catalog.wire("get_weather") == "get_weather"
    assert catalog.wire("x-y") == "x-y"
    assert catalog.wire("Notes.add_note") == "Notes_add_note"
    assert catalog.real("Notes_add_note") == "Notes.add_note"


def test_catalog_resolves_collisions_and_long_names_deterministically() -> None:
    names = [
        "a.b",
        "a_b",
        "a:b",
        "a b",
        "x" * 64,
        "x" * 65,
        "x" * 200,
        "y" * 70 + ".method",
        "Ünïcode.naïve",
        "Notes.add",
        "Notes_add",
        "名前",
    ]
    catalog = ToolCatalog(names)
    wires = [catalog.wire(name) for name in names]
    assert all(WIRE.match(wire) for wire in wires), wires
    assert len(set(wires)) == len(names)
    assert [catalog.real(wire) for wire in wires] == names
    assert catalog.wire("a_b") == "a_b" and catalog.wire("x" * 64) == "x" * 64  # safe names keep themselves
    again = ToolCatalog(list(reversed(names)))
    assert [again.wire(name) for name in names] == wires  # depends on the names, not their order
    other_process_style = ToolCatalog(sorted(names, key=len))
    assert [other_process_style.wire(name) for name in names] == wires


def test_catalog_assigns_unknown_names_on_first_use_and_passes_unknown_wire_names_through() -> None:
    catalog = ToolCatalog()
    wire = catalog.wire("Notes.add_note")
    assert WIRE.match(wire)
    assert catalog.real(wire) == "Notes.add_note"
    assert catalog.wire("Notes.add_note") == wire
    assert catalog.real("never_seen") == "never_seen"
