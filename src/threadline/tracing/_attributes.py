"""The GenAI attribute names the spans of `_otel` carry (OpenTelemetry's GenAI registry; ``error.type`` and
``server.*`` are the general registry's), and the helpers that fill them from a model, a response, an error or a
turn's result."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry.trace import Span, StatusCode

from .._exception_text import readable_message, type_name
from ..errors import ModelError, OutputValidationError, ThreadlineError
from ..message_types import AssistantMessage, Message
from .content import (
    Secrets,
    dumps,
    scrub,
)

if TYPE_CHECKING:
    from ..engine import TurnResult
    from ..message_types import Usage
    from ..models.base import Model


__all__ = [
    "AGENT",
    "AGENT_NAME",
    "API",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "FINISH_REASONS",
    "HTTP_STATUS",
    "INPUT_MESSAGES",
    "INPUT_TOKENS",
    "INTERRUPTED",
    "OPERATION",
    "OUTPUT_MESSAGES",
    "OUTPUT_TOKENS",
    "OUTPUT_TYPE",
    "PROVIDER",
    "REASONING_TOKENS",
    "REQUEST_MAX_TOKENS",
    "REQUEST_MODEL",
    "REQUEST_TEMPERATURE",
    "RESPONSE_MODEL",
    "RETRY_EVENT",
    "REUSED",
    "SERVER_ADDRESS",
    "SERVER_PORT",
    "STOP_REASON",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_DEFINITIONS",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "TOOL_RESULT",
    "TOOL_TYPE",
    "WORKFLOW",
    "WORKFLOW_NAME",
    "add_content",
    "add_usage",
    "chat_attributes",
    "described",
    "error_text_of",
    "error_type_of",
    "fail_span",
    "log_secrets",
    "model_name_of",
    "provider_of",
    "request_of_turn",
    "server_attributes",
    "stop_reason_of",
]

# Attribute names (the GenAI registry; `error.type` and `server.*` are the general registry's).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
OUTPUT_TYPE = "gen_ai.output.type"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
COST_USD = "threadline.usage.cost_usd"
COST_UNKNOWN = "threadline.usage.cost_unknown"
COST_PRICES = "threadline.usage.prices"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
WORKFLOW_NAME = "gen_ai.workflow.name"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
API = "threadline.api"
STOP_REASON = "threadline.turn.stop_reason"

AGENT = "threadline"
WORKFLOW = "threadline.run"
RETRY_EVENT = "threadline.retry"
REUSED = "threadline.answer.reused"  # "cache" or "shared": a generate_text call that made no model call of its own
INTERRUPTED = "interrupted"

# threadline's provider names that are not the conventions' (gen_ai.provider.name), with the API they name.
_PROVIDERS = {"openai-responses": ("openai", "responses")}


def chat_attributes(model: Model, conversation_id: str | None) -> dict[str, Any]:
    """The attributes every call of ``model`` in a turn starts with."""
    provider, api, model_id = provider_of(model_name_of(model))
    attributes: dict[str, Any] = {OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model_id}
    if api is not None:
        attributes[API] = api
    if conversation_id is not None:
        attributes[CONVERSATION_ID] = conversation_id
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str):
        attributes.update(server_attributes(base_url))
    return attributes


def model_name_of(model: Model) -> str:
    """The name a model goes by (``provider:model``), or its class's name when it has none."""
    return model.name if isinstance(model.name, str) else type(model).__name__


def provider_of(name: str) -> tuple[str, str | None, str]:
    """``gen_ai.provider.name``, the API when threadline's provider name says more than that (``threadline.api``)
    and the model id of a model named ``provider:model`` (or just a name)."""
    prefix, colon, rest = name.partition(":")
    if not (colon and prefix and rest):
        return name, None, name
    provider, api = _PROVIDERS.get(prefix, (prefix, None))
    return provider, api, rest


def request_of_turn(messages: Any) -> list[Message]:
    """The messages a turn answers: those after the log's last assistant message."""
    tail: list[Message] = []
    for message in reversed(list(messages)):
        if isinstance(message, AssistantMessage):
            break
        tail.append(message)
    tail.reverse()
    return tail


