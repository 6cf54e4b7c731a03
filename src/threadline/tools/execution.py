"""Execution: one tool call run to a `ToolMessage`, whatever happens (invalid arguments, unknown tools,
exceptions, timeouts, values JSON cannot hold); sync tools on daemon worker threads of our own."""

from __future__ import annotations

import inspect
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .._exception_text import describe_exception, type_name
from .._json_values import TOO_DEEP, arguments_text_problem
from .._masking import environment_secrets, mask_secrets
from .._text import replace_surrogates_in
from ..errors import ApprovalRequired
from ..message_types import ToolCall, ToolMessage
from .approvals import call_approved
from .reading import ReadingStopped, holds_iterator, read_async_generator, read_iterators
from .tool import Tool, ToolArgumentsError

if TYPE_CHECKING:
    import asyncio

    from ._workers import Outcome

__all__ = ["CANCEL_GRACE", "describe_exception", "encode_result", "execute_tool_call"]


def encode_result(value: Any) -> str:
    """A tool's return value as sent to the model: a ``str`` as is, anything else as JSON.

    The JSON is always valid: ``nan`` and infinities, which JSON cannot express, become the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` (a model reads those; a strict JSON parser refuses bare ``NaN``); and lone
    surrogates anywhere in it (``{"files": os.listdir(path)}`` with a name that is not UTF-8) become U+FFFD, the
    log's rule for text, as they do in a returned ``str``. ``bytes`` are sent as their text when they are UTF-8;
    otherwise (an image, a compressed file) as ``"base64:"`` followed by their base64, a result the model can read
    and pass on, not an error.
    """
    if isinstance(value, str):
        return value
    import pydantic_core

    try:
        data = pydantic_core.to_json(value, fallback=repr)
    except pydantic_core.PydanticSerializationError:
        # Most likely a lone surrogate, which UTF-8 cannot hold: the plain-Python form keeps it as text, where the
        # log's rule replaces it; or bytes that are not UTF-8, which become marked base64. Anything else fails
        # again here and is reported by the caller.
        value = _binary_as_text(value)
        try:
            plain = pydantic_core.to_jsonable_python(replace_surrogates_in(value), fallback=repr)  # keys, too
        except (pydantic_core.PydanticSerializationError, UnicodeDecodeError):
            # Binary bytes inside a model or a dataclass, which the walk above does not enter: all bytes as base64.
            plain = pydantic_core.to_jsonable_python(value, fallback=repr, bytes_mode="base64")
        data = pydantic_core.to_json(replace_surrogates_in(plain))
    if b"NaN" in data or b"Infinity" in data:
        # Only then (the words may also be inside strings): pydantic writes the bare constants, even under
        # inf_nan_mode="strings" for a model configured otherwise, so read its output back and spell them out.
        data = pydantic_core.to_json(_finite(pydantic_core.from_json(data, allow_inf_nan=True)))
    return data.decode("utf-8")


_BINARY_MARK = "base64:"


