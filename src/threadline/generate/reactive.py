"""Reactive generation: a `Cell` of inputs drives ``generate_text``; the result is another `Cell`.

    inputs = Cell({"messages": [user("Go")]})
    state = reactive_generate_text(inputs, model="openai:gpt-4o-mini", system="…", tools=[present_result])
    state.subscribe(lambda s: print(s.pending, s.partial, s.result))
    inputs.set({"messages": [*state.get().messages, user("And now?")]})   # continue: a new hash, a new run

``inputs`` holds a dict of ``generate_text`` keyword arguments; they are merged over the fixed ones given to
`reactive_generate_text` (the cell wins). The rules (docs/architecture.md#generate_text-and-reactivity):

- it starts by itself, at once;
- a change of ``inputs`` starts a run only when the `request_hash` changes (setting equal inputs does nothing);
- a run superseded by newer inputs is cancelled (its model call too), and nothing it would still write is written;
- reading or writing the result cell never starts a run: only ``inputs`` is watched;
- ``partial`` follows the streamed answer, at most one update per ``partial_interval`` seconds (50 ms by default);
- a failure lands in ``error`` (with the log up to it in ``messages``) and ``pending`` becomes False; so does a
  cancellation that no newer input caused (``error`` is then the `asyncio.CancelledError`): a run always lands;
- every change is a new, immutable `GenerateTextState`, so a subscriber can compare the old state with the new.

Everything happens on the event loop that was running when `reactive_generate_text` was called; set ``inputs`` from
that loop's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import UserError

if TYPE_CHECKING:
    import asyncio

    from ..message_list import MessageList
    from .result import GenerateTextResult

__all__ = ["Cell", "GenerateTextState", "GenerationCell", "reactive_generate_text"]

T = TypeVar("T")


class Cell(Generic[T]):
    """A value that can be watched: `get`, `set`, `update`, `subscribe`.

    Subscribers are called with the new value, in the order they subscribed, each time the cell is set to an object
    that is not the one it holds.
    """

    __slots__ = ("_lock", "_subscribers", "_value")

    def __init__(self, value: T) -> None:
        self._value = value
        self._subscribers: list[Callable[[T], Any]] = []
        self._lock = threading.Lock()

    def get(self) -> T:
        """The current value."""
        return self._value

    def set(self, value: T) -> None:
        """Replace the value and tell the subscribers (not when it is the very same object)."""
        if value is self._value:
            return
        self._value = value
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(value)

    def update(self, fn: Callable[[T], T]) -> None:
        """Set the value to ``fn(current value)``."""
        self.set(fn(self._value))

    def subscribe(self, callback: Callable[[T], Any]) -> Callable[[], None]:
        """Call ``callback(value)`` on every change; returns a function that unsubscribes."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def __repr__(self) -> str:
        return f"Cell({self._value!r})"


@dataclass(frozen=True, slots=True)
class GenerateTextState:
    """One state of a reactive generation (immutable: every change is a new object).

    Attributes:
        pending: A run is going on.
        result: The final answer of the latest finished run (None while pending or after a failure).
        error: The failure of the latest run (a `ModelError`, a `UserError` for inputs that cannot be sent, or the
            `asyncio.CancelledError` of a run cancelled by something other than newer inputs).
        partial: The answer so far while streaming; the final answer once done.
        request_hash: The hash of the inputs of the latest run.
        messages: The log of the latest finished or failed run (input + everything produced), to continue from.
        outcome: The whole `GenerateTextResult` of the latest finished run.
    """

    pending: bool = False
    result: str | None = None
    error: BaseException | None = None
    partial: str | None = None
    request_hash: str | None = None
    messages: MessageList | None = None
    outcome: GenerateTextResult | None = None


class GenerationCell(Cell[GenerateTextState]):
    """The result cell of `reactive_generate_text`: a `Cell` that can also be stopped and awaited."""

    __slots__ = ("_stop", "_wait")

    def __init__(self, value: GenerateTextState) -> None:
        super().__init__(value)
        self._stop: Callable[[], None] = lambda: None
        self._wait: Callable[[], Any] = lambda: None

    def stop(self) -> None:
        """Stop watching the inputs and cancel the run in progress (its late writes are dropped)."""
        self._stop()

    async def settled(self) -> GenerateTextState:
        """Wait until no run is in progress; returns that state."""
        await self._wait()
        return self.get()


