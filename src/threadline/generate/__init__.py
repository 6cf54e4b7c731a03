"""``generate_text``: one call — a prompt or a list of messages in, the answer and the whole exchange out — driven
by the same turn engine as `Conversation` (`threadline.engine.run_turn`), through a small host of its own.

    result = await generate_text(model="openai:gpt-4o-mini", system="Be terse.", prompt="Weather in Paris?",
                                 tools=[get_weather])
    again = await generate_text(model=..., messages=[*result.messages, user("And in Rome?")])

The system text and the documents (``documents=``) form the system prefix of every request; they are not part of
``result.messages`` (pass them again to continue). The whole log is sent each time.

Tool calls that wait (a tool with ``approval=`` or ``external=True``, or one that raised `ApprovalRequired`) end the
run with ``stop_reason="awaiting"`` and ``result.awaiting``; `approve_call`, `deny_call` and `submit_call_result`
(module `decide`) return the messages with the decision appended, and ``generate_text(messages=...)`` given them goes
on (approved calls run first). A result that waits is not finished: it is never cached.

De-duplication: every call has a `request_hash`. With ``cache=`` a store, a finished result under that hash is
returned without calling the model, across processes; failures are never cached, and neither is a result one of whose
tools reported a failure that may pass (`note_transient_failure`: an `agent_tool` child whose model call failed with a
retryable error, or that its timeout stopped), so the next identical request runs again instead of replaying it.
Within one process, calls with the same hash that overlap in time share one model call (the in-flight table below),
whether or not there is a cache.

The package: this module (`generate_text` and its host), `result` (`GenerateTextResult`, its cached form,
`find_tool_result`), `hashing` (`request_hash`), `decide` (deciding calls that wait), `reactive` (`Cell`,
`reactive_generate_text`) and `agents` (`agent_tool`). `threadline` exports their public names.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from .._ids import new_id
from ..context import BuiltContext, ContextBuilder, ContextSettings, ModePrompts
from ..engine import TurnOptions, TurnResult, run_turn
from ..engine.plan import MAX_TOOL_ROUNDS
from ..errors import ModelError, UserError, renamed_argument
from ..message_list import MessageList
from ..message_types import AssistantMessage, Message, ToolMessage, UserMessage, user
from ..models.base import Model, ModelRequest
from ..store.capabilities import CacheStore, ConversationStore, require
from ..tools import ResolvedTools, Tool
from ..tracing import hooks as tracing
from .decide import approve_call, deny_call, submit_call_result
from .hashing import GenerateRequest, hash_request, prepare_request
from .result import GenerateStep, GenerateTextResult, cache_key, result_from_cache, result_to_cache

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "GenerateHost",
    "approve_call",
    "deny_call",
    "generate_text",
    "generate_text_sync",
    "note_transient_failure",
    "submit_call_result",
]

# generate_text sends the caller's whole log: the caller chose those messages (the window of a Conversation is for
# logs that grow without bound). Tool outputs are sent whole too: there is no conversation to keep artifacts under.
_WHOLE_LOG = ContextSettings(max_messages=10**9, max_chars=10**15, tool_preview_chars=10**15)


# The marks of the generate_text run in progress (None outside one). Tools run in tasks started from the run, which
# inherit this context: a tool's mark reaches the run that called it, however deeply the tool's own work nests.
_transient_failures: ContextVar[list[bool] | None] = ContextVar("threadline_transient_failures", default=None)


def note_transient_failure() -> None:
    """Say, from a tool, that the ``generate_text`` run calling it met a failure that may pass (a sub-agent's
    rate limit, say): the run's result is still returned, but not cached. Outside a run it does nothing."""
    marks = _transient_failures.get()
    if marks is not None:
        marks.append(True)