def _binary_as_text(value: Any) -> Any:
    """``value`` with every ``bytes`` in it (in dicts, lists, tuples, sets, dataclasses and pydantic models, keys
    too) that is not UTF-8 replaced by ``"base64:"`` and its base64; UTF-8 bytes become their text, as pydantic
    writes them."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            return _BINARY_MARK + base64.b64encode(data).decode("ascii")
    if isinstance(value, dict):
        return {_binary_as_text(key): _binary_as_text(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_binary_as_text(item) for item in value]
    if isinstance(value, type):
        return value
    import dataclasses

    if dataclasses.is_dataclass(value):  # as pydantic writes one: its fields, by name
        return {field.name: _binary_as_text(getattr(value, field.name)) for field in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "__pydantic_serializer__"):  # a pydantic model
        return _binary_as_text(dump())
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


# How long a cancelled async tool may take to stop before the turn stops waiting for it.
CANCEL_GRACE = 2.0
# Async tools that ignored their cancellation: kept referenced until they end, so asyncio does not destroy them
# while they are pending (and complain about it).
_abandoned: set[asyncio.Task[None]] = set()


class _Unfinished(Exception):
    """A tool did not finish within its timeout; ``stopped`` says whether it is known to have stopped."""

    def __init__(self, stopped: bool) -> None:
        super().__init__()
        self.stopped = stopped


async def execute_tool_call(
    call: ToolCall,
    tools: Mapping[str, Tool],
    default_timeout: float | None,
    *,
    on_error: Callable[[str], Any] | None = None,
) -> ToolMessage:
    """Run one tool call and return its result message; every failure becomes an ``is_error`` result.

    Invalid arguments, unknown tools, any exception the tool raises (``SystemExit`` and other `BaseException`s
    included) and timeouts are results the model reads. Two things stop the turn instead: cancellation (of the
    turn, e.g. Ctrl-C) and ``KeyboardInterrupt``; the call is then left unanswered and answered ``interrupted``
    when the conversation next runs.

    A sync tool runs on a daemon worker thread, and so does the reading of its result (a generator's body, an
    iterator inside the value) and its encoding: past its timeout the turn goes on without it, and the result says
    it may still be running (a thread cannot be stopped). The reading itself stops there, between two items, and
    closes the generator it stopped in; an iterator inside an async tool's result is read the same way. An async
    tool past its timeout is cancelled and given `CANCEL_GRACE` seconds to stop; one that ignores the cancellation
    is left running. An async generator is read on the event loop, which gets a turn every few milliseconds even
    when the generator never suspends, so its timeout stops it too.

    A tool that raises `ApprovalRequired` makes its call wait: that is raised on to the engine, which records the
    wait (unless the call was approved already: then its result is an error that says so).

    ``on_error``, when given, is called with a short name of what went wrong when the result is an error (for
    tracing's ``error.type``): the class name of the exception the tool raised, ``"timeout"``,
    ``"invalid_arguments"``, ``"unknown_tool"`` or ``"unencodable_result"``.
    """
    started = time.perf_counter()
    tool_ = tools.get(call.name)
    is_error = True
    kind = "invalid_arguments"
    if tool_ is None:
        available = ", ".join(sorted(tools)) or "none"
        content = f"Unknown tool {call.name!r}. Available tools: {available}."
        kind = "unknown_tool"
    elif call.raw_arguments is not None:
        problem = arguments_text_problem(call.raw_arguments)
        fix = "a flatter JSON object" if problem == TOO_DEEP else "a JSON object"
        content = (
            f"Invalid arguments for tool {call.name!r}: {problem} ({_preview(call.raw_arguments)}). "
            f"Call it again with {fix}."
        )
    else:
        try:
            kwargs = tool_.validate(call.arguments)
        except ToolArgumentsError as exc:
            content = f"Invalid arguments for tool {call.name!r}: {exc}"
        else:
            timeout = tool_.timeout if tool_.timeout is not None else default_timeout
            try:
                if tool_.is_async:
                    outcome = await _run_async(tool_.handler, kwargs, timeout)
                else:
                    outcome = await _run_sync(_call_to_end, (tool_.handler, kwargs), timeout)
                    if outcome.ok and _is_async_value(outcome.value):
                        # An async function behind a plain decorator, or an async generator: what it gave is
                        # awaited (or read to its end) on the loop, in the time left.
                        outcome = await _run_async(_finish, {"value": outcome.value}, _left(timeout, started))
                if outcome.ok and not isinstance(outcome.value, _Encoded) and holds_iterator(outcome.value):
                    # What an async tool gave holds an iterator (a generator, a file, map(...)): its body must not
                    # run on the event loop, so it is read and encoded on a worker, in the time left.
                    outcome = await _run_sync(_read_to_end, (outcome.value,), _left(timeout, started))
            except _Unfinished as unfinished:
                kind = "timeout"
                if unfinished.stopped:
                    content = f"Tool {call.name!r} timed out after {timeout:g} s and was stopped."
                else:
                    content = f"Tool {call.name!r} did not finish in {timeout:g} s; it may still be running."
            else:
                if not outcome.ok:
                    if isinstance(outcome.value, KeyboardInterrupt):
                        raise outcome.value
                    if isinstance(outcome.value, ApprovalRequired) and not call_approved():
                        raise outcome.value.with_traceback(None)
                    if isinstance(outcome.value, ApprovalRequired):
                        content = (
                            f"Tool {call.name!r} asked for approval again after its call was approved (a tool that "
                            "raises ApprovalRequired checks threadline.tools.call_approved() first)"
                        )
                        kind = "approval_required"
                    else:
                        # The exception's text may quote a credential (a URL with its key, a header): masked, as in
                        # every error threadline shows, before it reaches the log, the screen and the model.
                        why = mask_secrets(describe_exception(outcome.value), environment_secrets())
                        content = f"Tool {call.name!r} failed: {why}"
                        kind = type_name(outcome.value)
                else:
                    encoded = outcome.value if isinstance(outcome.value, _Encoded) else _encode(outcome.value)
                    if encoded.error is None:
                        content = encoded.content
                        is_error = False
                    else:
                        why = mask_secrets(describe_exception(encoded.error), environment_secrets())
                        content = f"Tool {call.name!r} returned a value that cannot be encoded: {why}"
                        kind = "unencodable_result"
    if is_error and on_error is not None:
        on_error(kind)
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=content,
        is_error=is_error,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )


class _Encoded(NamedTuple):
    """A result already encoded for the model (``content``), or the exception that encoding it raised."""

    content: str
    error: BaseException | None


def _encode(value: Any) -> _Encoded:
    try:
        return _Encoded(encode_result(value), None)
    except BaseException as exc:
        # Encoding runs the value's own code (the repr of what JSON cannot hold): whatever that raises, SystemExit
        # and KeyboardInterrupt included, says only that this value cannot be encoded.
        return _Encoded("", exc)


def _call_to_end(handler: Callable[..., Any], kwargs: Mapping[str, Any], stop: threading.Event) -> Any:
    """On the worker thread: call a sync handler and, unless it gave something to await, encode its result there.

    Encoding reads the whole value: a generator (or any iterator inside the value) runs its body then. Done here,
    that body runs on the worker, under the tool's timeout, instead of on the event loop with no limit; and an
    exception raised by a generator's body is the tool's failure, not an encoding problem. The reading stops once
    ``stop`` is set (see `read_iterators`).
    """
    value = handler(**kwargs)
    if _is_async_value(value):
        return value  # awaited (or read to its end) on the loop by the caller
    return _read_to_end(value, stop)


def _read_to_end(value: Any, stop: threading.Event) -> _Encoded:
    """On the worker thread: every iterator in ``value`` read (until ``stop`` is set), then the value encoded."""
    try:
        if holds_iterator(value):
            value = read_iterators(value, stop)
    except ReadingStopped as stopped:
        # Nobody waits for this any more. Returned rather than raised: a raised exception would keep the items
        # read so far (its traceback holds them) until the garbage collector finds them.
        return _Encoded("", stopped.with_traceback(None))
    return _encode(value)


async def _run_sync(work: Callable[..., Any], args: tuple[Any, ...], limit: float | None) -> Outcome:
    """The `Outcome` of ``work(*args, stop)`` run on a worker thread; raises `_Unfinished` when the timeout passes.

    ``stop`` is a `threading.Event` set once nobody waits for the outcome any more (the timeout passed, or the turn
    was cancelled): the reading of a result checks it between items, so it ends there instead of running on.
    """
    import asyncio  # imported on first use: see threadline._sync

    from ._workers import start

    stop = threading.Event()
    future = start(work, *args, stop)
    # Awaiting the future itself under asyncio.timeout costs no extra task: the deadline cancels the future (the
    # thread's late outcome is then dropped), and expired() tells our deadline apart from anything else.
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await future
    except TimeoutError:
        if deadline.expired():
            raise _Unfinished(stopped=False) from None
        raise
    finally:
        if not future.done() or future.cancelled():
            stop.set()  # nobody reads the outcome: stop reading the result (the handler itself cannot be stopped)


def _left(timeout: float | None, started: float) -> float | None:
    """What is left of a tool's ``timeout`` since ``started`` (a `time.perf_counter` reading)."""
    return None if timeout is None else max(0.0, timeout - (time.perf_counter() - started))


async def _run_async(handler: Callable[..., Any], kwargs: Mapping[str, Any], limit: float | None) -> Outcome:
    """The `Outcome` of an async handler run as its own task, so a handler that ignores cancellation can be left
    behind; raises `_Unfinished` when the timeout passes."""
    import asyncio

    loop = asyncio.get_running_loop()
    # The task hands its outcome over through ``done``, a plain future: awaiting the task itself would pass our
    # cancellation on to it and then wait for as long as it ignores that; and setting ``done`` from inside the
    # task wakes us one loop iteration sooner than a done-callback would (a tool round's cost is counted in those).
    done: asyncio.Future[Outcome] = loop.create_future()
    task = loop.create_task(_outcome(handler, kwargs, done))
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await done
    except TimeoutError:
        if deadline.expired():
            raise _Unfinished(stopped=await _stop(task, min(CANCEL_GRACE, limit or CANCEL_GRACE))) from None
        raise
    except asyncio.CancelledError:  # the turn is cancelled: stop the tool too (within the grace), then go
        await _stop(task, CANCEL_GRACE)
        raise


async def _outcome(handler: Callable[..., Any], kwargs: Mapping[str, Any], done: asyncio.Future[Outcome]) -> None:
    """Await the handler and put its `Outcome` in ``done``. Its exceptions are outcomes too (a task that raised
    ``SystemExit`` would take the event loop down with it), except the cancellation of this task."""
    import asyncio

    from ._workers import Outcome

    try:
        outcome = Outcome(True, await handler(**kwargs))
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        outcome = Outcome(False, exc)  # raised by the tool itself (something it awaited was cancelled)
    except BaseException as exc:  # every outcome goes back to execute_tool_call, which decides what it means
        outcome = Outcome(False, exc)
    if not done.done():  # nobody waits any more after a timeout or a cancelled turn
        done.set_result(outcome)


async def _stop(task: asyncio.Task[None], grace: float) -> bool:
    """Cancel the tool's task and wait up to ``grace`` seconds for it to end; True if it did."""
    import asyncio

    task.cancel()
    await asyncio.wait((task,), timeout=grace)
    if task.done():
        return True
    _abandoned.add(task)
    task.add_done_callback(_abandoned.discard)
    return False


def _is_async_value(value: Any) -> bool:
    return inspect.isawaitable(value) or inspect.isasyncgen(value)


async def _finish(value: Any) -> Any:
    """The result of an awaitable, or the items of an async generator as a list (as a sync generator's are sent)."""
    if inspect.isasyncgen(value):
        return await read_async_generator(value)
    return await value


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
