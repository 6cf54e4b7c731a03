"""MCP servers as toolsets: `MCPToolset`, made by `Toolset.from_mcp` (the ``mcp`` extra). It is a `BaseToolset`,
accepted wherever tools are, like a `Toolset`.

Each tool of the server becomes a `Tool` named ``"<Name>.<tool>"`` whose parameters are the server's own JSON
schema (no signature to read: the schema is the contract) and whose description is the server's. The model's
arguments are checked against that schema before anything is sent, so a bad call is answered at once with what is
wrong (a ``$ref`` outside the schema is never fetched: see `_schema_validator`); the server's instructions become the
toolset's ``instructions``.

A call's result is mapped to the text of the tool result: text blocks as they are, structured content as JSON when
no text carries it, images and other binary content as a short line naming their type and size (a tool result is
text). An ``isError`` result, a server that died, hung past the timeout or refused the call all raise
`MCPToolError` from the handler, which the turn engine records as an error result: the loop goes on. The connection
itself (its own thread and loop, restart, shutdown) is `threadline.tools.mcp.connection.MCPConnection`.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
import os
import shlex
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...errors import UserError
from ...tracing import hooks as tracing
from ..approvals import set_approval
from ..base_toolset import BaseToolset
from ..tool import Tool, ToolArgumentsError, approval_problem
from .connection import MCPConnection, MCPConnectionError, MCPToolError, ServerListing, safe_url

if TYPE_CHECKING:
    from mcp.types import CallToolResult

__all__ = ["MCPConnectionError", "MCPToolError", "MCPToolset", "result_text"]

# The engine's own cut-off for a call comes this much after ours, so the model reads our message (which says
# whether the server hung or died), not the generic one.
_TIMEOUT_MARGIN = 5.0


class MCPToolset(BaseToolset):
    """The tools of one MCP server, named ``"<Name>.<tool>"``. Made by `Toolset.from_mcp` (see it for the arguments).

    Nothing runs until the tools are first needed (iterating, ``len``, ``names()``, ``name`` when not given,
    ``instructions``, or a call); then the server is started (or the URL connected) and its tools listed, which
    blocks the calling thread up to ``start_timeout`` seconds (by default ``timeout``), plus the few the SDK takes to
    stop a server that did not answer. In async code, ``await toolset.aconnect()`` first keeps that wait off the
    event loop. The connection is kept for every later turn, from any thread or event loop, and
    closed by `close` / `aclose` (or ``with`` / ``async with``), when the toolset is garbage-collected, or at exit.

    Raises (on first use):
        MCPConnectionError: when the server cannot be started or connected, or does not answer in time.
        UserError: when ``include`` names a tool the server does not have.
    """

    __slots__ = (
        "__weakref__",
        "_approval",
        "_connection",
        "_exclude",
        "_given_instructions",
        "_given_name",
        "_include",
        "_listed",
        "_listing",
        "timeout",
    )

    def __init__(
        self,
        *,
        command: Sequence[str] | str | None = None,
        url: str | None = None,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        timeout: float = 60.0,
        start_timeout: float | None = None,
        approval: bool | Mapping[str, Any] | None = None,
    ) -> None:
        argv, endpoint = _check_target(command, url)
        if not isinstance(approval, Mapping) and approval_problem(approval) is not None:
            raise UserError(f"approval must be True, False, a function or a mapping, got {type(approval).__name__}")
        self._approval = approval
        if env is not None and (
            not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise UserError("env must map names to strings")
        _check_seconds("timeout", timeout)
        if start_timeout is not None:
            _check_seconds("start_timeout", start_timeout)
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise UserError("name must be a non-empty string")
        if importlib.util.find_spec("mcp") is None:
            raise UserError("Toolset.from_mcp needs the 'mcp' extra: pip install 'threadline[mcp]'")
        self._given_name = name
        self._given_instructions: str | None = None
        self._include = _names(include, "include")
        self._exclude = _names(exclude, "exclude") or frozenset()
        self.timeout = float(timeout)
        self._listed: list[Tool] | None = None
        self._listing: ServerListing | None = None
        label = repr(name) if name else repr(argv[0] if argv else safe_url(endpoint or ""))
        self._connection = MCPConnection(
            command=argv,
            url=endpoint,
            env=env,
            timeout=self.timeout,
            # ``timeout`` bounds the start too, as a caller giving one expects (before, the start waited at least a
            # minute whatever it said); a server installed on its first start (``uvx``) may need ``start_timeout``.
            start_timeout=float(start_timeout) if start_timeout is not None else self.timeout,
            label=label,
        )
        # Collected with the toolset: stop the server without waiting (the atexit hook waits for what remains).
        weakref.finalize(self, self._connection.close_soon).atexit = False

    # -- the listing ---------------------------------------------------------------------------------------------
    def connect(self) -> MCPToolset:
        """Start (or connect to) the server and list its tools now, if not done yet; returns the toolset."""
        self._tools_now()
        return self

    async def aconnect(self) -> MCPToolset:
        """`connect` without blocking the running event loop."""
        import asyncio

        await asyncio.to_thread(self._tools_now)
        return self

    def _tools_now(self) -> list[Tool]:
        listed = self._listed
        if listed is None:
            listing = self._connection.open()
            listed = self._make_tools(listing)
            self._listing = listing
            self._listed = listed
        return listed

    def _make_tools(self, listing: ServerListing) -> list[Tool]:
        prefix = self._given_name or listing.name or _default_name(self._connection)
        self._connection.label = repr(prefix)
        available = {tool.name for tool in listing.tools}
        if self._include is not None:
            missing = sorted(self._include - available)
            if missing:
                raise UserError(
                    f"MCP server {prefix!r} has no tool {', '.join(map(repr, missing))} "
                    f"(it has: {', '.join(sorted(available)) or 'none'})"
                )
        tools: list[Tool] = []
        for remote in listing.tools:
            if remote.name in self._exclude or (self._include is not None and remote.name not in self._include):
                continue
            full_name = f"{prefix}.{remote.name}"
            schema = dict(remote.input_schema or {"type": "object", "properties": {}})
            tools.append(
                Tool.from_schema(
                    _caller(self._connection, remote.name),
                    name=full_name,
                    parameters=schema,
                    description=remote.description or f"{remote.name} tool from {prefix}",
                    validator=_schema_validator(schema),
                    timeout=self.timeout + _TIMEOUT_MARGIN,
                )
            )
        set_approval(tools, self._approval, prefix)  # a name the server does not have is refused here
        return tools

    # -- BaseToolset ---------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The prefix of the tool names: the given name, else the server's own (connects if needed)."""
        if self._given_name is not None:
            return self._given_name
        self._tools_now()
        listing = self._listing
        return (listing.name if listing is not None else None) or _default_name(self._connection)

    @name.setter
    def name(self, value: str | None) -> None:
        self._given_name = value

    @property
    def instructions(self) -> str | None:
        """The server's instructions (connects if needed)."""
        if self._given_instructions is not None:
            return self._given_instructions
        self._tools_now()
        return self._listing.instructions if self._listing is not None else None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._given_instructions = value

    def __iter__(self) -> Iterator[Tool]:
        """The tools, in the server's order (connects if needed)."""
        return iter(self._tools_now())

    # -- lifetime ------------------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """Whether the server is connected now (for stdio: its process is running).

        A server that dies is noticed within moments, by itself; a call that races with the death is answered
        with an error result saying the server stopped during the call, and the next call restarts it.
        """
        return self._connection.connected

    def close(self) -> None:
        """Stop the server (stdio) or end the session (HTTP), waiting for it; the toolset stays usable and
        reconnects on its next call."""
        self._connection.close()

    async def aclose(self) -> None:
        """`close` without blocking the running event loop."""
        import asyncio

        await asyncio.to_thread(self._connection.close)

    def __enter__(self) -> MCPToolset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPToolset:
        return await self.aconnect()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        # The program or the address only: arguments and URL credentials may hold secrets.
        connection = self._connection
        where = connection.command[0] if connection.command else safe_url(connection.url or "")
        listed = f", {self.names()!r}" if self._listed is not None else ""
        return f"MCPToolset({where!r}{listed})"


def _check_target(command: Sequence[str] | str | None, url: str | None) -> tuple[list[str] | None, str | None]:
    if (command is None) == (url is None):
        raise UserError("Toolset.from_mcp needs either command=[...] (a stdio server) or url=... (streamable HTTP)")
    if command is not None:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv or not all(isinstance(part, str) and part for part in argv):
            raise UserError(
                f"command must be a non-empty list of strings, e.g. ['uvx', 'mcp-server-time'], got {command!r}"
            )
        return argv, None
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise UserError(f"url must be an http:// or https:// address, got {url!r}")
    return None, url


def _check_seconds(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UserError(f"{what} must be a positive number of seconds, got {value!r}")


def _names(items: Iterable[str] | None, what: str) -> frozenset[str] | None:
    if items is None:
        return None
    if isinstance(items, str):
        raise UserError(f"{what} must be a list of tool names, not one string")
    names = frozenset(items)
    if not all(isinstance(item, str) for item in names):
        raise UserError(f"{what} must be a list of tool names")
    return names


def _default_name(connection: MCPConnection) -> str:
    if connection.command:
        return os.path.basename(connection.command[0]) or "mcp"
    return urlsplit(connection.url or "").hostname or "mcp"


def _caller(connection: MCPConnection, remote: str) -> Callable[..., Awaitable[str]]:
    """The handler of one tool: it holds the connection, not the toolset, so the toolset can be collected."""

    async def call(**arguments: Any) -> str:
        if tracing.tracer is not None:  # the tool call's span says it went to an MCP server
            tracing.tracer.mcp_call(remote, "pipe" if connection.command else "tcp", connection.url)
        return result_text(await connection.call(remote, arguments))

    call.__name__ = remote
    return call


def _schema_validator(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    """A check of the model's arguments against the server's schema (None if the schema itself is unusable: the
    server then judges the arguments).

    Only references inside the schema itself (``#/$defs/...``, the JSON Schema meta-schemas) are followed. A
    ``$ref`` to anything else (``https://...``, ``file:...``) is never fetched: a server's schema must not make us
    reach a network address or read a file (nor wait for either, on the event loop, before the call's timeout
    applies). When a call's arguments reach such a reference, the check of that call stops there: the problems
    found before it are reported as usual, and if there were none the arguments go to the server unchecked, which
    judges them itself.
    """
    import jsonschema
    import referencing
    import referencing.exceptions

    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    # An empty registry of our own, not jsonschema's default: that one retrieves any remote reference by URL.
    validator = validator_class(schema, registry=referencing.Registry())

    def check(arguments: Mapping[str, Any]) -> dict[str, Any]:
        found = []
        try:
            for error in validator.iter_errors(dict(arguments)):
                found.append(error)
        except referencing.exceptions.Unresolvable:
            pass  # a reference outside the schema: what lies past it is the server's to judge
        errors = sorted(found, key=lambda error: list(error.absolute_path))
        if errors:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error.absolute_path) or 'arguments'}: {error.message}"
                for error in errors[:5]
            )
            raise ToolArgumentsError(problems)
        return dict(arguments)

    return check


def result_text(result: CallToolResult) -> str:
    """The text a tool result carries to the model for an MCP ``CallToolResult``.

    Raises:
        MCPToolError: for an ``isError`` result, with the server's text.
    """
    parts: list[str] = []
    has_text = False
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
            has_text = True
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {block.mime_type}, {_decoded_size(block.data):,} bytes]")  # type: ignore[union-attr]
        elif kind == "resource_link":
            label = f" ({block.name})" if getattr(block, "name", None) else ""  # type: ignore[union-attr]
            parts.append(f"[resource: {block.uri}{label}]")  # type: ignore[union-attr]
        elif kind == "resource":
            resource = block.resource  # type: ignore[union-attr]
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(text)
                has_text = True
            else:
                mime = f", {resource.mime_type}" if resource.mime_type else ""
                blob = getattr(resource, "blob", "")
                parts.append(f"[resource: {resource.uri}{mime}, {_decoded_size(blob):,} bytes]")
        else:
            parts.append(f"[{kind or type(block).__name__} content]")
    if not has_text and result.structured_content is not None:
        # Servers should repeat structured output as text; when one does not, the JSON is the result.
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if result.is_error:
        raise MCPToolError(text or "the tool reported an error without a message")
    return text


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