class GenerateHost:
    """The engine's host (`threadline.engine.TurnHost`) for one ``generate_text`` run: a log in memory, optionally
    written through to a store, and a record of each model call (the steps)."""

    def __init__(
        self,
        request: GenerateRequest,
        model: Model,
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
        on_partial: Callable[[str], Any] | None = None,
    ) -> None:
        self.messages = input_log(request)
        self.steps: list[GenerateStep] = []
        self.store = store
        self.conversation_id = conversation_id
        self._model = model
        self._tools = request.tools
        self._builder = ContextBuilder(_WHOLE_LOG, ModePrompts(chat=request.system_text(), tool_policy="", banner=""))
        self._window_cache: dict[Any, Any] = {}
        self._call_ids = {
            call.id
            for message in request.messages
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls
        }
        self._sent: list[Message] = []
        self._started = 0.0
        self._on_partial = on_partial
        self._partial = ""

    def open_store(self, request: GenerateRequest, request_hash: str) -> None:
        """Create the stored conversation and write the input messages (before anything runs)."""
        if self.store is not None:
            self.conversation_id = _open_log(self.store, self.conversation_id, request, request_hash, self.messages)

    # -- TurnHost ---------------------------------------------------------------------------------------------
    def record(self, message: Message) -> None:
        """Persist (when there is a store), then append; an answer closes the step it ends."""
        if self.store is not None:
            self.store.append(self.conversation_id, (message,))  # type: ignore[arg-type]
        self.messages.append(message)
        kind = type(message)
        if kind is AssistantMessage:
            self.steps.append(
                GenerateStep(
                    messages=self._sent,
                    response=message,  # type: ignore[arg-type]
                    usage=message.usage,  # type: ignore[union-attr]
                    duration_ms=(time.perf_counter() - self._started) * 1000.0,
                )
            )
        elif kind is ToolMessage and self.steps:
            self.steps[-1].tool_results.append(message)  # type: ignore[arg-type]

    def resolve_model(self) -> Model:
        return self._model

    def resolve_tools(self) -> ResolvedTools:
        return self._tools

    async def build_request_context(self, tools: ResolvedTools, run_brief: Any) -> BuiltContext:
        built = self._builder.build(self.messages, None, None, run_brief, tools, cache=self._window_cache)
        report = built.report
        if report.prefix_messages and not built.messages[0].content:  # type: ignore[union-attr]  # a SystemMessage
            # No system text, documents or toolset instructions: send no empty system message.
            del built.messages[0]
            report.prefix_messages -= 1
        self._sent = built.messages
        self._partial = ""
        self._started = time.perf_counter()
        return built

    def artifact_reader(self) -> Tool | None:
        return None

    def known_call_ids(self) -> set[str]:
        return self._call_ids

    def on_text(self, piece: str) -> None:
        """Stream text to ``on_partial`` as the answer so far (it starts again with each model call)."""
        self._partial += piece
        if self._on_partial is not None:
            self._on_partial(self._partial)


