"""What ``generate_text`` returns (`GenerateTextResult`, one `GenerateStep` per model call), the form a finished
result takes in a store's request cache, and `find_tool_result`.

A cached result keeps the produced messages in the log's own version-2.0 form, and for each step the system prefix it
was sent with and the position of its answer: the messages a step was sent are the prefix followed by the log up to
that answer as the context builder sends it (what ``generate_text`` sends, since it sends the whole log), so they are
rebuilt on a hit instead of being stored once per step. A result whose steps could not be rebuilt so is not cached.
Its usage keeps every field; entries written with input and output tokens only still read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import msgspec

from ..errors import ProtocolError
from ..message_list import AwaitingCall, MessageList, call_waits, validate_messages
from ..message_types import ApprovalMessage, AssistantMessage, Message, ToolMessage, Usage, content_for_model
from ..pricing.cost import Cost
from ..pricing.prices import log_cost
from ..serialization import dump_dict, typed_decoder

__all__ = [
    "CACHE_PREFIX",
    "GenerateStep",
    "GenerateTextResult",
    "cache_key",
    "find_tool_result",
    "result_from_cache",
    "result_to_cache",
]

CACHE_PREFIX = "generate_text/2:"
"""Keys of ``generate_text`` results in a store's request cache (other users of the cache use other prefixes)."""


def cache_key(request_hash: str) -> str:
    """The cache key of a request hash."""
    return CACHE_PREFIX + request_hash


# The result types are frozen msgspec Structs rather than frozen dataclasses: a cache hit builds one result and one
# step per model call, and a frozen dataclass's __init__ (object.__setattr__ per field) cost ~1 µs more each.
class GenerateStep(msgspec.Struct, frozen=True):
    """One model call of a ``generate_text`` run.

    Attributes:
        messages: The messages it was sent, system prefix included.
        response: The assistant message it produced (a failure has ``error`` set).
        tool_results: The results of its tool calls, in call order.
        usage: Its token usage, when the model reported it.
        duration_ms: From sending the request to the complete answer.
    """

    messages: list[Message]
    response: AssistantMessage
    tool_results: list[ToolMessage] = msgspec.field(default_factory=list)
    usage: Usage | None = None
    duration_ms: float = 0.0

    @property
    def tool_calls(self) -> list[Any]:
        """The tool calls of the response."""
        return list(self.response.tool_calls)


class GenerateTextResult(msgspec.Struct, frozen=True):
    """The outcome of ``generate_text``.

    Attributes:
        text: The final answer's text ("" when the model answered with nothing).
        messages: The input messages followed by every message produced (tool calls and results included): pass
            them back, with a new user message, to continue.
        new_messages: The messages produced by this call.
        steps: One per model call.
        usage: Summed over the steps.
        request_hash: The `request_hash` of the inputs.
        stop_reason: ``"end"`` (an answer without tool calls), ``"length"`` (the answer stopped at the output
            token limit), ``"content_filter"`` (a filter or a refusal stopped it), ``"max_tool_rounds"``, ``"budget"``
            (a spending limit was reached before the next request), or
            ``"awaiting"``: tool calls wait for a person's decision or a result from outside (`awaiting`); decide
            them with `threadline.generate.approve_call`, ``deny_call`` or ``submit_call_result`` and pass the
            messages they return to ``generate_text`` to go on.
        conversation_id: The stored conversation, when ``store=`` was given.
        cached: True when the result came from the cache (no model was called).
    """

    text: str
    messages: MessageList
    new_messages: list[Message]
    steps: list[GenerateStep]
    usage: Usage
    request_hash: str
    stop_reason: str
    conversation_id: str | None = None
    cached: bool = False

    @property
    def cost(self) -> Cost:
        """What the model calls that made this result cost (summed from ``new_messages``; a cached result's is
        what it cost when it was made): ``cost.unknown`` names what could not be priced."""
        return log_cost(self.new_messages)

    @property
    def awaiting(self) -> list[AwaitingCall]:
        """The tool calls that wait for a decision or a result (empty unless ``stop_reason == "awaiting"``)."""
        return call_waits(self.messages).waiting

    def for_input(self, messages: MessageList) -> GenerateTextResult:
        """This result as the answer to another caller's equal input (their own message objects first)."""
        log = messages.copy()
        log.extend(self.new_messages)
        return msgspec.structs.replace(self, messages=log, new_messages=list(self.new_messages))


def find_tool_result(messages: Iterable[Message], tool_name: str) -> ToolMessage | None:
    """The latest result of the tool ``tool_name`` in ``messages``, or None.

    This is how a caller reads what a model "presented" through a tool (the ``presentResult`` pattern): the
    tool's result is in the log, so no handler state is needed.
    """
    items = list(messages)
    for message in reversed(items):
        if isinstance(message, ToolMessage) and message.tool_name == tool_name:
            return message
    return None


