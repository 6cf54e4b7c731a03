"""The one turn engine. Every entry point (``prompt``, ``stream``, async iteration, ``prompt_for_type``, runs, and
callers without a `Conversation`) drives `run_turn`.

A turn: repair calls a crash left unanswered → run the calls a person approved since the last turn (and answer the
denied ones) → build the context → call the model (streaming) → check what it
returned → record the assistant message → run its tool calls (concurrently; results recorded in call order) → repeat
until an answer without tool calls. After ``max_tool_rounds`` rounds the next request offers no tools, so the model
must answer. A call that must wait (for a person's decision or a result from outside: `threadline.engine.waits`) is
recorded as waiting instead of run, and the turn ends with ``stop_reason="awaiting"`` once the round's other calls
are done; a turn that starts while calls still wait ends at once the same way.

The engine reaches its caller only through `TurnHost`: the log to read, a ``record(message)`` sink, the model, the
tools of each request, the context builder, and the tool-call ids already used. A `Conversation`'s host
(``conversation.host``) is one; a caller that keeps its log in a plain `MessageList` writes another in a few lines.

Each message is recorded the moment it exists: the assistant message before any of its tools runs, each tool result
as soon as it and the ones before it are done, and a failed model call (with the text it streamed) before the error
goes on. ``record`` persists before it appends in memory, so when it raises (a store failure) the turn stops there
with the log in memory and in the store still equal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from .._exception_text import describe_exception, exception_message, readable_message, type_name
from .._ids import new_id
from .._masking import environment_secrets, mask_secrets
from ..errors import ModelError, UserError
from ..message_fields import usage_problem
from ..message_list import MessageList, call_waits
from ..message_types import (
    DEFAULT_META,
    INTERRUPTED_TOOL,
    ApprovalMessage,
    AssistantMessage,
    LLMError,
    Message,
    Reasoning,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from ..models.base import ModelRequest, ModelResponse, ReasoningDelta, TextDelta
from ..pricing.cost import Cost
from ..pricing.prices import NOT_REPORTED, Spending, price, priced
from ..tools import ResolvedTools
from ..tracing import hooks as tracing
from .plan import TurnOptions
from .response import check_response
from .rounds import interrupted, run_tools, settle
from .spending import over_budget
from .waits import round_gates

if TYPE_CHECKING:
    from ..context import BuiltContext
    from ..models.base import Model
    from ..tools import Tool
    from ..tracing.hooks import TurnSpan

__all__ = [
    "INTERRUPTED_TOOL",
    "TurnHost",
    "TurnOptions",
    "TurnResult",
    "interrupted_results",
    "pending_calls_before",
    "repair_pending",
    "run_turn",
]


# What a tool round leaves at the end of the log.
_RESULTS = (ToolMessage, ApprovalMessage)

# The tool_choice values that name no tool.
_CHOICES = frozenset({"auto", "required", "none"})

# The usage a call that reported none adds to its turn's: no tokens, an unknown cost.
_UNREPORTED = Usage(cost=Cost(unknown=(NOT_REPORTED,)))

INTERRUPTED_CALL = "the model call was interrupted (Ctrl-C or cancellation) before it finished"


class TurnHost(Protocol):
    """What the engine needs from its caller, and all it may touch.

    `ConversationHost` implements it; so can any object that keeps a log, for example a `MessageList` and an optional
    store. The engine never reads anything else of its host.
    """

    @property
    def messages(self) -> MessageList:
        """The log the turn reads (it grows only through `record`)."""
        ...

    def record(self, message: Message) -> None:
        """Keep one new message: persist it (when the host has a store) and then append it to `messages`.

        Raises:
            StoreError: when it could not be persisted; nothing was appended then, and the turn stops.
        """
        ...

    def resolve_model(self) -> Model:
        """The model of this turn."""
        ...

    def resolve_tools(self) -> ResolvedTools:
        """The tools of the next request, evaluated anew each time (dynamic tools, mentioned objects)."""
        ...

    async def build_request_context(self, tools: ResolvedTools, run_brief: Any) -> BuiltContext:
        """The messages of the next request, chosen from `messages` by the host's context builder."""
        ...

    def artifact_reader(self) -> Tool | None:
        """The tool that reads full tool outputs sent as previews (offered only while a preview is in the
        request), or None when the host keeps no artifacts."""
        ...

    def known_call_ids(self) -> set[str]:
        """Every tool-call id in the log; the engine adds the ids it records (they must stay unique)."""
        ...


