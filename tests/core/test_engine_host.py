"""The turn engine drives any `TurnHost`, not only `Conversation` (issue 10): a host that keeps its log in a plain
`MessageList` (and optionally a store) runs full tool turns in a few lines, and the engine reaches its caller only
through that interface."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    ContextBuilder,
    MessageList,
    StoreError,
    ToolMessage,
    UserMessage,
    user,
)
from threadline.context import BuiltContext
from threadline.engine import INTERRUPTED_TOOL, TurnHost, TurnOptions, TurnResult, run_turn
from threadline.messages import Message
from threadline.models.base import Model
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel
from threadline.tools import ResolvedTools, Tool, resolve_tools

from ._support import call, calls, shapes

SRC = Path(__file__).parents[2] / "src" / "threadline"


def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"22 C in {city}"


class ListHost:
    """What ``generate_text`` needs: a log in a plain `MessageList`, written through to a store when there is one."""

    def __init__(self, log: list[Message], model: Model, tools: list[Any], store: Store | None = None) -> None:
        self._log = MessageList(log)
        self._model = model
        self._tools = tools
        self._store = store
        self._builder = ContextBuilder()
        self._call_ids = {c.id for m in self._log if isinstance(m, AssistantMessage) for c in m.tool_calls}
        if store is not None:
            store.create_conversation(id="host")
            store.append("host", list(self._log))

    @property
    def messages(self) -> MessageList:
        return self._log

    def record(self, message: Message) -> None:
        if self._store is not None:
            self._store.append("host", [message])  # persist first: a failure leaves both sides equal
        self._log.append(message)

    def resolve_model(self) -> Model:
        return self._model

    def resolve_tools(self) -> ResolvedTools:
        return resolve_tools(self._tools)

    async def build_request_context(self, tools: ResolvedTools, run_brief: Any) -> BuiltContext:
        return self._builder.build(self._log, "agent", tools=tools, run_brief=run_brief)

    def artifact_reader(self) -> Tool | None:
        return None

    def known_call_ids(self) -> set[str]:
        return self._call_ids


async def run(host: TurnHost, **options: Any) -> tuple[list[Message], TurnResult]:
    result = TurnResult()
    new = [message async for message in run_turn(host, TurnOptions(**options), result)]
    return new, result


async def test_a_host_without_a_conversation_runs_a_tool_turn() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"}, id="c1")), "It is 22 C in Paris."])
    host = ListHost([user("Weather in Paris?")], model, [get_weather])
    new, result = await run(host)
    assert shapes(new) == [
        ("assistant", None, (("c1", "get_weather", (("city", "Paris"),), None),), None),
        ("tool", "c1", "get_weather", "22 C in Paris", False),
        ("assistant", "It is 22 C in Paris.", (), None),
    ]
    assert list(host.messages)[1:] == new == result.new_messages
    assert (result.stop_reason, result.rounds, result.text) == ("end", 1, "It is 22 C in Paris.")
    host.messages.validate()
    # The model was sent the host's log through the host's context builder, and offered the host's tools.
    assert model.requests[0].tool_names == ["get_weather"]
    assert model.requests[1].messages[-1].content == "22 C in Paris"
    assert "c1" in host.known_call_ids()


async def test_the_host_log_is_repaired_and_its_ids_kept_unique() -> None:
    crashed = [user("Weather?"), calls(call("get_weather", {"city": "Oslo"}, id="call_0"))]
    model = ScriptedModel([calls(call("get_weather", {"city": "Rome"}, id="call_0")), "done"])
    host = ListHost(crashed, model, [get_weather])
    new, _ = await run(host)
    repaired = new[0]
    assert isinstance(repaired, ToolMessage) and repaired.content == INTERRUPTED_TOOL and repaired.is_error
    again = new[1]
    assert isinstance(again, AssistantMessage)
    assert again.tool_calls[0].id != "call_0"  # the server repeated an id the log already has
    host.messages.validate()


def test_a_host_with_a_store_keeps_memory_and_store_equal(tmp_path: Path) -> None:
    import asyncio

    with open_store(f"sqlite:///{tmp_path / 'host.db'}") as store:
        model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), "Sunny."])
        host = ListHost([user("Weather?")], model, [get_weather], store)
        asyncio.run(run(host))
        assert store.load("host") == host.messages
        store.load("host").validate()


async def test_a_failed_record_stops_the_turn() -> None:
    class Refusing(ListHost):
        def record(self, message: Message) -> None:
            if isinstance(message, ToolMessage):
                raise StoreError("disk full")
            super().record(message)

    ran: list[str] = []

    def side_effect(city: str) -> str:
        """Record that it ran."""
        ran.append(city)
        return "ok"

    model = ScriptedModel([calls(call("side_effect", {"city": "A"})), "never asked"])
    host = Refusing([UserMessage(content="go")], model, [side_effect])
    with pytest.raises(StoreError, match="disk full"):
        await run(host)
    assert ran == ["A"] and model.remaining == 1  # the turn stopped at the failed write
    assert [type(m) for m in host.messages] == [UserMessage, AssistantMessage]


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """Every import in a module, nested ones included: ``(module, names)`` (relative modules keep their dots)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found.append(("." * node.level + (node.module or ""), [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


def test_the_engine_imports_none_of_its_callers() -> None:
    callers = {"conversation", "builder", "runs"}
    for path in sorted((SRC / "engine").glob("*.py")):
        modules = {module.lstrip(".").removeprefix("threadline.").split(".")[0] for module, _ in imports_of(path)}
        assert not callers & modules, path.name


TURN_MODULES = sorted(
    path.relative_to(SRC).as_posix()
    for pattern in ("engine/*.py", "conversation/*.py", "builder.py", "runs.py", "context/*.py")
    for path in SRC.glob(pattern)
)


@pytest.mark.parametrize("name", TURN_MODULES)
def test_no_module_of_the_turn_imports_another_modules_private_names(name: str) -> None:
    private = [
        (module, imported)
        for module, names in imports_of(SRC / name)
        for imported in names
        if imported.startswith("_") and not imported.startswith("__")
    ]
    assert private == []


def test_the_builder_and_runs_use_only_public_members_of_a_conversation() -> None:
    for name in ("builder.py", "runs.py"):
        tree = ast.parse((SRC / name).read_text(encoding="utf-8"))
        touched = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("conversation", "conv")
            and node.attr.startswith("_")
        }
        assert touched == set(), name
