"""The one turn engine. Every entry point (``prompt``, ``stream``, async iteration, ``prompt_for_type``, runs)
drives `run_turn`.

A turn: repair calls a crash left unanswered → build the context → call the model (streaming) → append the
assistant message → run its tool calls (concurrently; results appended in call order) → repeat until an answer
without tool calls. After ``max_tool_rounds`` rounds the next request offers no tools, so the model must answer.

Each message is recorded — appended to the log and, when the conversation has a store, persisted — the moment it
exists: the assistant message before any of its tools runs, each tool result as soon as it and the ones before it
are done, and a failed model call (with the text it streamed) before `ModelError` is raised.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ._ids import new_id
from .errors import ModelError
from .messages import DEFAULT_META, AssistantMessage, LLMError, Message, ToolCall, ToolMessage, Usage
from .models.base import ModelRequest, ModelResponse, ModelSettings, ResponseFormat, TextDelta
from .tools import ResolvedTools, execute_tool_call

if TYPE_CHECKING:
    from .conversation import Conversation

__all__ = ["TurnOptions", "TurnResult", "repair_pending", "run_turn"]

INTERRUPTED_TOOL = "interrupted: the previous run stopped before this tool call finished; it may not have run"


class TurnOptions(msgspec.Struct):
    """What one turn needs beyond the conversation's config."""

    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    tool_choice: str | None = None
    max_tool_rounds: int = 10
    tool_timeout: float | None = 60.0
    response_format: ResponseFormat | None = None
    on_text: Callable[[str], Any] | None = None
    run_context: Any = None
    meta: Any = None


class TurnResult(msgspec.Struct):
    """How a turn ended.

    Attributes:
        stop_reason: ``"end"`` (an answer without tool calls), ``"max_tool_rounds"`` (the round limit forced a
            tool-less answer), or ``"error"`` (the model call failed).
        rounds: Tool rounds run.
        new_messages: Messages the turn appended, in order.
        usage: Summed usage of the turn's model calls.
    """

    stop_reason: str = "end"
    rounds: int = 0
    new_messages: list[Message] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)

    @property
    def text(self) -> str | None:
        """The content of the turn's last assistant message."""
        for message in reversed(self.new_messages):
            if type(message) is AssistantMessage:
                return message.content
        return None


async def run_turn(conversation: Conversation, options: TurnOptions) -> AsyncIterator[Message]:
    """Run one turn of ``conversation``; yield each message the moment it is recorded.

    Raises:
        ModelError: when a model call fails (the failure is recorded first, with its partial output).
        CapabilityError: when the model cannot serve the request (nothing is sent).
    """
    result = TurnResult()
    conversation.last_turn = result
    record = conversation._record
    model = conversation.resolve_model()

    for repaired in repair_pending(conversation, options.meta):
        result.new_messages.append(repaired)
        yield repaired

    tool_choice = options.tool_choice
    while True:
        final_round = result.rounds >= options.max_tool_rounds
        tools = ResolvedTools() if final_round else conversation._resolve_tools()
        built = await conversation._build_context(tools, options.run_context)
        offered = tools.tools
        if built.report.artifacts and not final_round:
            offered = conversation._with_artifact_reader(offered)
        request = ModelRequest(
            messages=built.messages,
            tools=[tool.spec() for tool in offered.values()],
            tool_choice=(tool_choice if offered else None),
            settings=options.settings,
            response_format=options.response_format,
        )
        model.check(request)

        response = await _call_model(conversation, model, request, options, result)
        message = AssistantMessage(
            content=response.content,
            tool_calls=_unique_ids(conversation, response.tool_calls) if response.tool_calls else response.tool_calls,
            model=response.model or model.name,
            usage=response.usage,
            meta=_meta(options),
        )
        if response.usage is not None:
            result.usage = result.usage + response.usage
        record(message)
        result.new_messages.append(message)
        yield message

        if not message.tool_calls:
            result.stop_reason = "max_tool_rounds" if final_round else "end"
            return
        if final_round:
            # No tools were offered, yet the model called some: answer them so the log stays valid, and stop.
            for call in message.tool_calls:
                refused = ToolMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content="Tool calls are not available: the tool round limit was reached. Answer directly.",
                    is_error=True,
                    meta=_meta(options),
                )
                record(refused)
                result.new_messages.append(refused)
                yield refused
            result.stop_reason = "max_tool_rounds"
            return

        async for tool_message in _run_tools(message.tool_calls, offered, options):
            record(tool_message)
            result.new_messages.append(tool_message)
            yield tool_message
        result.rounds += 1
        tool_choice = None  # Only the first request of a turn is forced.


