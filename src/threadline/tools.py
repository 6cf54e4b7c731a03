"""Tools: from functions, from whole objects, grouped in toolsets, named safely on the wire.

A plain function (sync or async) is a tool: its name, its docstring as the description, a JSON schema from its
type hints (built with pydantic, imported only when a tool is made). ``@tool(...)`` overrides name, description and
timeout. `Tool.from_schema` makes a tool from a JSON schema instead (the tools of an MCP server). `Toolset.from_object`
turns every public method of an object into a tool named ``"<Name>.<method>"``; `Toolset.from_mcp` does the same for
the tools of an MCP server (see `threadline.mcp_toolset`).

The model's arguments are validated against the schema before the call; invalid JSON, schema violations, unknown
tools, exceptions and timeouts all become a `ToolMessage` with ``is_error=True`` (see `execute_tool_call`), so the
loop goes on and the model can correct itself.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import re
import time
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, overload

import msgspec

from ._text import replace_surrogates_in
from .errors import UserError
from .messages import ToolCall, ToolMessage
from .models.base import ToolSpec

if TYPE_CHECKING:
    import asyncio

    from ._workers import Outcome
    from .conversation import Conversation
    from .mcp_toolset import MCPToolset

__all__ = [
    "DynamicTools",
    "Tool",
    "ToolCatalog",
    "ToolLike",
    "Toolset",
    "describe_exception",
    "dynamic_tools",
    "encode_result",
    "execute_tool_call",
    "is_dynamic_provider",
    "resolve_tools",
    "tool",
]


class ToolArgumentsError(Exception):
    """The model's arguments did not validate; the message is meant for the model."""