def add_usage(attributes: dict[str, Any], usage: Usage) -> None:
    attributes[INPUT_TOKENS] = usage.input_tokens
    attributes[OUTPUT_TOKENS] = usage.output_tokens
    if usage.reasoning_tokens:
        attributes[REASONING_TOKENS] = usage.reasoning_tokens
    if usage.cache_read_tokens:
        attributes[CACHE_READ_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes[CACHE_WRITE_TOKENS] = usage.cache_write_tokens
    cost = usage.cost
    if cost is not None:
        # A float for the backends (the log keeps the exact Decimal); unknown parts are named, never priced as 0.
        if cost.usd is not None:
            attributes[COST_USD] = float(cost.usd)
        if cost.unknown:
            attributes[COST_UNKNOWN] = cost.unknown
        if cost.prices is not None:
            attributes[COST_PRICES] = cost.prices


def server_attributes(url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a URL (none for one that cannot be read)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    if port is None:
        port = 443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None
    return {SERVER_ADDRESS: parts.hostname} if port is None else {SERVER_ADDRESS: parts.hostname, SERVER_PORT: port}


def add_content(attributes: dict[str, Any], name: str, build: Callable[[], Any]) -> None:
    """Add a content attribute as JSON; one that cannot be built is left out: tracing never fails a turn."""
    try:
        attributes[name] = dumps(build())
    except Exception:
        pass


def fail_span(span: Span, error_type: str, description: str | None) -> None:
    span.set_attribute(ERROR_TYPE, error_type)
    span.set_status(StatusCode.ERROR, description)


def error_type_of(error: BaseException) -> str:
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return "interrupted"
    kind = getattr(error, "type", None)  # a ModelError says what kind of failure it was
    return kind if isinstance(kind, str) and kind else type_name(error)


def error_text_of(error: BaseException, secrets: tuple[str, ...] | None) -> str | None:
    """A status description for ``error``: our own errors' texts, scrubbed (with ``secrets`` masked); other
    exceptions are named by type only.

    ``secrets`` None means no content: a model call's error text, which a server may fill with the request it
    refused, and a structured output's validation error, which quotes the answer, are then described by their type
    (and HTTP status) only.
    """
    if not isinstance(error, ThreadlineError):
        return None
    if secrets is None:
        if isinstance(error, ModelError):
            return described(error.type, error.status)
        if isinstance(error, OutputValidationError):
            return type_name(error)
        secrets = ()
    # A subclass of ours made elsewhere (a custom model's ModelError) may have a __str__ that raises: tracing never
    # fails a turn, so its message is read safely.
    return scrub(readable_message(error), secrets)


def described(error_type: str, status: int | None) -> str:
    """A failed model call without its text: its type and HTTP status (``bad_request (HTTP 400)``)."""
    return error_type if status is None else f"{error_type} (HTTP {status})"


def stop_reason_of(result: TurnResult, error: BaseException | None) -> str:
    """How the turn ended: its result's stop reason, unless an exception ended it before the engine set one."""
    if error is None:
        return result.stop_reason
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return INTERRUPTED
    if result.stop_reason != "end":  # set by the engine: "error" (the model call failed) or "max_tool_rounds"
        return result.stop_reason
    # "end" is the result's default; the engine sets it only when the turn ends without an exception. The caller
    # may stop reading once it has the answer (the turn had ended), or before (it was left unfinished).
    last = result.new_messages[-1] if result.new_messages else None
    if isinstance(last, AssistantMessage) and not last.tool_calls and last.error is None:
        return "end"
    return INTERRUPTED if isinstance(error, GeneratorExit) else "error"


def log_secrets(conversation: Any) -> tuple[str, ...]:
    """The secret values in a conversation's log (for a run's error text)."""
    secrets = Secrets()
    try:
        secrets.add_messages(conversation.messages)
    except Exception:
        return ()
    return secrets.forms
