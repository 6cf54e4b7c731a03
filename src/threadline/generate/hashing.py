"""What one ``generate_text`` call asks for, made canonical, and its hash.

`prepare_request` turns the keyword arguments of ``generate_text`` into a `GenerateRequest` (model name, system
text, documents, messages, tools, settings), checking them on the way, so bad input fails before anything
runs. `request_hash` is the SHA-256 of a canonical JSON of that request: everything that shapes what the model is
sent, and nothing that does not.

In the hash: the model name (a `Model` object by its ``name``; no model: the default name), the system text, the
documents (names and text, in order), every message's role, content, attachments, tool calls (ids, names,
arguments), an answer's reasoning (when it has any), tool results (call id, tool name, content, error flag), a failed
call's error, and whether it is sent at all (``include_in_context``); every tool's name, description and JSON
schema; ``max_tokens``, ``temperature``, ``reasoning`` (when set), provider extras, ``tool_choice`` and
``max_tool_rounds``. Not in it: message ids, timestamps, usage, durations, UI
metadata, and transport settings (``stream``, ``timeout``, ``max_retries``, ``tool_timeout``, ``prompt_cache``), which
change how a request travels or is billed, not what it asks. Tool-call ids are in it because providers are sent them.

The JSON is msgspec's with object keys sorted, so equal inputs give equal hashes in every process and Python
version (no ``hash()`` randomisation, no dict-order dependence).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..engine.plan import MAX_TOOL_ROUNDS, TOOL_TIMEOUT, plan_turn
from ..errors import AwaitingDecision, ProtocolError, UserError, renamed_argument, warn_renamed
from ..message_list import MessageList
from ..message_types import (
    INTERRUPTED_TOOL,
    ApprovalMessage,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    user,
)
from ..models.base import Model, ModelSettings
from ..tools import BaseToolset, ResolvedTools, Tool, Toolset, as_tool, is_dynamic_provider, resolve_tools

if TYPE_CHECKING:
    from ..models.base import ToolSpec

__all__ = ["HASH_VERSION", "GenerateRequest", "hash_request", "prepare_request", "request_hash"]

HASH_VERSION = "threadline.request/1"
"""Changes whenever the canonical form changes, so old cache entries are never read as new ones."""

TRANSPORT_KEYS = ("stream", "timeout", "max_retries", "tool_timeout")


class GenerateRequest(msgspec.Struct):
    """The checked, normalised inputs of one ``generate_text`` call.

    Attributes:
        model: The model as given (a name, a `Model`, or None for the default).
        model_name: The name hashed for it.
        system: The caller's system text (None: none).
        documents: Named documents as ``(name, text)`` pairs, in order.
        messages: The input log: a new `MessageList` from `prepare_request` (the caller's is never changed).
        tools: The tools offered.
        settings: Settings of every model call.
        tool_timeout: Seconds a tool may run.
        tool_choice: Applies to the first request.
        max_tool_rounds: Tool rounds before a tool-less request forces an answer.
        as_given: The input log as the caller gave it, when `prepare_request` answered tool calls it left
            unanswered (``messages`` is then the repaired log); the hash is of this one, so it equals `request_hash`
            of the same arguments.
    """

    model: str | Model | None
    model_name: str
    system: str | None
    documents: list[tuple[str, str]]
    messages: MessageList | Sequence[Message]
    tools: ResolvedTools
    settings: ModelSettings
    tool_timeout: float | None = TOOL_TIMEOUT
    tool_choice: str | None = None
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    as_given: MessageList | None = None

    def system_text(self) -> str:
        """The system prefix: the system text, then each document under its name."""
        parts = [self.system.strip()] if self.system and self.system.strip() else []
        if self.documents:
            docs = "\n\n".join(f"## {name}\n{text}" for name, text in self.documents)
            parts.append(f"CONTEXT DOCUMENTS\n\n{docs}")
        return "\n\n".join(parts)

    @property
    def context(self) -> list[tuple[str, str]]:
        """Deprecated: ``documents``."""
        warn_renamed("GenerateRequest.context", "GenerateRequest.documents")
        return self.documents


def prepare_request(
    *,
    model: str | Model | None = None,
    system: str | None = None,
    prompt: str | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | MessageList | None = None,
    tools: Iterable[Any] | Mapping[str, Any] | None = None,
    documents: Mapping[str, Any] | None = None,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    tool_choice: str | None = None,
    **settings: Any,
) -> GenerateRequest:
    """Check and normalise the inputs of ``generate_text`` (see there for each argument).

    Tool calls left unanswered before a later user or assistant message (a run cancelled in its tool loop,
    continued with ``[*messages, user("…")]``) are answered ``interrupted`` right before that message, as
    `Conversation` answers them (docs/architecture.md#how-a-turn-runs); the request's ``messages`` hold those results,
    its hash does not.

    Calls that wait (a request for approval or a result in the log) are never answered so: a message after one is
    refused with `AwaitingDecision` (decide it first: `threadline.generate.approve_call`, ``deny_call``,
    ``submit_call_result``).

    Raises:
        UserError: for a missing prompt, a bad model, tool, document or setting.
        AwaitingDecision: for a user or assistant message after a call that waits.
        ProtocolError: for input messages that break the tool-call protocol in any other way.
        MessageListDeserializationError: for message dicts that are not chat messages.
    """
    documents = renamed_argument(settings, "context", "documents", documents, "prepare_request")
    log = _messages(messages)
    if prompt is not None:
        log.append(user(_prompt(prompt)))
    if not len(log):
        raise UserError(_NO_INPUT)
    as_given = None
    try:
        log.validate()
    except ProtocolError as exc:
        if exc.rule != "unanswered":
            raise
        as_given, log = log, _answer_unanswered(log)
        log.validate()
    request = _assemble(model, system, log, tools, documents, max_tool_rounds, tool_choice, settings)
    if as_given is not None:
        request.as_given = as_given
    return request


def _answer_unanswered(log: MessageList) -> MessageList:
    """``log`` with an ``interrupted`` error result for each tool call left unanswered before a later user or
    assistant message, inserted right before it (in call order, as `Conversation`'s repair writes them)."""
    items: list[Message] = []
    pending: dict[str, ToolCall] = {}  # the calls of the latest assistant message that have no result yet
    waiting: dict[str, str] = {}  # those of them with an approval entry: call id -> its latest state
    for message in log:
        if isinstance(message, ToolMessage):
            pending.pop(message.tool_call_id, None)
            waiting.pop(message.tool_call_id, None)
        elif isinstance(message, ApprovalMessage):
            waiting[message.tool_call_id] = message.state
        elif isinstance(message, (UserMessage, AssistantMessage)):
            if waiting:
                raise AwaitingDecision(
                    "tool calls of the log wait or were decided without a result yet, so no message may follow "
                    "them: "
                    + ", ".join(f"{call_id} ({state})" for call_id, state in waiting.items())
                    + ". Decide those that wait (threadline.generate.approve_call, deny_call, submit_call_result) "
                    "and call generate_text with the messages ending at the decisions: approved calls run and "
                    "denied ones get their error result before the model is asked again",
                    list(waiting),
                )
            items.extend(
                ToolMessage(tool_call_id=call.id, tool_name=call.name, content=INTERRUPTED_TOOL, is_error=True)
                for call in pending.values()
            )
            calls = message.tool_calls if isinstance(message, AssistantMessage) else ()
            pending = {call.id: call for call in calls}
        items.append(message)
    return MessageList(items)


_NO_INPUT = "generate_text needs prompt= or messages= (a non-empty list)"


def _prompt(prompt: Any) -> str:
    if not isinstance(prompt, str):
        raise UserError(f"prompt must be a str, got {type(prompt).__name__}")
    return prompt


def _assemble(
    model: str | Model | None,
    system: str | None,
    log: MessageList | Sequence[Message],
    tools: Iterable[Any] | Mapping[str, Any] | None,
    documents: Mapping[str, Any] | None,
    max_tool_rounds: int,
    tool_choice: str | None,
    settings: Mapping[str, Any],
) -> GenerateRequest:
    if isinstance(model, Model):
        model_name = model.name
    elif model is None:
        from ..models import default_model_name

        model_name = default_model_name()
    elif isinstance(model, str) and model.strip():
        model_name = model.strip()
    else:
        raise UserError(f"model must be a model name or a Model, got {model!r}")
    if system is not None and not isinstance(system, str):
        raise UserError(f"system must be a str, got {type(system).__name__}")
    if type(max_tool_rounds) is not int or max_tool_rounds < 0:
        raise UserError(f"max_tool_rounds must be a non-negative int, got {max_tool_rounds!r}")
    planned = plan_turn(None, settings)  # the call's settings, checked once, over the defaults
    return GenerateRequest(
        model=model,
        model_name=model_name,
        system=system,
        documents=_documents(documents),
        messages=log,
        tools=_tools(tools),
        settings=planned.settings,
        tool_timeout=planned.tool_timeout,
        tool_choice=tool_choice,
        max_tool_rounds=max_tool_rounds,
    )


def request_hash(
    *,
    model: str | Model | None = None,
    system: str | None = None,
    prompt: str | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | MessageList | None = None,
    tools: Iterable[Any] | Mapping[str, Any] | None = None,
    documents: Mapping[str, Any] | None = None,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    tool_choice: str | None = None,
    **settings: Any,
) -> str:
    """The SHA-256 (hex) of everything that shapes a ``generate_text`` request (see the module docstring).

    Takes the same keyword arguments as ``generate_text``; the arguments that do not shape the request
    (``cache``, ``on_partial``, ``store``…) are not accepted here.

    Raises:
        UserError: for inputs ``generate_text`` would refuse.
    """
    documents = renamed_argument(settings, "context", "documents", documents, "request_hash")
    # The caller's messages are hashed where they are: no copy, no protocol check (hashing needs neither, and
    # they are most of the cost on a long log). Chat-message dicts are read as generate_text reads them.
    if messages is None:
        items: list[Any] = []
    elif isinstance(messages, (str, bytes, Mapping)):
        raise UserError("messages must be a list of messages (use prompt= for a single text)")
    else:
        items = list(messages)
    if prompt is not None:
        items.append(user(_prompt(prompt)))
    if not items:
        raise UserError(_NO_INPUT)
    return hash_request(_assemble(model, system, items, tools, documents, max_tool_rounds, tool_choice, settings))


def hash_request(request: GenerateRequest) -> str:
    """`request_hash` of an already prepared request."""
    settings = request.settings
    shaping: dict[str, Any] = {
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "extras": settings.extras,
        "tool_choice": request.tool_choice,
        "max_tool_rounds": request.max_tool_rounds,
    }
    if settings.reasoning is not None:  # only then, so the hashes of requests without it stay what they were
        shaping["reasoning"] = settings.reasoning
    payload = (
        HASH_VERSION,
        request.model_name,
        request.system,
        request.documents,
        [_tool(spec) for spec in request.tools.specs()],
        request.tools.instructions,
        shaping,
        _canonical_log(request.messages if request.as_given is None else request.as_given),
    )
    try:
        data = _encode(payload, order="sorted")
    except (TypeError, msgspec.EncodeError) as exc:
        raise UserError(f"cannot hash this request: {exc}") from None
    return hashlib.sha256(data).hexdigest()


_encode = msgspec.json.encode
_MESSAGE_KINDS = (SystemMessage, UserMessage, AssistantMessage, ToolMessage, ApprovalMessage)


def _canonical_log(messages: MessageList | Sequence[Message]) -> list[tuple[Any, ...]]:
    try:
        return [_canonical(message) for message in messages]
    except _NotAMessage:
        return [_canonical(message) for message in _messages(messages)]


class _NotAMessage(Exception):
    """An input item that is not a message yet (a chat-message dict)."""


def _canonical(message: Any) -> tuple[Any, ...]:
    """A message as the request carries it: no id, timestamp, usage, duration or UI metadata. (``Any``: its kind
    is told by ``type(...) is``, the fastest check, which type checkers do not narrow by.)"""
    kind = type(message)
    if kind is AssistantMessage:
        reasoning = message.reasoning
        if reasoning:  # only then, so the hashes of logs without reasoning stay what they were
            return (
                "a",
                message.content,
                message.tool_calls,
                message.error,
                message.meta.include_in_context,
                reasoning,
            )
        return (
            "a",
            message.content,
            message.tool_calls,
            message.error,
            message.meta.include_in_context,
        )
    if kind is ToolMessage:
        return (
            "t",
            message.tool_call_id,
            message.tool_name,
            message.content,
            message.is_error,
            message.meta.include_in_context,
        )
    if kind is UserMessage:
        attachments = message.attachments
        listed = [item.to_dict() for item in attachments] if attachments else None
        return ("u", message.content, listed, message.meta.include_in_context)
    if kind is SystemMessage:
        return ("s", message.content, message.meta.include_in_context)
    if kind is ApprovalMessage:
        # Not sent, but a log with a wait is not the log without it, and a decision shapes what the next request
        # carries: the arguments an approval gives the call, the words of a denial the model reads.
        return (
            "p",
            message.tool_call_id,
            message.tool_name,
            message.state,
            message.kind,
            message.reason,
            message.by,
            message.arguments,
            message.scope,
            message.arguments_sha256,
        )
    raise _NotAMessage


def _tool(spec: ToolSpec) -> tuple[str, str, Mapping[str, Any]]:
    return (spec.name, spec.description, spec.parameters)


def _messages(messages: Iterable[Message | Mapping[str, Any]] | MessageList | None) -> MessageList:
    if messages is None:
        return MessageList()
    if isinstance(messages, MessageList):
        return messages.copy()
    if isinstance(messages, (str, bytes, Mapping)):
        raise UserError("messages must be a list of messages (use prompt= for a single text)")
    items = list(messages)
    if not all(isinstance(item, _MESSAGE_KINDS) for item in items):
        # Chat-message dicts ({"role": "user", "content": "…"}), as callers of chat APIs write them.
        return MessageList.from_dict([_as_dict(item) for item in items])
    return MessageList(items)  # type: ignore[arg-type]


def _as_dict(item: Any) -> Any:
    if isinstance(item, Mapping):
        return dict(item)
    if isinstance(item, _MESSAGE_KINDS):
        from ..serialization import dump_dict

        return dump_dict([item])["messages"][0]
    return item  # not a message: the reader names its position


def _documents(documents: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if documents is None:
        return []
    if not isinstance(documents, Mapping):
        raise UserError("documents must be a mapping of document names to documents")
    from ..tools import encode_result

    out: list[tuple[str, str]] = []
    for name, document in documents.items():
        if not isinstance(name, str) or not name:
            raise UserError(f"document names must be non-empty strings, got {name!r}")
        try:
            text = encode_result(document)
        except Exception as exc:
            raise UserError(f"document {name!r} cannot be written as text: {exc}") from None
        out.append((name, text))
    return out


def _tools(tools: Iterable[Any] | Mapping[str, Any] | None) -> ResolvedTools:
    """Functions, `Tool`s, `Toolset`s, objects (their public methods, as `Toolset.from_object` makes them), or a
    mapping of names to functions."""
    if tools is None:
        return ResolvedTools()
    if isinstance(tools, Mapping):
        items: list[Any] = [
            value if isinstance(value, (Tool, BaseToolset)) else Tool(value, name=name) for name, value in tools.items()
        ]
    elif isinstance(tools, (Tool, BaseToolset)) or callable(tools):
        items = [tools]
    else:
        items = list(tools)
    for index, item in enumerate(items):
        if is_dynamic_provider(item):
            raise UserError(
                "generate_text takes fixed tools: a dynamic tools provider needs a Conversation "
                f"(tool {index}); compute the tools before the call instead"
            )
        if not isinstance(item, (Tool, BaseToolset)):
            # A function becomes its Tool here, where it is known not to be a dynamic provider, so resolving it
            # does not ask that a second time.
            items[index] = as_tool(item) if callable(item) else _object_tools(item, index)
    return resolve_tools(items)


def _object_tools(item: Any, index: int) -> Toolset:
    """The public methods of an object as a toolset; a value that is no tool at all (None, a number, a tool's name
    instead of the function) is a `UserError`, not a request offering nothing."""
    if item is None or isinstance(item, (str, bytes, int, float, bool)):
        hint = ": pass the function itself, not its name" if isinstance(item, str) else ""
        raise UserError(
            f"tool {index} is {type(item).__name__} {item!r:.60}, not a tool{hint} (a function, a Tool, a Toolset, or "
            "an object whose public methods are tools)"
        )
    toolset = Toolset.from_object(item)
    if not any(True for _ in toolset):
        raise UserError(f"tool {index}: this {type(item).__name__} object has no public methods to offer as tools")
    return toolset