class TurnResult(msgspec.Struct):
    """How a turn ended.

    Attributes:
        stop_reason: ``"end"`` (an answer without tool calls), ``"length"`` (the answer stopped at the output
            token limit: raise ``max_tokens``), ``"content_filter"`` (the provider's filter or a refusal stopped
            it), ``"max_tool_rounds"`` (the round limit forced a tool-less answer), or ``"error"`` (the model call
            failed), or ``"awaiting"`` (tool calls wait for a person's decision or a result from outside: see
            `Conversation.awaiting`; `Conversation.resume` goes on once they are decided), or ``"budget"`` (a
            spending limit was reached before the next request: ``detail`` says which).
        rounds: Tool rounds run.
        new_messages: Messages the turn appended, in order.
        usage: Summed usage of the turn's model calls, failed ones included; ``usage.cost`` is what they cost.
        detail: Why the turn stopped, in words, where the stop reason needs them (``"budget"``); else None.
    """

    stop_reason: str = "end"
    rounds: int = 0
    new_messages: list[Message] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    detail: str | None = None

    @property
    def text(self) -> str | None:
        """The content of the turn's last assistant message."""
        for message in reversed(self.new_messages):
            if isinstance(message, AssistantMessage):
                return message.content
        return None


async def run_turn(
    host: TurnHost,
    options: TurnOptions,
    result: TurnResult | None = None,
    *,
    hold: AbstractAsyncContextManager[Any] | None = None,
) -> AsyncIterator[Message]:
    """Run one turn on ``host``; yield each message the moment it is recorded.

    Args:
        host: Where the log is read and recorded.
        options: Settings of this turn.
        result: Filled in as the turn goes (a new one if not given), so a caller can read how a turn ended even
            when it raised.
        hold: Entered when the turn starts (its first step) and left when it ends, e.g. a host's guard that keeps
            other turns out; none by default (the caller keeps the host to itself).

    Raises:
        ModelError: when a model call fails or returns something that cannot be logged (the failure is recorded
            first, with its partial output).
        CapabilityError: when the model cannot serve the request (nothing is sent).
        StoreError: when a message could not be persisted (the turn stops; memory and store stay equal).
    """
    if result is None:
        result = TurnResult()
    if hold is not None:
        await hold.__aenter__()
    span: TurnSpan | None = None
    try:
        # One generator, not one wrapping another: every message of every turn passes through here.
        model = host.resolve_model()
        tracer = tracing.tracer  # None unless threadline.instrument() was called: then this is all a turn pays
        if tracer is not None:
            span = tracer.turn(host, model, options)
        meta = _meta(options)
        record = host.record
        new_messages = result.new_messages

        waits = call_waits(host.messages)
        recovering = options.recover and bool(waits.dangling)
        for repaired in repair_pending(host, meta, [] if recovering else waits.dangling):
            new_messages.append(repaired)
            yield repaired
        awaiting = bool(waits.waiting)
        if waits.approved or waits.denied or waits.started or recovering:
            async for settled in settle(host, waits, options, span):
                record(settled)
                new_messages.append(settled)
                if type(settled) is ApprovalMessage and settled.state == "requested":
                    awaiting = True  # a call that stopped while it ran waits for a person again
                yield settled
        if awaiting:
            result.stop_reason = "awaiting"

        thinking = _Thinking(options.on_reasoning)
        # Only the first request of a turn is forced, and a turn that goes on from tool results (decided calls, a
        # result submitted from outside) continues the turn whose first request was: it is not forced again.
        log = host.messages
        tool_choice = None if len(log) and type(log[-1]) in _RESULTS else options.tool_choice
        turn_budget, budget = options.turn_budget, options.budget
        # What the conversation spent before this turn, summed once from its log (a conversation limit only).
        before = Spending(log) if budget is not None else None
        while not awaiting:
            if turn_budget is not None or budget is not None:
                why = over_budget(turn_budget, budget, result.usage, before)
                if why is not None:
                    result.stop_reason = "budget"
                    result.detail = why
                    break
            final_round = result.rounds >= options.max_tool_rounds
            tools = ResolvedTools() if final_round else host.resolve_tools()
            built = await host.build_request_context(tools, options.run_brief)
            offered = tools.tools
            if built.report.artifacts and not final_round:
                reader = host.artifact_reader()
                if reader is not None and reader.name not in offered:
                    offered = {**offered, reader.name: reader}
            if tool_choice is not None and offered and tool_choice not in _CHOICES and tool_choice not in offered:
                # Checked here for every model (the HTTP and local adapters check it too; a custom one may not).
                raise UserError(
                    f"tool_choice names {tool_choice!r}, which is not offered (offered: {', '.join(sorted(offered))})"
                )
            request = ModelRequest(
                messages=built.messages,
                tools=[tool.spec() for tool in offered.values()],
                tool_choice=(tool_choice if offered else None),
                settings=options.settings,
                response_format=options.response_format,
                reasoning_shown=options.on_reasoning is not None,
            )
            model.check(request)

            response = await _call_model(host, model, request, options, result, thinking, span)
            calls = response.tool_calls
            usage = response.usage
            message = AssistantMessage(
                content=response.content,
                tool_calls=_unique_ids(host.known_call_ids(), calls) if calls else calls,
                model=response.model or model.name,
                usage=usage,
                reasoning=response.reasoning,
                meta=meta,
            )
            # A call without usage still counts: its cost is an unknown part of the turn's, never a free one.
            result.usage = result.usage + (usage if usage is not None else _UNREPORTED)
            record(message)
            new_messages.append(message)
            yield message

            if not message.tool_calls:
                cut = response.stop_reason if response.stop_reason in _CUT_SHORT else None
                result.stop_reason = cut or ("max_tool_rounds" if final_round else "end")
                break
            if final_round:
                # No tools were offered, yet the model called some: answer them so the log stays valid, and stop.
                for call in message.tool_calls:
                    refused = ToolMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content="Tool calls are not available: the tool round limit was reached. Answer directly.",
                        is_error=True,
                        meta=meta,
                    )
                    record(refused)
                    new_messages.append(refused)
                    yield refused
                result.stop_reason = "max_tool_rounds"
                break

            at_limit = response.stop_reason == "length"
            gates = round_gates(offered, options.approval, host.messages)
            async for tool_message in run_tools(
                host, message.tool_calls, offered, options, span, cut=at_limit, gates=gates
            ):
                record(tool_message)
                new_messages.append(tool_message)
                if type(tool_message) is ApprovalMessage and tool_message.state == "requested":
                    awaiting = True
                yield tool_message
            result.rounds += 1
            if awaiting:
                result.stop_reason = "awaiting"
            tool_choice = None  # Only the first request of a turn is forced.
    except BaseException as exc:
        try:
            if span is not None:
                span.end(result, exc)
        finally:
            if hold is not None:
                await hold.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    try:
        if span is not None:
            span.end(result, None)
    finally:
        if hold is not None:
            await hold.__aexit__(None, None, None)


