"""Messages in the shapes of OpenTelemetry's GenAI conventions, for spans recorded with ``include_content=True``.

The shapes follow the conventions' JSON schemas (``gen-ai-input-messages.json`` / ``gen-ai-output-messages.json``
and their Python models, ``docs/gen-ai/non-normative/models.py`` in open-telemetry/semantic-conventions-genai):
a message is ``{"role", "parts"}``; parts are ``text`` (``content``), ``reasoning`` (``content``), ``tool_call``
(``id``, ``name``, ``arguments``) and ``tool_call_response`` (``id``, ``response``); an output message adds
``finish_reason``. Attachments, which the conventions would carry as base64 blobs, are described (kind, type, size)
rather than copied into a span. Spans carry these as JSON strings, as the conventions allow where an SDK has no
structured attribute values.

What is never written, whatever the setting: reasoning signatures and encrypted reasoning (only thinking text),
values of tool arguments whose name says they hold a secret (`is_secret_name`: ``api_key``, ``token``,
``password``, ``auth``…), also in argument text that is not valid JSON (`mask_raw_arguments`), and the defaults of
such parameters in tool definitions — nor those values where any other text repeats them (a tool's arguments or
result, the model's answer, a later request, an error quoting the request: the tracer keeps a turn's `Secrets`
and masks them in every span it writes once it has seen them) — and anything shaped like an API key or URL
credentials in any text (`scrub`).

Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from .._masking import mask_secrets, secret_forms
from ..message_types import (
    AssistantMessage,
    Message,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    answer_parts,
)
from ..models.base import ModelResponse, ToolSpec

__all__ = [
    "MASK",
    "Secrets",
    "answer_messages",
    "dumps",
    "input_messages",
    "is_secret_name",
    "mask_raw_arguments",
    "output_messages",
    "scrub",
    "scrub_value",
    "secret_values",
    "tool_arguments",
    "tool_definitions",
]

MASK = "***"
# Words that say a name holds a secret, found anywhere in it ("db_password", "apiKey", "x-auth-token").
_SECRET_NAME = re.compile(
    r"api[-_]?key|access[-_]?key|private[-_]?key|token|secret|passw(?:or)?d|pass(?:phrase|code)|authori[sz]ation"
    r"|credential|bearer|cookie",
    re.IGNORECASE,
)
# Words too short to look for inside other words ("author", "authority"): secret only as a whole part of a name,
# the parts being separated by "_", "-", ".", spaces or a change of case ("auth", "basic_auth", "x-auth",
# "authHeader", "db_pwd", "userPwd").
_SECRET_PARTS = ("auth", "pwd")
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The keywords of a JSON schema that hold values: masked under a secret-named parameter (`tool_definitions`), and
# those that may hold any value scrubbed elsewhere.
_SCHEMA_VALUES = frozenset({"default", "const", "enum", "example", "examples"})
_SCHEMA_SCRUBBED = ("default", "const", "example", "examples")
# A key in argument text that is not valid JSON: "key": / 'key': / key= (what follows is its value).
_RAW_KEY = re.compile(
    r""""((?:[^"\\\n]|\\.){1,200})"\s*[:=]\s*|'((?:[^'\\\n]|\\.){1,200})'\s*[:=]\s*"""
    r"""|(?<![\w-])([A-Za-z_][\w-]{0,199})\s*[:=]\s*"""
)
_RAW_BARE = re.compile(r"""[^\s,;}\]"'&)]+""")
_RAW_STRING = re.compile(r""""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""")
_NUMBER = re.compile(r"-?[0-9][0-9.eE+-]*")
_LITERALS = frozenset({"true", "false", "null", "none"})  # bare values that are no secret whatever their key
_CUT = "…"  # how the transport ends a server's text it shortened
_MIN_CUT = 2  # the shortest start of a secret masked where a shortened text ends
# The conventions' finish reasons (FinishReason in the output schema); others pass through as they are.
_FINISH = {"tool_calls": "tool_call", "end_turn": "stop", "max_tokens": "length"}
_encode = msgspec.json.Encoder().encode