async def generate_text(
    *,
    model: str | Model | None = None,
    system: str | None = None,
    prompt: str | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | MessageList | None = None,
    tools: Iterable[Any] | Mapping[str, Any] | None = None,
    documents: Mapping[str, Any] | None = None,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    tool_choice: str | None = None,
    cache: CacheStore | None = None,
    on_partial: Callable[[str], Any] | None = None,
    store: ConversationStore | None = None,
    conversation_id: str | None = None,
    dedupe: bool = True,
    **settings: Any,
) -> GenerateTextResult:
    """Run one request, with its tool rounds, and return the answer with the whole exchange.

    Args:
        model: A model name (``local``, ``openai:gpt-4o-mini``…) or a `Model`; None: the default model.
        system: System text, sent as the system prefix of every request (not added to the messages).
        prompt: A user message appended to ``messages`` (or the only message).
        messages: The log to continue: messages, or chat-message dicts (``{"role": "user", "content": "…"}``).
            Tool calls a cancelled run left unanswered are answered ``interrupted`` before the next message, as a
            `Conversation` answers them.
        tools: Functions, `Tool`s, `Toolset`s, objects (their public methods become tools) or a mapping of names to
            functions.
        documents: Named documents (text, or anything JSON can write) added to the system prefix, in order
            (``context=``, its old name, still works for one release, with a `DeprecationWarning`).
        max_tool_rounds: Tool rounds before a tool-less request forces an answer.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool name, for the first request.
        cache: A store: a finished result with the same `request_hash` is returned without calling the model, and
            a new one is saved there. Failures are never cached, nor a result that waits (``"awaiting"``), nor one
            a tool marked with `note_transient_failure` (an `agent_tool` child that failed in a way that may pass).
        on_partial: Called with the answer's text so far while it streams (from the start again for each model
            call of a tool loop).
        store: Log the run as a conversation in this store (input messages first, then each message as it
            happens); its id is ``result.conversation_id``. A cache hit is logged too (all at once, its metadata
            saying ``cached``), and a logged call is never de-duplicated with another.
        conversation_id: The id of that conversation (a new one by default; it must not exist yet).
        dedupe: Let calls with the same hash that overlap in time share one model call (default). Set False to
            sample the same request several times at once.
        **settings: ``stream``, ``max_tokens``, ``temperature``, ``timeout``, ``max_retries``, ``tool_timeout`` and
            provider-prefixed extras (``openai_seed``…).

    Returns:
        The `GenerateTextResult`.

    Raises:
        ModelError: when a model call fails; its ``messages`` holds the log up to and including the failure (with
            its partial output), so the caller can continue from it.
        UserError: for bad input (nothing is sent); `CapabilityError` when the model cannot serve the request.
        AwaitingDecision: for a message after a tool call that waits (decide it first: `approve_call`…).
        ProtocolError: for input messages that break the tool-call protocol (beyond calls left unanswered).
        StoreError: when ``store`` or ``cache`` failed.
    """
    documents = renamed_argument(settings, "context", "documents", documents, "generate_text")
    request = prepare_request(
        model=model,
        system=system,
        prompt=prompt,
        messages=messages,
        tools=tools,
        documents=documents,
        max_tool_rounds=max_tool_rounds,
        tool_choice=tool_choice,
        **settings,
    )
    started = time.time_ns()
    key = hash_request(request)
    if store is not None and conversation_id is not None and store.has_conversation(conversation_id):
        raise UserError(f"conversation {conversation_id!r} already exists in the store; choose a new id")
    if cache is not None:
        hit = _cached(cache, key, input_log(request))
        if hit is not None:
            if store is not None:
                # Logged like any run (its metadata says the answer came from the cache).
                logged = _open_log(store, conversation_id, request, key, hit.messages, cached=True)
                hit = msgspec.structs.replace(hit, conversation_id=logged)
            if tracing.tracer is not None:
                tracing.tracer.reused(request.model_name, key, "cache", started, hit.conversation_id)
            return hit
    if not dedupe or store is not None:
        # A call that logs to a store is a run of its own: sharing another's would leave its conversation unwritten.
        return await _run(request, key, cache, on_partial, store, conversation_id)

    import asyncio

    flights = _flights.setdefault(asyncio.get_running_loop(), {})
    flight = flights.get(key)
    if flight is None:
        flight = _Flight()
        flight.task = asyncio.ensure_future(_run(request, key, cache, flight.emit, store, conversation_id))
        flights[key] = flight
        flight.task.add_done_callback(partial(_land, flights, key, flight))
        first = True
    else:
        first = False
    if on_partial is not None:
        flight.listeners.append(on_partial)
    flight.waiters += 1
    failure: BaseException | None = None
    try:
        result = await asyncio.shield(flight.task)
    except BaseException as exc:
        failure = exc
        # A caller that gives up (a superseded reactive run) stops the model call, unless another still waits.
        if isinstance(exc, asyncio.CancelledError) and not flight.task.done() and flight.waiters == 1:
            flight.task.cancel()
            # Out of the table at once, not when the task lands a loop iteration later: a caller with the same
            # hash arriving in between must start a run of its own, not join one that ends in CancelledError.
            if flights.get(key) is flight:
                del flights[key]
        raise
    finally:
        flight.waiters -= 1
        if on_partial is not None and on_partial in flight.listeners:
            flight.listeners.remove(on_partial)
        if not first and tracing.tracer is not None:  # the model call's spans are under the first caller's
            tracing.tracer.reused(request.model_name, key, "shared", started, error=failure)
    return result if first else result.for_input(input_log(request))


def generate_text_sync(**kwargs: Any) -> GenerateTextResult:
    """`generate_text` for code without an event loop (same arguments, same result).

    Raises:
        RuntimeError: when called inside a running event loop (await `generate_text` there).
    """
    from .._sync import run_sync

    return run_sync(generate_text(**kwargs))


