"""`Toolset`: a named group of tools with instructions for the system prompt, made from a list or from the public
methods of an object (`Toolset.from_object`); `Toolset.from_mcp` makes the other kind of toolset, the tools of an
MCP server (`threadline.tools.mcp.toolset.MCPToolset`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._exception_text import describe_exception, exception_message, type_name
from ..errors import UserError
from .approvals import set_approval
from .base_toolset import BaseToolset
from .tool import Tool, as_tool

if TYPE_CHECKING:
    from .mcp.toolset import MCPToolset

__all__ = ["Toolset", "describable_toolset"]


class Toolset(BaseToolset):
    """A named group of tools, optionally with instructions for the system prompt while its tools are offered.

    Args:
        tools: Functions or `Tool`s.
        name: The group's name.
        instructions: Text the context builder adds to the system prompt while these tools are offered.
    """

    __slots__ = ("_tools", "instructions", "name")

    def __init__(
        self,
        tools: Iterable[Callable[..., Any] | Tool],
        name: str | None = None,
        instructions: str | None = None,
    ) -> None:
        self._tools: list[Tool] = [as_tool(item) for item in tools]
        self.name = name
        self.instructions = instructions

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolset({self.name!r}, {self.names()!r})"

    @classmethod
    def from_object(
        cls,
        obj: Any,
        name: str | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        getters: bool = False,
        instructions: str | None = None,
        approval: bool | Mapping[str, Any] | None = None,
    ) -> Toolset:
        """Every public method of ``obj`` as a tool named ``"<Name>.<method>"``.

        Name is ``name``, else the object's ``name`` attribute (when a string), else its class name. Never exposed:
        names starting with ``_``, anything in ``exclude``, methods inherited from ``object``. With
        ``getters=True`` public properties become read-only tools ``"<Name>.get_<prop>"``.

        Args:
            obj: The object (an attached object, sometimes called a charm).
            name: The prefix of the tool names.
            include: Only these member names, if given.
            exclude: Member names never to expose.
            getters: Also expose public properties as getter tools.
            instructions: Text for the system prompt while these tools are offered.
            approval: Which calls wait for a person's decision: True (all), or per member name
                (``{"delete": True, "pay": lambda args: args["amount"] > 100}``; each as `tool`'s ``approval``).

        Raises:
            UserError: for an ``approval`` that names a member that is not one of the tools.
        """
        prefix = name or _object_name(obj)
        tools = _member_tools(obj, prefix, include, exclude, getters, left_out=None)
        set_approval(tools, approval, prefix)
        return cls(tools, name=prefix, instructions=instructions)

    @classmethod
    def from_mcp(
        cls,
        command: Sequence[str] | str | None = None,
        *,
        url: str | None = None,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        timeout: float = 60.0,
        start_timeout: float | None = None,
        approval: bool | Mapping[str, Any] | None = None,
    ) -> MCPToolset:
        """The tools of an MCP server, each named ``"<Name>.<tool>"`` (needs the ``mcp`` extra).

        Give either ``command`` (a stdio server, started as a child process) or ``url`` (a streamable-HTTP
        server). Nothing is started here: the server is connected on first use (listing the tools or calling one),
        the connection is reused across turns, and it is closed by ``close()`` (or ``with``/``async with``), when
        the toolset is garbage-collected, or at exit. See `threadline.tools.mcp.toolset.MCPToolset`.

        Args:
            command: The server's command line, e.g. ``["uvx", "mcp-server-time"]`` (a string is split as a shell
                would).
            url: The endpoint of a streamable-HTTP server, e.g. ``"http://127.0.0.1:8000/mcp"``.
            name: The prefix of the tool names (default: the name the server gives itself).
            env: Environment variables for a stdio server, on top of the few it inherits (``HOME``, ``PATH``…):
                nothing else of this process's environment (API keys) reaches it unless named here.
            include: Only these tools of the server, if given (the server's own names, without the prefix).
            exclude: Tools of the server never to offer.
            timeout: Seconds each call may take before it is cancelled and reported to the model (the tools' own
                timeout: a conversation's ``tool_timeout`` does not cut them shorter).
            start_timeout: Seconds to wait for the server to start and list its tools (default: ``timeout``); a
                server that says nothing by then is stopped, and the start fails with `MCPConnectionError`. Give
                more for one installed on its first start (``uvx``).
            approval: Which calls wait for a person's decision: True (all), or per tool of the server (its own
                names: ``{"delete_file": True}``), as `tool`'s ``approval``; checked when the tools are listed.

        Raises:
            UserError: for bad arguments, or when the ``mcp`` extra is not installed.
        """
        from .mcp.toolset import MCPToolset

        return MCPToolset(
            command=command,
            url=url,
            name=name,
            env=env,
            include=include,
            exclude=exclude,
            timeout=timeout,
            start_timeout=start_timeout,
            approval=approval,
        )


def _object_name(obj: Any) -> str:
    own = getattr(obj, "name", None)
    if isinstance(own, str) and own:
        return own
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__


def _getter_tool(obj: Any, member: str, prefix: str, prop: property) -> Tool:
    def getter() -> Any:
        return getattr(obj, member)

    doc = inspect.getdoc(prop)
    return Tool(getter, name=f"{prefix}.get_{member}", description=doc or f"Read {member} of {prefix}")


def describable_toolset(obj: Any, name: str | None = None) -> tuple[Toolset, list[tuple[str, str]]]:
    """`Toolset.from_object` for an object the user did not make for a model (an @-mentioned one): only the methods
    that can be described to a model, and, for each left out, its tool name and why.

    Where ``from_object`` raises `UserError` for a method with ``*args`` or an argument type JSON schema cannot
    express (the caller asked for that object's tools, and is told at once), this leaves the method out: an
    everyday object (a `pathlib.Path`, a class with one helper taking ``*parts``) still offers the rest.
    """
    prefix = name or _object_name(obj)
    left_out: list[tuple[str, str]] = []
    tools = _member_tools(obj, prefix, None, None, False, left_out=left_out)
    return Toolset(tools, name=prefix), left_out


def _member_tools(
    obj: Any,
    prefix: str,
    include: Iterable[str] | None,
    exclude: Iterable[str] | None,
    getters: bool,
    left_out: list[tuple[str, str]] | None,
) -> list[Tool]:
    """The tools of ``obj``'s public members (see `Toolset.from_object`). With ``left_out`` a list, a member that
    cannot be made a tool is recorded there (tool name, why) instead of raising."""
    excluded = set(exclude or ())
    included = set(include) if include is not None else None
    tools: list[Tool] = []
    for member in sorted(dir(type(obj)) if not isinstance(obj, type) else dir(obj)):
        if member.startswith("_") or member in excluded or (included is not None and member not in included):
            continue
        if hasattr(object, member):
            continue
        try:
            static = inspect.getattr_static(obj, member)
        except AttributeError:
            continue
        if isinstance(static, property):
            if getters:
                tools.append(_getter_tool(obj, member, prefix, static))
            continue
        if not isinstance(static, (staticmethod, classmethod)) and not inspect.isfunction(static):
            continue
        try:
            bound = getattr(obj, member)
            doc = inspect.getdoc(bound)
            tools.append(
                Tool(bound, name=f"{prefix}.{member}", description=None if doc else f"{member} handler from {prefix}")
            )
        except Exception as exc:
            if left_out is None:
                raise
            # An object not made for a model may have anything among its methods: none of them breaks the rest.
            left_out.append((f"{prefix}.{member}", _reason(exc, f"{prefix}.{member}")))
    return tools


def _reason(exc: Exception, tool_name: str) -> str:
    # The exception may be the object's own (a type it annotates with), whose message may not even be readable.
    text = exception_message(exc)
    if text is None:
        return describe_exception(exc)
    text = text or type_name(exc)
    if not isinstance(exc, UserError):
        return f"{type_name(exc)}: {text}"
    return text.removeprefix(f"tool {tool_name!r}: ")  # the caller names the tool