def reactive_generate_text(
    inputs: Cell[dict[str, Any]], *, partial_interval: float = 0.05, **fixed: Any
) -> GenerationCell:
    """Run ``generate_text`` now and again whenever ``inputs`` changes its request; the states go to the returned
    cell. See the module docstring for the rules.

    Args:
        inputs: A cell holding a dict of ``generate_text`` keyword arguments (merged over ``fixed``).
        partial_interval: Seconds between two ``partial`` updates at most (0: every streamed piece).
        **fixed: ``generate_text`` keyword arguments that do not change (``model``, ``tools``, ``cache``…).

    Raises:
        UserError: when called with no running event loop (call it from async code), or ``inputs`` is not a Cell.
    """
    import asyncio

    if not isinstance(inputs, Cell):
        raise UserError(f"inputs must be a Cell holding a dict of generate_text arguments, got {type(inputs).__name__}")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise UserError("reactive_generate_text needs a running event loop: call it from async code") from None
    cell = GenerationCell(GenerateTextState())
    runner = _Runner(loop, inputs, fixed, cell, partial_interval)
    cell._stop = runner.stop
    cell._wait = runner.wait
    runner.unsubscribe = inputs.subscribe(runner.on_inputs)
    runner.on_inputs(inputs.get())
    return cell


class _Runner:
    """Starts, supersedes and reports the runs of one reactive generation."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        inputs: Cell[dict[str, Any]],
        fixed: dict[str, Any],
        cell: GenerationCell,
        interval: float,
    ) -> None:
        import asyncio

        self.loop = loop
        self.inputs = inputs
        self.fixed = fixed
        self.cell = cell
        self.interval = interval
        self.unsubscribe: Callable[[], None] = lambda: None
        self.hash: str | None = None
        self.generation = 0
        self.task: asyncio.Task[None] | None = None
        self.idle = asyncio.Event()
        self.idle.set()
        self.flush: asyncio.TimerHandle | None = None
        self.last_partial = float("-inf")
        self.latest_partial: str | None = None

    def on_inputs(self, value: dict[str, Any]) -> None:
        from .hashing import request_hash

        try:
            arguments = self.arguments(value)
            key = request_hash(**{k: v for k, v in arguments.items() if k not in _NOT_HASHED})
        except Exception as exc:
            self.supersede()
            self.hash = None
            self.cell.set(replace(self.cell.get(), pending=False, error=exc, request_hash=None))
            self.idle.set()
            return
        if key == self.hash:
            return  # the same request: nothing to do
        self.supersede()
        self.hash = key
        generation = self.generation
        self.cell.set(GenerateTextState(pending=True, request_hash=key))
        self.last_partial = float("-inf")  # a new run shows its first words at once
        self.idle.clear()
        self.task = self.loop.create_task(self.run(generation, arguments))

    def arguments(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise UserError(f"the inputs cell must hold a dict of generate_text arguments, got {type(value).__name__}")
        merged = dict(self.fixed)
        merged.update(value)
        merged.pop("on_partial", None)  # partial text goes to the state's ``partial``
        return merged

    def supersede(self) -> None:
        """Cancel the run in progress; whatever it would still write is dropped (its generation is over)."""
        self.generation += 1
        if self.flush is not None:
            self.flush.cancel()
            self.flush = None
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None

    async def run(self, generation: int, arguments: dict[str, Any]) -> None:
        import asyncio

        from ..errors import ModelError
        from . import generate_text

        def on_partial(text: str) -> None:
            self.partial(generation, text)

        try:
            outcome = await generate_text(**arguments, on_partial=on_partial)
        except asyncio.CancelledError as exc:
            # A superseded run (its generation is over) lands nothing. Any other cancellation, whoever raised it,
            # still lands a state, or the cell would stay pending and settled() would never return.
            if generation == self.generation:
                self.finish(replace(self.cell.get(), pending=False, error=exc))
            raise
        except Exception as exc:
            if generation == self.generation:
                messages = exc.messages if isinstance(exc, ModelError) else None
                self.finish(replace(self.cell.get(), pending=False, error=exc, messages=messages))
            return
        if generation == self.generation:
            self.finish(
                GenerateTextState(
                    pending=False,
                    result=outcome.text,
                    partial=outcome.text,
                    request_hash=outcome.request_hash,
                    messages=outcome.messages,
                    outcome=outcome,
                )
            )

    def finish(self, state: GenerateTextState) -> None:
        if self.flush is not None:
            self.flush.cancel()
            self.flush = None
        self.cell.set(state)
        self.idle.set()

    def partial(self, generation: int, text: str) -> None:
        """Batch partial updates: at most one per interval; the latest text wins."""
        if generation != self.generation:
            return
        self.latest_partial = text
        now = time.monotonic()
        wait = self.last_partial + self.interval - now
        if wait <= 0:
            self.write_partial(generation)
        elif self.flush is None:
            self.flush = self.loop.call_later(wait, self.write_partial, generation)

    def write_partial(self, generation: int) -> None:
        self.flush = None
        if generation != self.generation:
            return
        state = self.cell.get()
        if not state.pending or state.partial == self.latest_partial:
            return
        self.last_partial = time.monotonic()
        self.cell.set(replace(state, partial=self.latest_partial))

    def stop(self) -> None:
        self.unsubscribe()
        self.supersede()
        if self.cell.get().pending:
            self.cell.set(replace(self.cell.get(), pending=False))
        self.idle.set()

    async def wait(self) -> None:
        await self.idle.wait()


_NOT_HASHED = frozenset({"cache", "on_partial", "store", "conversation_id", "dedupe"})