def pending_calls_before(messages: MessageList, message: Message) -> list[ToolCall]:
    """The calls a crash left unanswered that must be answered before ``message`` can follow in the log.

    A user or assistant message may not follow unanswered calls (the protocol of `MessageList.validate`); system and
    tool messages may.
    """
    if isinstance(message, UserMessage) or isinstance(message, AssistantMessage):
        return messages.pending_tool_calls()
    return []


def repair_pending(host: TurnHost, meta: Any = None, calls: Iterable[ToolCall] | None = None) -> list[ToolMessage]:
    """Answer the tool calls a crash left unanswered with an ``interrupted`` error result, recorded in the log.
    Calls that wait (a request for approval or a result is in the log) are never answered so.

    The engine runs it at the start of every turn. A conversation's host answers them on its own record path
    before a user or assistant message would follow unanswered calls (``conversation.add``, new requests, the nodes
    of a run), with the same results (`interrupted_results`), without recording through itself again.

    Args:
        host: Whose log to repair.
        meta: The meta of the results (None: the shared default).
        calls: The calls to answer (default: the log's dangling calls, `CallWaits.dangling`).

    Returns:
        The recorded results, in call order (empty when nothing was pending).
    """
    repaired = interrupted_results(call_waits(host.messages).dangling if calls is None else calls, meta)
    for message in repaired:
        host.record(message)
    return repaired


