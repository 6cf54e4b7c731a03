"""Whether every field of a message has the type the log's schema declares, so that it can be written and read back.

The message types are msgspec structs, which (by msgspec's design) check nothing when they are made in Python:
``UserMessage(content=123)`` is made, encodes as ``{"content":123}``, and then no reader takes it back, so a store
that kept it could no longer load the conversation it belongs to. Messages a model produces are checked at the
engine's edge (`threadline.engine.check_response`); everything else that enters a log is checked here: by
`MessageList.validate` (rule ``invalid_field``), by `Conversation.record` and by every store's ``append``, before
anything is written.

The check mirrors what the decoder refuses: a field of the wrong type, a ``bool`` where a count is declared, a
reasoning ``position`` below zero, an unknown ``mode``; and what the log cannot keep exactly: tool-call arguments or
``meta.ui`` holding anything but JSON values or nested more than 128 levels deep (`threadline._json_values`), a
``duration_ms`` of nan or an infinity, a token count below 0 or past ``2**63 - 1``. A user or tool message with the
shared default meta takes a handful of type checks (about 0.3 µs); an assistant message with tool calls and
reasoning about 3 µs (its arguments are encoded and decoded once to be sure JSON keeps them).

`value_problem` is the part of the check the readers need (`threadline.serialization`): what a message's declared
types let through, for messages they have just made from a dict or JSON text.

Its place in the log's one-way order: it is made of the value types (`threadline.message_types`) and nothing above
them, and is used by the readers and by `threadline.message_list`. It is not one of the readers' shared checks
(`threadline.serialization.fields`, which are about wire text and import no message type): the engine, the
conversation and the stores ask it of messages no reader made.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

from ._json_values import json_problem
from .attachments import Attachment
from .message_types import (
    APPROVAL_KINDS,
    APPROVAL_SCOPES,
    APPROVAL_STATES,
    DEFAULT_META,
    MESSAGE_TYPES,
    MODES,
    NO_ITEMS,
    USAGE_COUNTS,
    ApprovalMessage,
    AssistantMessage,
    LLMError,
    Message,
    MessageMeta,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from .pricing.cost import Cost

__all__ = [
    "MAX_COUNT",
    "count_problem",
    "counts_ok",
    "field_problem",
    "problem_field",
    "usage_problem",
    "value_problem",
]

MAX_COUNT = 2**63 - 1
"""The largest token count a log keeps."""


def field_problem(message: Any) -> str | None:
    """The first field of ``message`` whose value its type does not allow, described (``"content is of type int,
    expected str"``); None when the message can be written and read back."""
    kind = type(message)
    if kind not in MESSAGE_TYPES:
        return f"a {kind.__name__} is not a message"
    if not isinstance(message.id, str):
        return _wrong("id", message.id, "str")
    if not isinstance(message.created_at, datetime):
        return _wrong("created_at", message.created_at, "datetime")
    meta = message.meta
    if meta is not DEFAULT_META:
        problem = _meta_problem(meta)
        if problem is not None:
            return problem
    if kind is UserMessage or kind is SystemMessage:
        if not isinstance(message.content, str):
            return _wrong("content", message.content, "str")
        if kind is UserMessage and message.attachments is not NO_ITEMS:
            return _list_problem("attachments", message.attachments, _attachment_problem)
        return None
    if kind is ToolMessage:
        for name in ("tool_call_id", "tool_name", "content"):
            value = getattr(message, name)
            if not isinstance(value, str):
                return _wrong(name, value, "str")
        if type(message.is_error) is not bool:
            return _wrong("is_error", message.is_error, "bool")
        duration = message.duration_ms
        if duration is not None:
            if not _is_number(duration):
                return _wrong("duration_ms", duration, "float or None")
            if not math.isfinite(duration):
                return _non_finite_duration(duration)
        return None
    if kind is ApprovalMessage:
        return _approval_problem(message)
    return _assistant_problem(message)


def _approval_problem(message: ApprovalMessage) -> str | None:
    for name in ("tool_call_id", "tool_name", "arguments_sha256"):
        value = getattr(message, name)
        if not isinstance(value, str):
            return _wrong(name, value, "str")
    for name in ("reason", "by"):
        value = getattr(message, name)
        if value is not None and not isinstance(value, str):
            return _wrong(name, value, "str or None")
    for name, allowed in (("state", APPROVAL_STATES), ("kind", APPROVAL_KINDS), ("scope", APPROVAL_SCOPES)):
        value = getattr(message, name)
        if value not in allowed:
            return f"{name} is {value!r}, expected one of {', '.join(map(repr, allowed))}"
    if message.arguments is not None:
        if not isinstance(message.arguments, dict):
            return _wrong("arguments", message.arguments, "dict or None")
        return _free_form_problem("arguments", message.arguments)
    return None


def value_problem(message: Message, *, free_form: bool = True) -> str | None:
    """What a reader checks of a message it has just made, whose fields already have their declared types: the values
    those types let through that the log cannot keep exactly (described as by `field_problem`); None when there are
    none.

    That is a token count below 0 or past `MAX_COUNT`, a ``duration_ms`` of nan or an infinity, and, with
    ``free_form``, tool-call arguments or ``meta.ui`` holding something other than JSON values (``object()``, bytes,
    a tuple, a key that is not text), which `MessageList.from_dict` took and ``to_json`` could then not write.
    ``free_form=False`` is for messages decoded from JSON text, whose free-form values can only be JSON.
    """
    if free_form and message.meta is not DEFAULT_META and message.meta.ui:
        problem = _free_form_problem("meta.ui", message.meta.ui)
        if problem is not None:
            return problem
    if isinstance(message, AssistantMessage):
        if free_form:
            for index, call in enumerate(message.tool_calls):
                if call.arguments:
                    problem = _free_form_problem(f"tool_calls[{index}].arguments", call.arguments)
                    if problem is not None:
                        return problem
        usage = message.usage
        if usage is not None:
            problem = usage_problem(usage)
            if problem is not None:
                return problem
    elif isinstance(message, ToolMessage):
        duration = message.duration_ms
        if duration is not None and not math.isfinite(duration):
            return _non_finite_duration(duration)
    return None


def problem_field(problem: str) -> str:
    """The top-level field a problem of `field_problem` or `value_problem` is about (``"tool_calls"`` for
    ``"tool_calls[0].arguments cannot be …"``), for errors that name their field."""
    match = _FIELD.match(problem)
    return match.group() if match else ""


_FIELD = re.compile(r"[a-z_]+")


def _non_finite_duration(duration: float) -> str:
    return f"duration_ms is {duration!r}, expected a finite number or None (JSON has no {duration!r})"


def _assistant_problem(message: AssistantMessage) -> str | None:
    for name in ("content", "model"):
        value = getattr(message, name)
        if value is not None and not isinstance(value, str):
            return _wrong(name, value, "str or None")
    if message.tool_calls is not NO_ITEMS:
        problem = _list_problem("tool_calls", message.tool_calls, _call_problem)
        if problem is not None:
            return problem
    if message.reasoning is not NO_ITEMS:
        problem = _list_problem("reasoning", message.reasoning, _reasoning_problem)
        if problem is not None:
            return problem
    error = message.error
    if error is not None:
        if not isinstance(error, LLMError):
            return _wrong("error", error, "LLMError or None")
        for name in ("type", "message"):
            value = getattr(error, name)
            if not isinstance(value, str):
                return _wrong(f"error.{name}", value, "str")
        if type(error.retryable) is not bool:
            return _wrong("error.retryable", error.retryable, "bool")
    usage = message.usage
    if usage is not None:
        if not isinstance(usage, Usage):
            return _wrong("usage", usage, "Usage or None")
        return usage_problem(usage)
    return None


def usage_problem(usage: Usage) -> str | None:
    """Why ``usage`` cannot be logged (a count that is not one, a cost that is not a `Cost`), or None."""
    for name in USAGE_COUNTS:
        problem = count_problem(getattr(usage, name))
        if problem is not None:
            return f"usage.{name} {problem}"
    cost = usage.cost
    if cost is None:
        return None
    if not isinstance(cost, Cost):
        return _wrong("usage.cost", cost, "Cost or None")
    usd = cost.usd
    if usd is not None and not (isinstance(usd, Decimal) and usd.is_finite() and usd >= 0):
        return f"usage.cost.usd must be a finite Decimal >= 0 or None, got {usd!r:.60}"
    unknown = cost.unknown
    if not (isinstance(unknown, tuple) and all(type(part) is str for part in unknown)):
        return f"usage.cost.unknown must be a tuple of strings, got {unknown!r:.60}"
    if cost.prices is not None and type(cost.prices) is not str:
        return _wrong("usage.cost.prices", cost.prices, "str or None")
    return None


def counts_ok(usage: Usage) -> bool:
    """Whether every token count of ``usage`` is one (see `count_problem`): what the engine asks of every answer."""
    return all(count_problem(getattr(usage, name)) is None for name in USAGE_COUNTS)


def count_problem(value: Any) -> str | None:
    """Why ``value`` is not a token count (an int from 0 to ``2**63 - 1``: what every store, exporter and
    OpenTelemetry attribute takes), worded to follow the field's name; None when it is one."""
    if type(value) is int and 0 <= value <= MAX_COUNT:  # nearly always, and checked on every answer
        return None
    if not _is_int(value):
        return f"is of type {type(value).__name__}, expected int"
    if not 0 <= value <= MAX_COUNT:
        return f"is {value}, expected a count from 0 to 2**63 - 1"
    return None


def _call_problem(call: Any) -> str | None:
    if not isinstance(call, ToolCall):
        return f"of type {type(call).__name__}, expected ToolCall"
    for name in ("id", "name"):
        value = getattr(call, name)
        if not isinstance(value, str):
            return _wrong(name, value, "str")
    if not isinstance(call.arguments, dict):
        return _wrong("arguments", call.arguments, "dict")
    if call.arguments:
        problem = _free_form_problem("arguments", call.arguments)
        if problem is not None:
            return problem
    if call.raw_arguments is not None and not isinstance(call.raw_arguments, str):
        return _wrong("raw_arguments", call.raw_arguments, "str or None")
    return None


def _reasoning_problem(piece: Any) -> str | None:
    if not isinstance(piece, Reasoning):
        return f"of type {type(piece).__name__}, expected Reasoning"
    if not isinstance(piece.text, str):
        return _wrong("text", piece.text, "str")
    for name in ("signature", "redacted", "provider", "id"):
        value = getattr(piece, name)
        if value is not None and not isinstance(value, str):
            return _wrong(name, value, "str or None")
    position = piece.position
    if position is not None and not _is_int(position):
        return _wrong("position", position, "int or None")
    if position is not None and position < 0:
        return f"position is {position}, expected an int >= 0 or None"
    return None


def _attachment_problem(attachment: Any) -> str | None:
    return None if isinstance(attachment, Attachment) else f"of type {type(attachment).__name__}, expected Attachment"


def _meta_problem(meta: Any) -> str | None:
    if not isinstance(meta, MessageMeta):
        return _wrong("meta", meta, "MessageMeta")
    if meta.mode is not None and meta.mode not in MODES:
        return f"meta.mode is {meta.mode!r}, not one of {', '.join(MODES)} or None"
    for name in ("run_id", "node_id", "agent_id"):
        value = getattr(meta, name)
        if value is not None and not isinstance(value, str):
            return _wrong(f"meta.{name}", value, "str or None")
    if type(meta.include_in_context) is not bool:
        return _wrong("meta.include_in_context", meta.include_in_context, "bool")
    if not isinstance(meta.ui, dict):
        return _wrong("meta.ui", meta.ui, "dict")
    return _free_form_problem("meta.ui", meta.ui) if meta.ui else None


def _free_form_problem(name: str, value: dict[str, Any]) -> str | None:
    """Why a free-form field (tool-call arguments, ``meta.ui``) is not a JSON value the log keeps exactly, or None."""
    problem = json_problem(value)
    return None if problem is None else f"{name} cannot be written as JSON ({problem})"


def _list_problem(name: str, items: Any, check: Callable[[Any], str | None]) -> str | None:
    if not isinstance(items, (list, tuple)):  # a tuple is written as a list, and read back as one
        return _wrong(name, items, "list")
    for index, item in enumerate(items):
        problem = check(item)
        if problem is not None:
            # An item's own problem reads "of type …"; one of its fields', "<field> is …".
            joint = " is " if problem.startswith("of type") else "."
            return f"{name}[{index}]{joint}{problem}"
    return None


def _is_int(value: Any) -> bool:
    """An int the decoder reads back as one: a bool is an int to isinstance, but JSON writes it as true/false."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _wrong(name: str, value: Any, expected: str) -> str:
    return f"{name} is of type {type(value).__name__}, expected {expected}"