class Tool:
    """A callable the model may invoke.

    Attributes:
        name: The real name (may contain dots, e.g. ``Notes.add_note``); the wire name is derived per request.
        description: What the tool does, for the model.
        parameters: JSON schema of the arguments.
        handler: The function called with the validated arguments as keyword arguments.
        timeout: Seconds before a running call is cut off and reported to the model (None: the conversation's).
    """

    __slots__ = (
        "_check",
        "_fields",
        "_validator",
        "description",
        "handler",
        "is_async",
        "name",
        "parameters",
        "timeout",
    )

    def __init__(
        self,
        handler: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(handler):
            raise UserError(f"a tool needs a callable, got {type(handler).__name__}")
        fn_name = getattr(handler, "__name__", None) or type(handler).__name__
        self.name: str = name or fn_name
        if not isinstance(self.name, str) or not self.name:
            raise UserError("a tool needs a non-empty name")
        signature = _signature(handler, self.name)
        self.description: str = description if description is not None else signature.summary
        self.handler = handler
        self.timeout = timeout
        self.is_async = signature.is_async
        self._check: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
        self._validator = signature.validator
        self._fields = signature.fields
        self.parameters: dict[str, Any] = dict(parameters) if parameters is not None else signature.parameters

    @classmethod
    def from_schema(
        cls,
        handler: Callable[..., Any],
        *,
        name: str,
        parameters: Mapping[str, Any],
        description: str = "",
        validator: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """A tool described by a JSON schema instead of its handler's signature (e.g. a tool of an MCP server).

        Args:
            handler: Called with the arguments as keyword arguments (sync or async).
            name: The real name.
            parameters: The JSON schema of the arguments, offered to the model as it is.
            description: What the tool does, for the model.
            validator: ``validator(arguments) -> kwargs``, raising `ToolArgumentsError` with a message for the model
                when the arguments do not fit the schema. None passes them on unchecked, so the handler (or the
                server behind it) judges them.
            timeout: Seconds before a running call is cut off (None: the conversation's).

        Raises:
            UserError: for a handler that is not callable, an empty name or a schema that is not an object.
        """
        if not callable(handler):
            raise UserError(f"a tool needs a callable, got {type(handler).__name__}")
        if not isinstance(name, str) or not name:
            raise UserError("a tool needs a non-empty name")
        if not isinstance(parameters, Mapping):
            raise UserError(f"tool {name!r}: its parameters must be a JSON schema object")
        made = cls.__new__(cls)
        made.name = name
        made.description = description
        made.handler = handler
        made.timeout = timeout
        made.is_async = _is_async_callable(handler)
        made.parameters = dict(parameters)
        # No pydantic model here: the schema is the contract, and the validator (if any) enforces it.
        made._validator = None
        made._fields = ()
        made._check = validator if validator is not None else dict
        return made

    def spec(self) -> ToolSpec:
        """The tool as offered to a model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return the keyword arguments for the handler.

        Raises:
            ToolArgumentsError: with a message naming each offending field.
        """
        if self._check is not None:
            return self._check(arguments)
        import pydantic

        try:
            instance = self._validator.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors(include_url=False)
            )
            raise ToolArgumentsError(problems) from None
        return {name: getattr(instance, name) for name in self._fields}

    async def invoke(self, kwargs: Mapping[str, Any]) -> Any:
        """Call the handler: async handlers are awaited, sync ones run on a daemon worker thread.

        No timeout applies here; `execute_tool_call` is what the turn engine uses.
        """
        if self.is_async:
            return await self.handler(**kwargs)
        from ._workers import start

        outcome = await start(self.handler, **kwargs)
        if outcome.ok:
            return outcome.value
        raise outcome.value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


class _Signature(NamedTuple):
    """What a tool learns from its handler's signature and docstring (the costly part of making a `Tool`)."""

    summary: str
    is_async: bool
    validator: Any
    fields: tuple[str, ...]
    parameters: dict[str, Any]


# Keyed weakly on the function (for a bound method, the function under it: every instance shares the signature),
# so a cached entry never keeps a handler, or the object a method is bound to, alive. The values hold nothing
# that refers back to the key.
_signatures: weakref.WeakKeyDictionary[Any, _Signature] = weakref.WeakKeyDictionary()
_method_signatures: weakref.WeakKeyDictionary[Any, _Signature] = weakref.WeakKeyDictionary()


def _signature(handler: Callable[..., Any], name: str) -> _Signature:
    cache, key = (_method_signatures, handler.__func__) if inspect.ismethod(handler) else (_signatures, handler)
    try:
        known = cache.get(key)
    except TypeError:  # neither hashable nor weakly referable (a builtin, an unhashable callable): not cached
        return _read_signature(handler, name)
    if known is None:
        known = _read_signature(handler, name)
        with contextlib.suppress(TypeError):
            cache[key] = known
    return known


def _read_signature(handler: Callable[..., Any], name: str) -> _Signature:
    summary, param_docs = _parse_docstring(inspect.getdoc(handler) or "")
    model = _arguments_model(handler, name, param_docs)
    return _Signature(
        summary=summary,
        is_async=_is_async_callable(handler),
        validator=model,
        fields=tuple(model.model_fields),
        parameters=_clean_schema(model.model_json_schema()),
    )


def _is_async_callable(handler: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - we want the bound __call__ of callable objects
    return call is not None and inspect.iscoroutinefunction(call)


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?|Attributes)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google- or Sphinx-style docstring into a description and per-argument descriptions."""
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            section, current = "args", None
            continue
        if _SECTION_HEADER.match(line):
            section, current = "other", None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        if line.strip().startswith(":"):
            section, current = "other", None
            continue
        if section == "description":
            description.append(line)
        elif section == "args":
            arg = _ARG_LINE.match(line)
            indent = len(line) - len(line.lstrip())
            if arg and (current is None or indent <= _args_indent(doc)):
                current = arg.group(1).lstrip("*")
                params[current] = arg.group(3).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
        elif section == "sphinx" and current and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


def _args_indent(doc: str) -> int:
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        if _ARGS_HEADER.match(line):
            for following in lines[index + 1 :]:
                if following.strip():
                    return len(following) - len(following.lstrip())
    return 0


def _arguments_model(handler: Callable[..., Any], name: str, param_docs: Mapping[str, str]) -> Any:
    import pydantic

    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError) as exc:
        raise UserError(f"tool {name!r}: cannot read the signature of {handler!r}") from exc
    try:
        target = handler if inspect.isfunction(handler) or inspect.ismethod(handler) else type(handler).__call__
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:
        hints = {}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise UserError(f"tool {name!r}: *args and **kwargs cannot be described to a model; name each argument")
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise UserError(f"tool {name!r}: positional-only argument {param.name!r} cannot be passed by name")
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, pydantic.Field(default, description=param_docs.get(param.name) or None))
    model_name = re.sub(r"\W", "_", name) + "_arguments"
    try:
        model = pydantic.create_model(
            model_name, __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
        )
    except (pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise UserError(f"tool {name!r}: its argument types cannot be described as JSON schema: {exc}") from exc
    if not model.__pydantic_complete__:
        # A hint pydantic could not resolve (a string naming a local class under postponed annotations) would
        # otherwise fail later, deep inside pydantic, with advice about model_rebuild() that means nothing here.
        unresolved = ", ".join(f"{key}: {value[0]}" for key, value in fields.items() if isinstance(value[0], str))
        raise UserError(
            f"tool {name!r}: cannot resolve the type hints of its arguments ({unresolved or 'see the signature'}); "
            "define the types they name at module level"
        )
    return model


_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_SINGLE = ("items", "additionalProperties", "not")


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated ``title`` keys: they cost tokens and tell the model nothing."""

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("title"), str):
            del node["title"]
        for key in ("properties", "$defs"):
            children = node.get(key)
            if isinstance(children, dict):
                for child in children.values():
                    walk(child)
        for key in _SCHEMA_LISTS:
            for child in node.get(key, ()) or ():
                walk(child)
        for key in _SCHEMA_SINGLE:
            walk(node.get(key))

    walk(schema)
    return schema


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a `Tool`, optionally overriding its name, description and timeout.

    Usable bare (``@tool``) or with arguments (``@tool(name="weather")``). The result is still callable.
    """
    if fn is not None:
        return Tool(fn, name=name, description=description, timeout=timeout)

    def decorate(function: Callable[..., Any]) -> Tool:
        return Tool(function, name=name, description=description, timeout=timeout)

    return decorate


class Toolset:
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

    def __getitem__(self, name: str) -> Tool:
        for item in self._tools:
            if item.name == name:
                return item
        raise KeyError(name)

    def names(self) -> list[str]:
        """The real names of the tools, in order."""
        return [item.name for item in self._tools]

    def bind(self, conversation: Conversation) -> Toolset:
        """The toolset as offered to one conversation (called each time its tools are resolved for a request).

        The default is the toolset itself. A toolset whose tools act on behalf of the conversation they serve
        (`threadline.toolboxes.Pages` keeps pages per conversation) returns a copy bound to it.
        """
        return self

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
    ) -> Toolset:
        """Every public method of ``obj`` as a tool named ``"<Name>.<method>"``.

        Name is ``name``, else the object's ``name`` attribute (when a string), else its class name. Never exposed:
        names starting with ``_``, anything in ``exclude``, methods inherited from ``object``. With
        ``getters=True`` public properties become read-only tools ``"<Name>.get_<prop>"``.

        Args:
            obj: The object (the seeds call it a charm).
            name: The prefix of the tool names.
            include: Only these member names, if given.
            exclude: Member names never to expose.
            getters: Also expose public properties as getter tools.
            instructions: Text for the system prompt while these tools are offered.
        """
        prefix = name or _object_name(obj)
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
            bound = getattr(obj, member)
            doc = inspect.getdoc(bound)
            tools.append(
                Tool(
                    bound,
                    name=f"{prefix}.{member}",
                    description=None if doc else f"{member} handler from {prefix}",
                )
            )
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
    ) -> MCPToolset:
        """The tools of an MCP server, each named ``"<Name>.<tool>"`` (needs the ``mcp`` extra).

        Give either ``command`` (a stdio server, started as a child process) or ``url`` (a streamable-HTTP
        server). Nothing is started here: the server is connected on first use (listing the tools or calling one),
        the connection is reused across turns, and it is closed by ``close()`` (or ``with``/``async with``), when
        the toolset is garbage-collected, or at exit. See `threadline.mcp_toolset.MCPToolset`.

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
            start_timeout: Seconds to wait for the server to start and list its tools (default: ``timeout``, but
                at least 60).

        Raises:
            UserError: for bad arguments, or when the ``mcp`` extra is not installed.
        """
        from .mcp_toolset import MCPToolset

        return MCPToolset(
            command=command,
            url=url,
            name=name,
            env=env,
            include=include,
            exclude=exclude,
            timeout=timeout,
            start_timeout=start_timeout,
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


class DynamicTools(msgspec.Struct, frozen=True):
    """Tools computed per request from the conversation (see `dynamic_tools`)."""

    provider: Callable[[Conversation], Any]


def dynamic_tools(provider: Callable[[Conversation], Any]) -> DynamicTools:
    """Mark ``provider(conversation) -> tools`` to be evaluated before every model request.

    A callable whose only parameter is annotated ``Conversation`` is recognised without this marker.
    """
    return DynamicTools(provider)


ToolLike: TypeAlias = Callable[..., Any] | Tool | Toolset | DynamicTools


def as_tool(item: Callable[..., Any] | Tool) -> Tool:
    """A `Tool` for a function (its signature is read once per function, so repeated ``.tools(fn)`` calls are
    cheap, and nothing cached keeps the function or the object of a bound method alive)."""
    if isinstance(item, Tool):
        return item
    if not callable(item):
        raise UserError(f"not a tool: {item!r} (pass functions, Tools, Toolsets or a dynamic tools callable)")
    return Tool(item)


def _is_dynamic_provider(item: Any) -> bool:
    if isinstance(item, DynamicTools):
        return True
    if not callable(item) or isinstance(item, (Tool, Toolset)):
        return False
    # Called before every request for each configured callable: remember the answer (reading a signature is slow),
    # keyed weakly as `_signature` does, so the cache keeps no provider (nor the object of a method) alive.
    cache, key = (_dynamic_methods, item.__func__) if inspect.ismethod(item) else (_dynamic_functions, item)
    try:
        known = cache.get(key)
    except TypeError:  # neither hashable nor weakly referable: not cached
        return _looks_dynamic(item)
    if known is None:
        known = _looks_dynamic(item)
        with contextlib.suppress(TypeError):
            cache[key] = known
    return known


_dynamic_functions: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_dynamic_methods: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _looks_dynamic(item: Any) -> bool:
    try:
        params = list(inspect.signature(item).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) != 1:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "Conversation"
    return getattr(annotation, "__name__", None) == "Conversation" and getattr(annotation, "__module__", "").startswith(
        "threadline"
    )


def is_dynamic_provider(item: Any) -> bool:
    """Whether ``item`` provides tools per request: a `DynamicTools`, or a callable taking one ``Conversation``."""
    return _is_dynamic_provider(item)


class ResolvedTools(msgspec.Struct):
    """The tools offered for one request, by real name, and the instructions of their toolsets."""

    tools: dict[str, Tool] = msgspec.field(default_factory=dict)
    instructions: list[str] = msgspec.field(default_factory=list)

    def add(self, item: Any, conversation: Conversation | None) -> None:
        if isinstance(item, Tool):  # the usual case (the builder turns functions into Tools), checked first
            self.tools[item.name] = item
        elif isinstance(item, Toolset):
            if conversation is not None:
                item = item.bind(conversation)
            for member in item:
                self.tools[member.name] = member
            if item.instructions and item.instructions not in self.instructions:
                self.instructions.append(item.instructions)
        elif _is_dynamic_provider(item):
            provider = item.provider if isinstance(item, DynamicTools) else item
            produced = provider(conversation)  # type: ignore[arg-type]
            if produced is None:
                return
            if isinstance(produced, (Toolset, Tool)) or callable(produced):
                produced = [produced]
            for sub in produced:
                self.add(sub, conversation)
        else:
            resolved = as_tool(item)
            self.tools[resolved.name] = resolved

    def specs(self) -> list[ToolSpec]:
        return [item.spec() for item in self.tools.values()]


def resolve_tools(items: Iterable[Any], conversation: Conversation | None = None) -> ResolvedTools:
    """Flatten functions, Tools, Toolsets and dynamic providers into the tools of one request (later names win)."""
    resolved = ResolvedTools()
    for item in items:
        resolved.add(item, conversation)
    return resolved


def encode_result(value: Any) -> str:
    """A tool's return value as sent to the model: a ``str`` as is, anything else as JSON.

    The JSON is always valid: ``nan`` and infinities, which JSON cannot express, become the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` (a model reads those; a strict JSON parser refuses bare ``NaN``); and lone
    surrogates anywhere in it (``{"files": os.listdir(path)}`` with a name that is not UTF-8) become U+FFFD, the
    log's rule for text, as they do in a returned ``str``.
    """
    if isinstance(value, str):
        return value
    import pydantic_core

    try:
        data = pydantic_core.to_json(value, fallback=repr)
    except pydantic_core.PydanticSerializationError:
        # Most likely a lone surrogate, which UTF-8 cannot hold: the plain-Python form keeps it as text, where the
        # log's rule replaces it. Anything else fails again here and is reported by the caller.
        plain = pydantic_core.to_jsonable_python(replace_surrogates_in(value), fallback=repr)  # keys, too
        data = pydantic_core.to_json(replace_surrogates_in(plain))
    if b"NaN" in data or b"Infinity" in data:
        # Only then (the words may also be inside strings): pydantic writes the bare constants, even under
        # inf_nan_mode="strings" for a model configured otherwise, so read its output back and spell them out.
        data = pydantic_core.to_json(_finite(pydantic_core.from_json(data, allow_inf_nan=True)))
    return data.decode("utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def describe_exception(exc: BaseException) -> str:
    """``"<Type>: <message>"`` for an exception, even one whose ``__str__`` fails (then the type alone, said so)."""
    kind = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return f"{kind} (its message could not be read)"
    return f"{kind}: {text}" if text else kind


# How long a cancelled async tool may take to stop before the turn stops waiting for it.
CANCEL_GRACE = 2.0
# Async tools that ignored their cancellation: kept referenced until they end, so asyncio does not destroy them
# while they are pending (and complain about it).
_abandoned: set[asyncio.Task[None]] = set()


class _Unfinished(Exception):
    """A tool did not finish within its timeout; ``stopped`` says whether it is known to have stopped."""

    def __init__(self, stopped: bool) -> None:
        super().__init__()
        self.stopped = stopped


async def execute_tool_call(call: ToolCall, tools: Mapping[str, Tool], default_timeout: float | None) -> ToolMessage:
    """Run one tool call and return its result message; every failure becomes an ``is_error`` result.

    Invalid arguments, unknown tools, any exception the tool raises (``SystemExit`` and other `BaseException`s
    included) and timeouts are results the model reads. Two things stop the turn instead: cancellation (of the
    turn, e.g. Ctrl-C) and ``KeyboardInterrupt``; the call is then left unanswered and answered ``interrupted``
    when the conversation next runs.

    A sync tool runs on a daemon worker thread: past its timeout the turn goes on without it, and the result says
    it may still be running (a thread cannot be stopped). An async tool past its timeout is cancelled and given
    `CANCEL_GRACE` seconds to stop; one that ignores the cancellation is left running.
    """
    started = time.perf_counter()
    tool_ = tools.get(call.name)
    is_error = True
    if tool_ is None:
        available = ", ".join(sorted(tools)) or "none"
        content = f"Unknown tool {call.name!r}. Available tools: {available}."
    elif call.raw_arguments is not None:
        content = (
            f"Invalid arguments for tool {call.name!r}: not valid JSON ({_preview(call.raw_arguments)}). "
            "Call it again with a JSON object."
        )
    else:
        try:
            kwargs = tool_.validate(call.arguments)
        except ToolArgumentsError as exc:
            content = f"Invalid arguments for tool {call.name!r}: {exc}"
        else:
            timeout = tool_.timeout if tool_.timeout is not None else default_timeout
            try:
                if tool_.is_async:
                    outcome = await _run_async(tool_.handler, kwargs, timeout)
                else:
                    outcome = await _run_sync(tool_.handler, kwargs, timeout)
            except _Unfinished as unfinished:
                if unfinished.stopped:
                    content = f"Tool {call.name!r} timed out after {timeout:g} s and was stopped."
                else:
                    content = f"Tool {call.name!r} did not finish in {timeout:g} s; it may still be running."
            else:
                if not outcome.ok:
                    if isinstance(outcome.value, KeyboardInterrupt):
                        raise outcome.value
                    content = f"Tool {call.name!r} failed: {describe_exception(outcome.value)}"
                else:
                    try:
                        content = encode_result(outcome.value)
                        is_error = False
                    except Exception as exc:
                        content = (
                            f"Tool {call.name!r} returned a value that cannot be encoded: {describe_exception(exc)}"
                        )
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=content,
        is_error=is_error,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


async def _run_sync(handler: Callable[..., Any], kwargs: Mapping[str, Any], limit: float | None) -> Outcome:
    """The `Outcome` of a sync handler run on a worker thread; raises `_Unfinished` when the timeout passes."""
    import asyncio  # imported on first use: see threadline._sync

    from ._workers import start

    future = start(handler, **kwargs)
    # Awaiting the future itself under asyncio.timeout costs no extra task: the deadline cancels the future (the
    # thread's late outcome is then dropped), and expired() tells our deadline apart from anything else.
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await future
    except TimeoutError:
        if deadline.expired():
            raise _Unfinished(stopped=False) from None
        raise


async def _run_async(handler: Callable[..., Any], kwargs: Mapping[str, Any], limit: float | None) -> Outcome:
    """The `Outcome` of an async handler run as its own task, so a handler that ignores cancellation can be left
    behind; raises `_Unfinished` when the timeout passes."""
    import asyncio

    loop = asyncio.get_running_loop()
    # The task hands its outcome over through ``done``, a plain future: awaiting the task itself would pass our
    # cancellation on to it and then wait for as long as it ignores that; and setting ``done`` from inside the
    # task wakes us one loop iteration sooner than a done-callback would (a tool round's cost is counted in those).
    done: asyncio.Future[Outcome] = loop.create_future()
    task = loop.create_task(_outcome(handler, kwargs, done))
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await done
    except TimeoutError:
        if deadline.expired():
            raise _Unfinished(stopped=await _stop(task, min(CANCEL_GRACE, limit or CANCEL_GRACE))) from None
        raise
    except asyncio.CancelledError:  # the turn is cancelled: stop the tool too (within the grace), then go
        await _stop(task, CANCEL_GRACE)
        raise


async def _outcome(handler: Callable[..., Any], kwargs: Mapping[str, Any], done: asyncio.Future[Outcome]) -> None:
    """Await the handler and put its `Outcome` in ``done``. Its exceptions are outcomes too (a task that raised
    ``SystemExit`` would take the event loop down with it), except the cancellation of this task."""
    import asyncio

    from ._workers import Outcome

    try:
        outcome = Outcome(True, await handler(**kwargs))
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        outcome = Outcome(False, exc)  # raised by the tool itself (something it awaited was cancelled)
    except BaseException as exc:  # every outcome goes back to execute_tool_call, which decides what it means
        outcome = Outcome(False, exc)
    if not done.done():  # nobody waits any more after a timeout or a cancelled turn
        done.set_result(outcome)


async def _stop(task: asyncio.Task[None], grace: float) -> bool:
    """Cancel the tool's task and wait up to ``grace`` seconds for it to end; True if it did."""
    import asyncio

    task.cancel()
    await asyncio.wait((task,), timeout=grace)
    if task.done():
        return True
    _abandoned.add(task)
    task.add_done_callback(_abandoned.discard)
    return False


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


_WIRE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_WIRE_BAD = re.compile(r"[^A-Za-z0-9_-]")


class ToolCatalog:
    """The per-request mapping between real tool names and provider-safe wire names (``[A-Za-z0-9_-]{1,64}``).

    Names that are already safe keep themselves. Others are sanitized (``Notes.add_note`` -> ``Notes_add_note``);
    over-long names and collisions get a short hash of the real name, so the mapping depends only on the names,
    never on their order.
    """

    __slots__ = ("_to_real", "_to_wire")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._to_wire: dict[str, str] = {}
        self._to_real: dict[str, str] = {}
        unique = sorted(set(names))
        for name in unique:
            if _WIRE_NAME.match(name):
                self._assign(name, name)
        for name in unique:
            if name not in self._to_wire:
                self.wire(name)

    def _assign(self, name: str, wire: str) -> str:
        self._to_wire[name] = wire
        self._to_real[wire] = name
        return wire

    def wire(self, name: str) -> str:
        """The wire name for a real name (assigned on first use)."""
        known = self._to_wire.get(name)
        if known is not None:
            return known
        if _WIRE_NAME.match(name) and name not in self._to_real:
            return self._assign(name, name)
        base = _WIRE_BAD.sub("_", name) or "tool"
        if len(base) <= 64 and base not in self._to_real:
            return self._assign(name, base)
        import hashlib  # only here, for the rare long or colliding name: it loads OpenSSL, a few ms of import

        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        candidate = f"{base[:55]}_{digest[:8]}"
        counter = 8
        while candidate in self._to_real:  # a hash collision on 32 bits: lengthen the hash
            counter += 1
            candidate = f"{base[: 63 - counter]}_{digest[:counter]}"
        return self._assign(name, candidate)

    def real(self, wire: str) -> str:
        """The real name for a wire name; an unknown wire name is returned unchanged."""
        return self._to_real.get(wire, wire)


AsyncHandler: TypeAlias = Callable[..., Awaitable[Any]]
