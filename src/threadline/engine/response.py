"""The checks that make a model's answer loggable: `check_response` turns what a model returned into a
`ModelResponse` whose every field has the type the log's schema declares (repairing what can be repaired), or
refuses it with a `ModelError` the engine logs like any failure. The turn itself is `threadline.engine.turn`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._exception_text import safe_repr
from .._json_values import json_problem
from ..errors import ModelError
from ..message_fields import usage_problem
from ..message_types import Reasoning, ToolCall, Usage
from ..models.base import ModelResponse

__all__ = ["check_response"]


def check_response(response: ModelResponse, model_name: str) -> ModelResponse:
    """What a model returned, made safe to log: every field has the type the log's schema declares, so a stored log
    always loads again.

    The rules: tool-call ``arguments`` that are not a JSON object the log keeps exactly (a list, a number, a dict
    holding a value JSON cannot hold or nested more than 128 levels deep: see `threadline._json_values`) are kept
    as ``raw_arguments`` text, so the tool result is an "invalid arguments" error the model can
    correct; ``arguments=None`` means no arguments; a usage whose counts are not counts (not an int, below 0, past
    2**63 - 1) or whose cost is not a `Cost`, or a model name of the wrong type, is dropped. What cannot
    be repaired — content that is not text, a tool call without a name, a tool-call id that is not a string — makes
    the call fail with a `ModelError` (``type="invalid_response"``), logged like any other failure; so does
    reasoning that is not a list of `Reasoning` with text fields.

    Raises:
        ModelError: for a response that cannot be logged.
    """
    content = response.content
    calls = response.tool_calls
    usage = response.usage
    name = response.model
    # Token counts are ints from 0 to 2**63 - 1 (a bool is an int to isinstance, but not a count).
    usage_ok = usage is None or (isinstance(usage, Usage) and usage_problem(usage) is None)
    name_ok = name is None or isinstance(name, str)
    if content is not None and not isinstance(content, str):
        raise ModelError(
            f"model {model_name!r} returned content that is a {type(content).__name__}, not a str",
            type="invalid_response",
        )
    reasoning = response.reasoning
    if reasoning and not _reasoning_ok(reasoning):
        raise ModelError(
            f"model {model_name!r} returned reasoning that is not a list of Reasoning with text fields",
            type="invalid_response",
        )
    if isinstance(calls, list) and not calls and usage_ok and name_ok:
        return response  # the usual answer: nothing to check further
    if not isinstance(calls, list):
        if not isinstance(calls, (list, tuple)):
            raise ModelError(
                f"model {model_name!r} returned tool_calls that is a {type(calls).__name__}, not a list",
                type="invalid_response",
            )
        calls = list(calls)
    checked: list[ToolCall] = []
    same = calls is response.tool_calls
    for index, call in enumerate(calls):
        fixed = _checked_call(call, index, model_name)
        if fixed is not call:
            same = False
        checked.append(fixed)
    if same and usage_ok and name_ok:
        return response
    return ModelResponse(
        content=content,
        tool_calls=checked,
        usage=usage if usage_ok else None,
        stop_reason=response.stop_reason,
        model=name if name_ok else None,
        reasoning=reasoning,
    )


def _reasoning_ok(reasoning: Any) -> bool:
    """Whether a response's reasoning can be logged: a list of `Reasoning` whose fields have their declared types."""
    if not isinstance(reasoning, list):
        return False
    for piece in reasoning:
        if not isinstance(piece, Reasoning) or not isinstance(piece.text, str):
            return False
        for value in (piece.signature, piece.redacted, piece.provider, piece.id):
            if value is not None and not isinstance(value, str):
                return False
        if piece.position is not None and not (type(piece.position) is int and piece.position >= 0):
            return False
    return True


def _checked_call(call: Any, index: int, model_name: str) -> ToolCall:
    if not isinstance(call, ToolCall):
        raise ModelError(
            f"model {model_name!r} returned tool call {index} as a {type(call).__name__}, not a ToolCall",
            type="invalid_response",
        )
    if not isinstance(call.id, str):
        raise ModelError(
            f"model {model_name!r} returned tool call {index} with an id that is a {type(call.id).__name__}, not a str",
            type="invalid_response",
        )
    if not isinstance(call.name, str) or not call.name:
        raise ModelError(
            f"model {model_name!r} returned tool call {index} without a tool name", type="invalid_response"
        )
    arguments = call.arguments
    raw = call.raw_arguments
    if raw is not None and not isinstance(raw, str):
        raw = _as_text(raw)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or (arguments and json_problem(arguments) is not None):
        arguments, raw = {}, raw if raw is not None else _as_text(arguments)
    if arguments is call.arguments and raw is call.raw_arguments:
        return call
    return ToolCall(id=call.id, name=call.name, arguments=arguments, raw_arguments=raw)


def _as_text(value: Any) -> str:
    """Arguments the log cannot hold as a JSON object, as text (JSON when possible) the model can be shown."""
    try:
        return msgspec.json.encode(value).decode("utf-8")
    except Exception:
        return safe_repr(value)