def interrupted_results(calls: Iterable[ToolCall], meta: Any = None) -> list[ToolMessage]:
    """The ``interrupted`` error results that answer ``calls`` (a crash left them unanswered), in call order, with
    ``meta`` (None: the shared default); not recorded."""
    results = [interrupted(call) for call in calls]
    if meta is not None:
        for result in results:
            result.meta = meta
    return results


async def _call_model(
    host: TurnHost,
    model: Model,
    request: ModelRequest,
    options: TurnOptions,
    result: TurnResult,
    thinking: _Thinking,
    span: TurnSpan | None = None,
) -> ModelResponse:
    """Stream one model call and check what it returned; on failure record the partial output and raise."""
    parts: list[str] = []
    thinking.begin_call()
    on_text = options.on_text
    response: ModelResponse | None = None
    call = None if span is None else span.chat(model, request)
    try:
        async for event in model.stream(request):
            if isinstance(event, TextDelta):
                text = event.text
                if not isinstance(text, str):
                    raise _invalid(model, f"streamed a text piece that is a {type(text).__name__}, not a str")
                parts.append(text)
                if on_text is not None:
                    on_text(text)
            elif isinstance(event, ModelResponse):
                response = event
            elif isinstance(event, ReasoningDelta):
                if not isinstance(event.text, str):
                    raise _invalid(model, f"streamed a reasoning piece that is a {type(event.text).__name__}")
                thinking.add(event)
            else:
                raise _invalid(
                    model,
                    f"streamed a {type(event).__name__}; a model yields TextDelta, ReasoningDelta and ModelResponse",
                )
        if response is None:
            raise ModelError(f"model {model.name!r} ended its stream without a response", type="empty_response")
        response = check_response(response, model.name)
    except BaseException as exc:
        import asyncio  # already loaded here (a coroutine is running); not imported with the package

        partial = "".join(parts) or _text_or_empty(getattr(exc, "partial", ""))
        if isinstance(exc, ModelError):
            # Our adapters mask keys in their errors; a model written elsewhere may not: mask what is logged. (Its
            # message is read safely too: a subclass of its own may have a __str__ that raises.)
            error = LLMError(type=exc.type, message=_masked(readable_message(exc)), retryable=exc.retryable)
            raised: BaseException = exc
        elif isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
            # Ctrl-C reaches a running turn as KeyboardInterrupt, or as the cancellation asyncio turns it into.
            error = LLMError(type="interrupted", message=INTERRUPTED_CALL, retryable=True)
            raised = exc
        elif isinstance(exc, Exception):
            # Whatever the exception says goes to the log, the screen and the next request: keys masked first. Its
            # message is the model's own code, which may raise anything (then the text says it could not be read).
            kind = type_name(exc)
            said = exception_message(exc)
            if said is None:
                said = shown = describe_exception(exc)
            else:
                said = _masked(said)
                shown = f"{kind}: {said}"
            error = LLMError(type=kind, message=said or kind, retryable=False)
            raised = ModelError(f"model {model.name!r} failed: {shown}", type="error", partial=partial)
        else:  # SystemExit, GeneratorExit: record what we have, then let it through.
            error = LLMError(type=type_name(exc), message="the model call was stopped", retryable=True)
            raised = exc
        if isinstance(raised, ModelError):
            raised.partial = partial
        # A failed call the provider billed (it reported usage) is logged with its usage and priced.
        reported = getattr(exc, "usage", None) if isinstance(exc, ModelError) else None
        usage = (
            priced(reported, model.name) if isinstance(reported, Usage) and usage_problem(reported) is None else None
        )
        failure = AssistantMessage(
            content=partial,
            error=error,
            model=model.name,
            usage=usage,
            reasoning=thinking.partial(),
            meta=_meta(options),
        )
        if usage is not None:
            result.usage = result.usage + usage
        try:
            host.record(failure)  # a StoreError here replaces the model's failure: the caller must see it
            result.new_messages.append(failure)
            result.stop_reason = "error"
        finally:
            if call is not None:
                call.failed(error, exc.status if isinstance(exc, ModelError) else None)
        if raised is exc:
            raise
        raise raised from exc
    usage = response.usage
    if usage is not None and usage.cost is None:
        # Priced here, once: the log and the call's span carry the same cost.
        priced_usage = msgspec.structs.replace(usage, cost=price(usage, response.model or model.name))
        response = msgspec.structs.replace(response, usage=priced_usage)  # the model's own answer is left as it is
    if call is not None:
        call.done(response)
    return response


