"""A tool's description and JSON schema, read from its handler's signature, type hints and docstring.

pydantic builds the schema and validates arguments; it is imported only when a tool is made from a function.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .._exception_text import readable_message, type_name
from ..errors import UserError

__all__ = [
    "Signature",
    "arguments_model",
    "clean_schema",
    "is_async_callable",
    "parse_docstring",
    "read_signature",
    "signature_of",
]


class Signature(NamedTuple):
    """What a tool learns from its handler's signature and docstring (the costly part of making a `Tool`)."""

    summary: str
    is_async: bool
    validator: Any
    fields: tuple[tuple[str, str], ...]
    """(the validator's field, the handler's parameter) for each argument: they differ where the parameter's
    name cannot be a pydantic field (``_token``, ``model_config``)."""
    parameters: dict[str, Any]


# Keyed weakly on the function (for a bound method, the function under it: every instance shares the signature),
# so a cached entry never keeps a handler, or the object a method is bound to, alive. The values hold nothing
# that refers back to the key.
_signatures: weakref.WeakKeyDictionary[Any, Signature] = weakref.WeakKeyDictionary()
_method_signatures: weakref.WeakKeyDictionary[Any, Signature] = weakref.WeakKeyDictionary()


def signature_of(handler: Callable[..., Any], name: str) -> Signature:
    """What ``handler``'s signature and docstring say, read once per function (see the caches above)."""
    cache, key = (_method_signatures, handler.__func__) if inspect.ismethod(handler) else (_signatures, handler)
    try:
        known = cache.get(key)
    except TypeError:  # neither hashable nor weakly referable (a builtin, an unhashable callable): not cached
        return read_signature(handler, name)
    if known is None:
        known = read_signature(handler, name)
        with contextlib.suppress(TypeError):
            cache[key] = known
    return known


def read_signature(handler: Callable[..., Any], name: str) -> Signature:
    """Read ``handler``'s summary, argument descriptions and argument types into a `Signature` (uncached).

    Raises:
        UserError: for arguments a model cannot be told about (see `arguments_model`; also a type pydantic validates
            but cannot describe as JSON schema, such as a ``Callable``).
    """
    summary, param_docs = parse_docstring(inspect.getdoc(handler) or "")
    model = arguments_model(handler, name, param_docs)
    import pydantic

    try:
        parameters = model.model_json_schema()
    except pydantic.PydanticUserError as exc:  # a type pydantic validates but cannot describe (a Callable)
        fields = {field: (info.annotation, info) for field, info in model.model_fields.items()}
        raise _undescribable(name, fields, exc) from exc
    return Signature(
        summary=summary,
        is_async=is_async_callable(handler),
        validator=model,
        fields=tuple((field, info.alias or field) for field, info in model.model_fields.items()),
        parameters=clean_schema(parameters),
    )


def is_async_callable(handler: Callable[..., Any]) -> bool:
    """Whether calling ``handler`` gives a coroutine (an async function, or an object with an async ``__call__``)."""
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - we want the bound __call__ of callable objects
    return call is not None and inspect.iscoroutinefunction(call)


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION_HEADER = re.compile(r"^\s*(Returns|Return|Raises|Yields|Examples?|Notes?|Attributes)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
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


def arguments_model(handler: Callable[..., Any], name: str, param_docs: Mapping[str, str]) -> Any:
    """A pydantic model of ``handler``'s keyword arguments, which validates a model's arguments.

    Raises:
        UserError: for a signature a model cannot be told about (``*args``, positional-only, unresolvable types,
            a type pydantic cannot validate; the message names the argument).
    """
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
    reserved = set(dir(pydantic.BaseModel))
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise UserError(f"tool {name!r}: *args and **kwargs cannot be described to a model; name each argument")
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise UserError(f"tool {name!r}: positional-only argument {param.name!r} cannot be passed by name")
        annotation = hints.get(param.name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(param.name) or None
        if param.name.startswith(("_", "model_")) or param.name in reserved:
            # Not a name a pydantic field may have (a private attribute, pydantic's own namespace): the field gets
            # another name, and the argument keeps its own as the field's alias (in the schema and in validation).
            field = f"argument_{index}"
            while field in signature.parameters:
                field += "_"
            fields[field] = (annotation, pydantic.Field(default, alias=param.name, description=description))
        else:
            fields[param.name] = (annotation, pydantic.Field(default, description=description))
    model_name = re.sub(r"\W", "_", name) + "_arguments"
    try:
        model = _model(model_name, fields)
    except (pydantic.PydanticUserError, TypeError) as exc:
        raise _undescribable(name, fields, exc) from exc
    if not model.__pydantic_complete__:
        # A hint pydantic could not resolve (a string naming a local class under postponed annotations) would
        # otherwise fail later, deep inside pydantic, with advice about model_rebuild() that means nothing here.
        unresolved = ", ".join(f"{key}: {value[0]}" for key, value in fields.items() if isinstance(value[0], str))
        raise UserError(
            f"tool {name!r}: cannot resolve the type hints of its arguments ({unresolved or 'see the signature'}); "
            "define the types they name at module level"
        )
    return model


def _model(model_name: str, fields: Mapping[str, Any]) -> Any:
    import pydantic

    return pydantic.create_model(
        model_name, __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False), **fields
    )


def _undescribable(name: str, fields: Mapping[str, Any], exc: Exception) -> UserError:
    """The `UserError` for arguments pydantic cannot validate or describe, naming the first argument at fault (each
    is tried alone) and pydantic's reason (its advice, e.g. ``typing_extensions.TypedDict`` before Python 3.12)."""
    import pydantic

    # pydantic's reason; or the exception of a type of the user's own, whose message may not even be readable.
    reason = (readable_message(exc).strip().splitlines() or [type_name(exc)])[0]
    for field, (annotation, info) in fields.items():
        try:
            _model("one_argument", {field: (annotation, info)}).model_json_schema()
        except (pydantic.PydanticUserError, TypeError):
            parameter = info.alias or field
            return UserError(
                f"tool {name!r}: the type of its argument {parameter!r} cannot be described as JSON schema: {reason}"
            )
    return UserError(f"tool {name!r}: its argument types cannot be described as JSON schema: {reason}")


_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_SINGLE = ("items", "additionalProperties", "not")


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
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