def is_secret_name(name: str) -> bool:
    """Whether an argument, parameter or key called ``name`` holds a secret (``api_key``, ``apiKey``,
    ``access_token``, ``client_secret``, ``password``, ``passwd``, ``pwd``, ``passphrase``, ``passcode``,
    ``auth``, ``authorization``, ``bearer``, ``credentials``, ``private_key``, ``cookie``…; not ``author``)."""
    if _SECRET_NAME.search(name):
        return True
    lowered = name.lower()
    if not any(word in lowered for word in _SECRET_PARTS):
        return False
    return any(part.lower() in _SECRET_PARTS for part in _NAME_PART.findall(name))


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with ``secrets`` (see `secret_values`), anything shaped like an API key and any credentials in URLs
    masked; where a shortened text (ending in "…") was cut inside a secret, the start of it is masked too."""
    text = mask_secrets(text, secrets)
    if secrets and _CUT in text:
        text = _mask_cut(text, secrets)
    return text


def _mask_cut(text: str, secrets: tuple[str, ...]) -> str:
    pieces = text.split(_CUT)
    for index, piece in enumerate(pieces[:-1]):
        for form in secrets:
            longest = min(len(form) - 1, len(piece))
            cut = next((n for n in range(longest, _MIN_CUT - 1, -1) if piece.endswith(form[:n])), 0)
            if cut:
                pieces[index] = piece[:-cut] + MASK
                break
    return _CUT.join(pieces)


def secret_values(calls: Iterable[ToolCall]) -> tuple[str, ...]:
    """The values of the secret-named arguments of ``calls``, in every form a text could repeat them."""
    found: list[str] = []
    for call in calls:
        _call_secrets(call, found)
    return secret_forms(found) if found else ()


class Secrets:
    """The secret values one turn has seen so far (it only grows), and `forms`, what `scrub` is given to mask them.

    Args:
        inherited: Another turn's (the turn of the tool call a sub-conversation runs in), whose values count here too.
    """

    __slots__ = ("_values", "forms")

    def __init__(self, inherited: Secrets | None = None) -> None:
        self._values: set[str] = set() if inherited is None else set(inherited._values)
        self.forms: tuple[str, ...] = () if inherited is None else inherited.forms

    def add(self, values: Iterable[str]) -> None:
        """Know these values too."""
        new = [value for value in values if value not in self._values]
        if new:
            self._values.update(new)
            self.forms = secret_forms(self._values)

    def add_calls(self, calls: Iterable[ToolCall]) -> None:
        """Know the values of the secret-named arguments of ``calls``."""
        found: list[str] = []
        for call in calls:
            _call_secrets(call, found)
        self.add(found)

    def add_messages(self, messages: Iterable[Message]) -> None:
        """Know the values of the secret-named arguments of every tool call in ``messages``."""
        self.add_calls(
            call for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls
        )


def _call_secrets(call: ToolCall, found: list[str]) -> None:
    _collect_secrets(call.arguments, found, False)
    if call.raw_arguments is not None:
        mask_raw_arguments(call.raw_arguments, found)


def _collect_secrets(value: Any, found: list[str], secret: bool) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _collect_secrets(item, found, secret or (isinstance(key, str) and is_secret_name(key)))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_secrets(item, found, secret)
    elif secret and isinstance(value, str):
        found.append(value)
    # A number under a secret-named key is masked where it stands (scrub_value) but not looked for elsewhere: a
    # name such as "max_tokens" would then erase every 4000 in every message.


def mask_raw_arguments(raw: str, found: list[str] | None = None) -> str:
    """Argument text that is not valid JSON (a cut-off object, single quotes, ``key=value``) with the value of every
    secret-named key masked; the values masked are appended to ``found``."""
    out: list[str] = []
    done = 0  # raw[:done] is in out
    at = 0
    while True:
        match = _RAW_KEY.search(raw, at)
        if match is None:
            break
        at = match.end()
        key = match.group(1) or match.group(2) or match.group(3) or ""
        if not is_secret_name(key):
            continue
        end, masked, values = _raw_value(raw, at)
        if end == at:
            continue
        out.append(raw[done:at])
        out.append(masked)
        done = at = end
        if found is not None:
            found.extend(values)
    if not out:
        return raw
    out.append(raw[done:])
    return "".join(out)


def _raw_value(raw: str, start: int) -> tuple[int, str, list[str]]:
    """Where the value starting at ``start`` ends, its masked text and the secrets in it."""
    first = raw[start : start + 1]
    if first in ('"', "'"):
        at, closed = start + 1, False
        while at < len(raw):
            if raw[at] == "\\":
                at += 2
            elif raw[at] == first:
                closed = True
                break
            else:
                at += 1
        inner = raw[start + 1 : min(at, len(raw))]
        end = at + 1 if closed else len(raw)
        return end, first + MASK + (first if closed else ""), _unquoted(inner, first)
    if first in ("{", "["):
        end = _container_end(raw, start)
        values: list[str] = []
        for match in _RAW_STRING.finditer(raw, start, end):
            quote = '"' if match.group(1) is not None else "'"
            values.extend(_unquoted(match.group(1) if quote == '"' else match.group(2), quote))
        return end, MASK, values
    bare = _RAW_BARE.match(raw, start)
    if bare is None:
        return start, "", []
    value = bare.group()
    return bare.end(), MASK, [] if value.lower() in _LITERALS or _NUMBER.fullmatch(value) else [value]


def _unquoted(inner: str, quote: str) -> list[str]:
    """A quoted value as written and, for JSON text, as it reads."""
    if quote == '"':
        try:
            value = json.loads(f'"{inner}"')
        except ValueError:
            return [inner]
        return [inner, value] if isinstance(value, str) and value != inner else [inner]
    return [inner, inner.replace("\\'", "'")] if "\\'" in inner else [inner]


def _container_end(raw: str, start: int) -> int:
    """The end of the object or array at ``start`` (the end of the text when it is cut off)."""
    depth = 0
    at = start
    quote = ""
    while at < len(raw):
        char = raw[at]
        if quote:
            if char == "\\":
                at += 1
            elif char == quote:
                quote = ""
        elif char in ('"', "'"):
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return at + 1
        at += 1
    return len(raw)


def scrub_value(value: Any, secrets: tuple[str, ...] = ()) -> Any:
    """A JSON-like value with its strings scrubbed (``secrets`` masked too) and the values of secret-named keys
    masked."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {
            key: MASK if isinstance(key, str) and is_secret_name(key) else scrub_value(item, secrets)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [scrub_value(item, secrets) for item in value]
    return value