# How a model's final answer may stop short, by `ModelResponse.stop_reason`; the turn's stop_reason says so.
_CUT_SHORT = frozenset({"length", "content_filter"})


def _masked(text: str) -> str:
    """``text`` with the environment's keys and key-shaped tokens masked, as every error threadline records is."""
    return mask_secrets(text, environment_secrets())


class _Thinking:
    """The reasoning the calls of one turn stream: passed on to ``on_reasoning`` as it comes (a blank line between
    parts, within a call and from one call to the next), and kept per call so that a call that fails logs what it
    had thought. Those parts are kept without any signature: a cut block is never sent back as if it were whole."""

    __slots__ = ("_on_reasoning", "_parts", "_providers", "_showing", "_shown")

    def __init__(self, on_reasoning: Callable[[str], Any] | None) -> None:
        self._on_reasoning = on_reasoning
        self._parts: dict[int, list[str]] = {}
        self._providers: dict[int, str | None] = {}
        self._shown = False  # whether on_reasoning was given anything in this turn
        self._showing: int | None = None  # the part of this call on_reasoning was last given

    def begin_call(self) -> None:
        """Forget the parts of the previous call (they are in the log now)."""
        self._parts = {}
        self._providers = {}
        self._showing = None

    def add(self, delta: ReasoningDelta) -> None:
        pieces = self._parts.get(delta.part)
        if pieces is None:
            pieces = self._parts[delta.part] = []
            self._providers[delta.part] = delta.provider if isinstance(delta.provider, str) else None
        pieces.append(delta.text)
        if self._on_reasoning is not None and delta.text:
            if self._shown and delta.part != self._showing:
                self._on_reasoning("\n\n")
            self._shown, self._showing = True, delta.part
            self._on_reasoning(delta.text)

    def partial(self) -> list[Reasoning]:
        return [
            Reasoning(text="".join(pieces), provider=self._providers[part])
            for part, pieces in sorted(self._parts.items())
            if any(pieces)
        ]


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _invalid(model: Model, problem: str) -> ModelError:
    return ModelError(f"model {model.name!r} {problem}", type="invalid_response")


def _unique_ids(known: set[str], calls: list[ToolCall]) -> list[ToolCall]:
    """Keep tool-call ids unique within the log: some servers number calls ``call_0``, ``call_1``… in every answer,
    and a repeated id would make a result ambiguous (and Anthropic refuses repeated ``tool_use`` ids)."""
    out: list[ToolCall] = []
    for call in calls:
        if call.id and call.id not in known:
            known.add(call.id)
            out.append(call)
            continue
        fresh = f"{call.id or 'call'}-{new_id()[-10:].lower()}"
        known.add(fresh)
        out.append(ToolCall(id=fresh, name=call.name, arguments=call.arguments, raw_arguments=call.raw_arguments))
    return out


def _meta(options: TurnOptions) -> Any:
    return options.meta if options.meta is not None else DEFAULT_META