def repair_pending(conversation: Conversation, meta: Any = None) -> list[ToolMessage]:
    """Answer the tool calls a crash left unanswered with an ``interrupted`` error result, recorded in the log.

    Returns:
        The recorded results, in call order (empty when nothing was pending).
    """
    repaired: list[ToolMessage] = []
    for call in conversation.messages.pending_tool_calls():
        message = ToolMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=INTERRUPTED_TOOL,
            is_error=True,
            meta=meta if meta is not None else DEFAULT_META,
        )
        conversation._record(message)
        repaired.append(message)
    return repaired


async def _call_model(
    conversation: Conversation, model: Any, request: ModelRequest, options: TurnOptions, result: TurnResult
) -> ModelResponse:
    """Stream one model call; on failure record the partial output and raise `ModelError`."""
    parts: list[str] = []
    on_text = options.on_text
    response: ModelResponse | None = None
    try:
        async for event in model.stream(request):
            if type(event) is TextDelta:
                parts.append(event.text)
                if on_text is not None:
                    on_text(event.text)
            else:
                response = event
        if response is None:
            raise ModelError(f"model {model.name!r} ended its stream without a response", type="empty_response")
    except BaseException as exc:
        import asyncio  # already loaded here (a coroutine is running); not imported with the package

        partial = "".join(parts) or getattr(exc, "partial", "") or ""
        if isinstance(exc, ModelError):
            error = LLMError(type=exc.type, message=str(exc), retryable=exc.retryable)
            raised: BaseException = exc
        elif isinstance(exc, asyncio.CancelledError):
            error = LLMError(type="cancelled", message="the model call was cancelled", retryable=True)
            raised = exc
        elif isinstance(exc, Exception):
            error = LLMError(type=type(exc).__name__, message=str(exc) or type(exc).__name__, retryable=False)
            raised = ModelError(
                f"model {model.name!r} failed: {type(exc).__name__}: {exc}", type="error", partial=partial
            )
        else:  # KeyboardInterrupt, SystemExit: record what we have, then let it through.
            error = LLMError(type=type(exc).__name__, message="interrupted", retryable=True)
            raised = exc
        if isinstance(raised, ModelError):
            raised.partial = partial
        failure = AssistantMessage(content=partial, error=error, model=model.name, meta=_meta(options))
        conversation._record(failure)
        result.new_messages.append(failure)
        result.stop_reason = "error"
        if raised is exc:
            raise
        raise raised from exc
    return response


async def _run_tools(calls: list[ToolCall], tools: dict[str, Any], options: TurnOptions) -> AsyncIterator[ToolMessage]:
    """Run calls concurrently; yield results in call order, each as soon as it and the earlier ones are done."""
    timeout = options.tool_timeout
    if len(calls) == 1:
        yield _with_meta(await execute_tool_call(calls[0], tools, timeout), options)
        return
    import asyncio  # already loaded here (a coroutine is running); not imported with the package

    tasks = [asyncio.ensure_future(execute_tool_call(call, tools, timeout)) for call in calls]
    try:
        for task in tasks:
            yield _with_meta(await task, options)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


def _unique_ids(conversation: Conversation, calls: list[ToolCall]) -> list[ToolCall]:
    """Keep tool-call ids unique within the log: some servers number calls ``call_0``, ``call_1``… in every answer,
    and a repeated id would make a result ambiguous (and Anthropic refuses repeated ``tool_use`` ids)."""
    known = conversation._known_call_ids()
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


def _with_meta(message: ToolMessage, options: TurnOptions) -> ToolMessage:
    if options.meta is not None:
        message.meta = options.meta
    return message
