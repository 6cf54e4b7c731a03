"""Structured output on the Messages API: Claude's JSON outputs (``output_config.format``) where they can serve.

Claude Haiku 4.5, Sonnet 4.5, Opus 4.5 and every later Claude constrain their answer to a JSON schema natively
(Anthropic's "Structured outputs": ``output_config: {"format": {"type": "json_schema", "schema": …}}``; the answer
is a text block holding the JSON). Unlike the forced final-result tool that older families need, it goes with
thinking (a thinking budget refuses any forced tool) and with the families that refuse forced tools altogether.

The API takes a subset of JSON Schema: every object must say ``additionalProperties: false``; recursive schemas,
numeric bounds (``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``), string
lengths (``minLength``, ``maxLength``) and array bounds other than ``minItems`` 0 or 1 are refused. `native_format`
makes the schema fit: objects that say nothing about extra properties get ``false``; the bounds are left out of the
schema and written into the field's description, so the model still reads them (the answer is validated against
the full schema afterwards, as every structured answer is). A schema that cannot fit — an object that allows extra
properties (a ``dict`` field), a recursive ``$ref`` — goes through the final-result tool instead, where the family
and the request allow a forced tool (`uses_final_tool`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..base import ModelRequest
    from ..profiles import ModelProfile

__all__ = ["native_format", "uses_final_tool"]

# Keywords the JSON outputs grammar refuses; their values go into the description instead.
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength")


class _Unfit(Exception):
    """The schema cannot be expressed as Claude's JSON outputs."""


def native_format(schema: Any) -> dict[str, Any] | None:
    """The ``output_config.format`` for ``schema``, or None when Claude's JSON outputs cannot express it."""
    if not isinstance(schema, dict):
        return None
    definitions = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    try:
        _check_acyclic(definitions)
        fitted = _fit(schema)
    except _Unfit:
        return None
    return {"type": "json_schema", "schema": fitted}


def uses_final_tool(request: ModelRequest, profile: ModelProfile) -> bool:
    """Whether this request's structured output goes through the forced final-result tool (not JSON outputs)."""
    response_format = request.response_format
    if response_format is None:
        return False
    return not profile.capabilities.structured_output or native_format(response_format.schema) is None


def _fit(node: Any) -> Any:
    if isinstance(node, list):
        return [_fit(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    bounds: list[str] = []
    for key, value in node.items():
        if key in _BOUNDS:
            bounds.append(f"{key}: {value}")
        elif key == "minItems" and value not in (0, 1):
            bounds.append(f"{key}: {value}")
        elif key == "maxItems":
            bounds.append(f"{key}: {value}")
        elif key in ("patternProperties", "propertyNames"):
            raise _Unfit  # keys of a pattern: a mapping of free keys too
        elif key in ("properties", "$defs", "definitions", "dependentSchemas"):
            out[key] = {name: _fit(child) for name, child in value.items()} if isinstance(value, dict) else value
        elif key in ("enum", "const", "default", "examples", "required"):
            out[key] = value  # values, not schemas
        else:
            out[key] = _fit(value)
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties", False)
        if extra is not False:
            raise _Unfit  # a mapping of free keys (a dict field): JSON outputs require false
        out["additionalProperties"] = False
    if bounds:
        note = "(" + ", ".join(bounds) + ")"
        description = out.get("description")
        out["description"] = f"{description} {note}" if isinstance(description, str) and description else note
    return out


def _check_acyclic(definitions: dict[str, Any]) -> None:
    """Raise `_Unfit` when a definition refers to itself, directly or through others (a recursive schema)."""
    edges = {name: _local_refs(body) for name, body in definitions.items()}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise _Unfit
        if name in done:
            return
        for target in edges.get(name, ()):
            visit(target, (*path, name))
        done.add(name)

    for name in edges:
        visit(name, ())


def _local_refs(node: Any) -> set[str]:
    """The names of local definitions (``#/$defs/X``, ``#/definitions/X``) a schema refers to."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                for prefix in ("#/$defs/", "#/definitions/"):
                    if ref.startswith(prefix):
                        found.add(ref[len(prefix) :])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
