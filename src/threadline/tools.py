"""Tools: from functions, from whole objects, grouped in toolsets, named safely on the wire.

A plain function (sync or async) is a tool: its name, its docstring as the description, a JSON schema from its
type hints (built with pydantic, imported only when a tool is made). ``@tool(...)`` overrides name, description and
timeout. `Toolset.from_object` turns every public method of an object into a tool named ``"<Name>.<method>"``.

The model's arguments are validated against the schema before the call; invalid JSON, schema violations, unknown
tools, exceptions and timeouts all become a `ToolMessage` with ``is_error=True`` (see `execute_tool_call`), so the
loop goes on and the model can correct itself.
"""

from __future__ import annotations

import inspect
import re
import time
import typing
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, overload

import msgspec

from .errors import UserError
from .messages import ToolCall, ToolMessage
from .models.base import ToolSpec

if TYPE_CHECKING:
    from .conversation import Conversation

__all__ = [
    "DynamicTools",
    "Tool",
    "ToolCatalog",
    "ToolLike",
    "Toolset",
    "dynamic_tools",
    "encode_result",
    "execute_tool_call",
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

    __slots__ = ("_fields", "_validator", "description", "handler", "is_async", "name", "parameters", "timeout")

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
        summary, param_docs = _parse_docstring(inspect.getdoc(handler) or "")
        self.description: str = description if description is not None else summary
        self.handler = handler
        self.timeout = timeout
        self.is_async = _is_async_callable(handler)
        model = _arguments_model(handler, self.name, param_docs)
        self._validator = model
        self._fields = tuple(model.model_fields)
        self.parameters: dict[str, Any] = (
            dict(parameters) if parameters is not None else _clean_schema(model.model_json_schema())
        )

    def spec(self) -> ToolSpec:
        """The tool as offered to a model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return the keyword arguments for the handler.

        Raises:
            ToolArgumentsError: with a message naming each offending field.
        """
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
        """Call the handler: async handlers are awaited, sync ones run in a worker thread."""
        if self.is_async:
            return await self.handler(**kwargs)
        import asyncio  # imported on first use: see threadline._sync

        return await asyncio.to_thread(self.handler, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.handler(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


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
    """A `Tool` for a function (cached on the function, so repeated ``.tools(fn)`` calls are cheap)."""
    if isinstance(item, Tool):
        return item
    if not callable(item):
        raise UserError(f"not a tool: {item!r} (pass functions, Tools, Toolsets or a dynamic tools callable)")
    cached = _tool_cache.get(item)
    if cached is None:
        cached = Tool(item)
        try:
            _tool_cache[item] = cached
        except TypeError:  # unhashable callables are simply not cached
            pass
    return cached


_tool_cache: dict[Any, Tool] = {}


def _is_dynamic_provider(item: Any) -> bool:
    if isinstance(item, DynamicTools):
        return True
    if not callable(item) or isinstance(item, (Tool, Toolset)):
        return False
    # Called before every request for each configured callable: remember the answer (reading a signature is slow).
    try:
        known = _dynamic_cache.get(item)
    except TypeError:  # unhashable callables are simply not cached
        return _looks_dynamic(item)
    if known is None:
        known = _dynamic_cache[item] = _looks_dynamic(item)
    return known


_dynamic_cache: dict[Any, bool] = {}


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


class ResolvedTools(msgspec.Struct):
    """The tools offered for one request, by real name, and the instructions of their toolsets."""

    tools: dict[str, Tool] = msgspec.field(default_factory=dict)
    instructions: list[str] = msgspec.field(default_factory=list)

    def add(self, item: Any, conversation: Conversation | None) -> None:
        if isinstance(item, Tool):  # the usual case (the builder turns functions into Tools), checked first
            self.tools[item.name] = item
        elif isinstance(item, Toolset):
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
    """A tool's return value as sent to the model: a ``str`` as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    import pydantic_core

    return pydantic_core.to_json(value, fallback=repr).decode("utf-8")


async def execute_tool_call(call: ToolCall, tools: Mapping[str, Tool], default_timeout: float | None) -> ToolMessage:
    """Run one tool call and return its result message; every failure becomes an ``is_error`` result."""
    import asyncio  # imported on first use: see threadline._sync

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
            # asyncio.timeout rather than wait_for: no extra task per call (a third of a tool round's overhead),
            # and expired() tells our deadline apart from a TimeoutError the tool raised itself.
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    result = await tool_.invoke(kwargs)
            except TimeoutError as exc:
                if deadline.expired():
                    content = f"Tool {call.name!r} timed out after {timeout:g} s and was stopped."
                else:
                    content = f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}"
            except Exception as exc:
                content = f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}"
            else:
                try:
                    content = encode_result(result)
                    is_error = False
                except Exception as exc:
                    content = f"Tool {call.name!r} returned a value that cannot be encoded: {exc}"
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=content,
        is_error=is_error,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


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