def _open_log(
    store: ConversationStore,
    conversation_id: str | None,
    request: GenerateRequest,
    request_hash: str,
    messages: Iterable[Message],
    *,
    cached: bool = False,
) -> str:
    """Create the conversation a run is logged as (``conversation_id``, or a new id) and write ``messages``; its id."""
    written = list(messages)
    conversation_id = conversation_id or new_id()
    title = next((m.content for m in written if isinstance(m, UserMessage) and m.content.strip()), None)
    if title is not None:
        title = " ".join(title.split())
        title = title if len(title) <= 80 else title[:79] + "…"
    metadata: dict[str, Any] = {
        "source": "generate_text",
        "request_hash": request_hash,
        "system": request.system,
        "context": [name for name, _ in request.documents],  # the stored key keeps its name: logs already hold it
    }
    if cached:
        metadata["cached"] = True  # the answer came from the cache: no model was called for it
    store.create_conversation(title=title, metadata=metadata, id=conversation_id)
    if written:
        store.append(conversation_id, written)
    return conversation_id


def input_log(request: GenerateRequest) -> MessageList:
    """The request's input messages as a `MessageList` (`prepare_request` makes one; anything else is copied)."""
    messages = request.messages
    return messages if isinstance(messages, MessageList) else MessageList(messages)


class _Flight:
    """A run that callers with the same hash share (in-flight de-duplication)."""

    __slots__ = ("listeners", "task", "waiters")

    def __init__(self) -> None:
        self.task: asyncio.Future[GenerateTextResult]
        self.waiters = 0
        self.listeners: list[Callable[[str], Any]] = []

    def emit(self, text: str) -> None:
        for listener in list(self.listeners):
            listener(text)


# Per event loop: a task belongs to one loop, and a loop that is gone takes its table with it.
_flights: weakref.WeakKeyDictionary[Any, dict[str, _Flight]] = weakref.WeakKeyDictionary()


def _land(flights: dict[str, _Flight], key: str, flight: _Flight, _: object) -> None:
    if flights.get(key) is flight:
        del flights[key]
    if not flight.task.cancelled():
        flight.task.exception()  # retrieved here: every waiter may have gone


def _cached(cache: CacheStore, key: str, messages: MessageList) -> GenerateTextResult | None:
    require(cache, CacheStore, who="cache= takes")
    data = cache.cache_get_raw(cache_key(key))
    return None if data is None else result_from_cache(data, messages, key)


async def _run(
    request: GenerateRequest,
    key: str,
    cache: CacheStore | None,
    on_partial: Callable[[str], Any] | None,
    store: ConversationStore | None,
    conversation_id: str | None,
) -> GenerateTextResult:
    from ..models import get_model

    input_count = len(request.messages)
    model = get_model(request.model)
    if store is not None:
        # Refused before anything is logged (a missing API key, a setting the model refuses): a stored run that
        # no model call answers would say nothing of why.
        model.check(ModelRequest(messages=[user("…")], settings=request.settings))
    host = GenerateHost(request, model, store, conversation_id, on_partial)
    host.open_store(request, key)
    options = TurnOptions(
        settings=request.settings,
        tool_choice=request.tool_choice,
        max_tool_rounds=request.max_tool_rounds,
        tool_timeout=request.tool_timeout,
        on_text=host.on_text if on_partial is not None else None,
    )
    turn = TurnResult()
    transient: list[bool] = []
    marked = _transient_failures.set(transient)
    try:
        async for _ in run_turn(host, options, turn):
            pass
    except ModelError as exc:
        exc.messages = host.messages.copy()
        raise
    finally:
        _transient_failures.reset(marked)
    result = GenerateTextResult(
        text=turn.text or "",
        messages=host.messages,
        new_messages=list(turn.new_messages),
        steps=host.steps,
        usage=turn.usage,
        request_hash=key,
        stop_reason=turn.stop_reason,
        conversation_id=host.conversation_id,
    )
    if cache is not None and not transient and turn.stop_reason != "awaiting":
        entry = result_to_cache(result, input_count)
        if entry is not None:
            cache.cache_put(cache_key(key), entry)
    return result