def dumps(value: Any) -> str:
    """JSON text of a value built here (its leaves are JSON types; anything else is written as its repr)."""
    try:
        return _encode(value).decode("utf-8")
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return _encode(_jsonable(value)).decode("utf-8")


def input_messages(messages: Iterable[Message], secrets: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The messages of a request, in the order they were sent; ``secrets`` are masked in them (None: those of the
    messages' own tool calls)."""
    messages = list(messages)
    if secrets is None:
        secrets = secret_values(
            call for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls
        )
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "parts": [_text(message.content, secrets)]})
        elif isinstance(message, UserMessage):
            parts: list[dict[str, Any]] = [_text(message.content, secrets)] if message.content else []
            parts.extend(_attachment(attachment) for attachment in message.attachments)
            out.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            out.append({"role": "assistant", "parts": [_part(part, secrets) for part in answer_parts(message)]})
        elif isinstance(message, ToolMessage):
            result = scrub(message.content, secrets)
            part = {"type": "tool_call_response", "id": message.tool_call_id, "response": result}
            out.append({"role": "tool", "parts": [part]})
    return out


def output_messages(response: ModelResponse, secrets: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """What one model call answered: one output message (threadline asks for one choice); ``secrets`` are masked
    in it (None: those of its own tool calls)."""
    answer = AssistantMessage(
        content=response.content, tool_calls=list(response.tool_calls), reasoning=list(response.reasoning)
    )
    if secrets is None:
        secrets = secret_values(answer.tool_calls)
    message: dict[str, Any] = {"role": "assistant", "parts": [_part(part, secrets) for part in answer_parts(answer)]}
    reason = response.stop_reason
    message["finish_reason"] = _FINISH.get(reason, reason) if reason else ("tool_call" if answer.tool_calls else "stop")
    return [message]


def answer_messages(message: AssistantMessage, secrets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A turn's answer (a logged assistant message) as output messages; ``secrets`` are masked in it."""
    parts = [_part(part, secrets) for part in answer_parts(message)]
    finish = "error" if message.error is not None else ("tool_call" if message.tool_calls else "stop")
    return [{"role": "assistant", "parts": parts, "finish_reason": finish}]


def tool_definitions(specs: Sequence[ToolSpec], found: list[str] | None = None) -> list[dict[str, Any]]:
    """The tools offered to a model, as the conventions' function tool definitions.

    The values a parameter's schema holds (``default``, ``const``, ``enum``, ``example(s)``) are masked where the
    parameter's name says it is a secret (and appended to ``found``), scrubbed elsewhere; what the provider is sent
    is not changed.
    """
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": _schema(spec.parameters, False, found),
        }
        for spec in specs
    ]