def result_to_cache(result: GenerateTextResult, input_count: int) -> dict[str, Any] | None:
    """The JSON value a store caches for a finished result, or None when a step's messages could not be rebuilt
    from it exactly (then it is not cached: a hit must show what the run was sent).

    One list holds every message to keep: the produced ones, then each distinct system-prefix message of the steps
    (the prefix is usually one message shared by every step); a step names its prefix by positions in that list.
    So a hit reads every message in one pass.
    """
    new = result.new_messages
    log = list(result.messages)
    kept: list[Message] = list(new)
    pool: dict[int, int] = {}
    positions = {id(message): index for index, message in enumerate(new)}
    steps = []
    for step in result.steps:
        at = positions[id(step.response)]
        sent, _ = _sent_from_log(log[: input_count + at])
        count = len(step.messages) - len(sent)
        if count < 0 or step.messages[count:] != sent:
            return None
        prefix = []
        for message in step.messages[:count]:
            index = pool.get(id(message))
            if index is None:
                index = pool[id(message)] = len(kept)
                kept.append(message)
            prefix.append(index)
        steps.append({"prefix": prefix, "at": at, "duration_ms": step.duration_ms})
    return {
        "text": result.text,
        "stop_reason": result.stop_reason,
        "usage": msgspec.to_builtins(result.usage),  # every field (reasoning_tokens too); zeros are left out
        "new_count": len(new),
        "messages": dump_dict(kept)["messages"],
        "steps": steps,
    }


def _sent_from_log(messages: Iterable[Message]) -> tuple[list[Message], bool]:
    """The messages of the log a ``generate_text`` request carries, as its context builder sends them (the whole
    log, `threadline.context._window`'s rules): UI-only events, approval entries and empty answers left out, a
    failed call as its partial text ending in its error block. And whether that is the log itself, unchanged."""
    sent: list[Message] = []
    same = True
    for message in messages:
        if not message.meta.include_in_context or type(message) is ApprovalMessage:  # never sent to a model
            same = False
            continue
        if type(message) is AssistantMessage:
            if message.error is not None:
                same = False
                message = AssistantMessage(
                    id=message.id,
                    created_at=message.created_at,
                    meta=message.meta,
                    content=content_for_model(message),
                    model=message.model,
                )
            elif message.content is None and not message.tool_calls:
                same = False
                continue
        sent.append(message)
    return sent, same


# The stored form of a result, decoded from the cache's JSON bytes in one pass: every message checked as a stored
# message is, every number where it must be; what the types cannot say (positions within bounds, the kinds of the
# messages at them) `result_from_cache` checks.
_Position = Annotated[int, msgspec.Meta(ge=0)]


class _CachedStep(msgspec.Struct):
    prefix: list[_Position]
    at: _Position
    duration_ms: float


class _CachedResult(msgspec.Struct):
    text: str
    stop_reason: str
    usage: Usage  # every field has a default: entries written with only input and output tokens still read
    new_count: _Position
    messages: list[Message]
    steps: list[_CachedStep]


_cached_decoder = typed_decoder(_CachedResult)


def result_from_cache(data: bytes, messages: MessageList, request_hash: str) -> GenerateTextResult | None:
    """A cached value (its JSON bytes) as the result for ``messages``, or None when the bytes are not a whole, readable
    result (damaged, or written by another version): the request then runs again, and its result replaces them."""
    try:
        cached = _cached_decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError, RecursionError):
        return None
    kept = cached.messages
    count = cached.new_count
    if count > len(kept) or len({message.id for message in kept}) != len(kept):
        return None
    new = kept[:count]
    log = MessageList.unchecked([*messages, *new])  # no per-item type check: the decoder made each one a message
    try:
        # The request's messages were checked when it was hashed, and the decoder checked the cached ones' fields;
        # what is left is how they answer each other.
        validate_messages(log, check_fields=False)
    except ProtocolError:
        return None
    sent_log, all_sent = _sent_from_log(log)
    start = len(messages)
    steps = []
    try:
        for item in cached.steps:
            at = item.at
            response = new[at]
            if not isinstance(response, AssistantMessage):
                return None
            results = []
            for message in new[at + 1 :]:
                if not isinstance(message, ToolMessage):
                    break
                results.append(message)
            sent = [kept[index] for index in item.prefix]
            sent.extend(sent_log[: start + at] if all_sent else _sent_from_log(log[: start + at])[0])
            steps.append(GenerateStep(sent, response, results, response.usage, item.duration_ms))
    except IndexError:  # a position past the messages (the decoder refused negative ones)
        return None
    return GenerateTextResult(
        text=cached.text,
        messages=log,
        new_messages=new,
        steps=steps,
        usage=cached.usage,
        request_hash=request_hash,
        stop_reason=cached.stop_reason,
        cached=True,
    )