def _schema(schema: Any, secret: bool, found: list[str] | None) -> Any:
    if isinstance(schema, Mapping):
        out: dict[Any, Any] = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, Mapping):
                out[key] = {
                    name: _schema(sub, secret or (isinstance(name, str) and is_secret_name(name)), found)
                    for name, sub in value.items()
                }
            elif secret and key in _SCHEMA_VALUES:
                out[key] = MASK
                if found is not None:
                    _collect_secrets(value, found, True)
            elif key in _SCHEMA_SCRUBBED:
                out[key] = scrub_value(value)
                if found is not None:
                    _collect_secrets(value, found, False)
            else:
                out[key] = _schema(value, secret, found)
        return out
    if isinstance(schema, (list, tuple)):
        return [_schema(item, secret, found) for item in schema]
    return schema


def tool_arguments(call: ToolCall, secrets: tuple[str, ...] = ()) -> Any:
    """A call's arguments, scrubbed (the raw text when they were not a JSON object); ``secrets`` are masked too."""
    if call.raw_arguments is not None:
        return scrub(mask_raw_arguments(call.raw_arguments), secrets)
    return scrub_value(call.arguments, secrets)


def _text(content: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "text", "content": scrub(content, secrets)}


def _part(part: Reasoning | str | ToolCall, secrets: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(part, str):
        return _text(part, secrets)
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": tool_arguments(part, secrets)}
    # Only the thinking text: signatures and encrypted reasoning are opaque tokens for the provider.
    return {"type": "reasoning", "content": scrub(part.text, secrets)}


def _attachment(attachment: Any) -> dict[str, Any]:
    kind = attachment.kind
    if kind == "mention":
        return {"type": "mention", "ref": attachment.ref}
    described: dict[str, Any] = {"type": "attachment", "modality": kind, "mime_type": attachment.media_type}
    if attachment.name:
        described["name"] = attachment.name
    if attachment.url:
        return {"type": "uri", "modality": kind, "mime_type": attachment.media_type, "uri": scrub(attachment.url)}
    if attachment.data is not None:
        described["size"] = len(attachment.data)
    return described


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
