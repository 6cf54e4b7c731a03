"""One turn at a time per conversation: the in-process gate, and the wait for a store's writer lease.

A `TurnGate` belongs to one `Conversation` object and works across threads and event loops. It is in one of three
states:

- ``free``: nothing holds it;
- ``busy``: one caller holds it (a running turn, or messages being added); others wait their turn, first come first
  served, and the gate is handed straight to the next waiter when the holder is done;
- ``armed``: reserved for the conversation's next turn (``prompt_conversation`` applied its messages and armed a
  turn); any caller of this process may claim it at once — the next turn or more messages — but a second turn cannot
  start while one runs.

While the gate is not free it may also hold the store's lease on the conversation (see `Store.try_lease`), which
keeps writers of other processes and other `Conversation` objects out; it is released when the gate becomes free.
The wait for a lease held elsewhere polls, because a lease held by another process can only be noticed by trying.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import ConversationBusy

if TYPE_CHECKING:
    import asyncio

__all__ = ["GateState", "Lease", "TurnGate", "wait_for_lease", "wait_for_lease_async"]

GateState = Literal["free", "armed", "busy"]
# How often a writer tries again for a lease another process holds: soon at first, then every quarter second.
FIRST_POLL = 0.02
MAX_POLL = 0.25


class Lease(Protocol):
    """A held writer lease (see `Store.try_lease`)."""

    def release(self) -> None:
        """Give the lease up (idempotent)."""
        ...


class _Waiter:
    __slots__ = ("event", "future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop | None, future: asyncio.Future[None] | None) -> None:
        self.loop = loop
        self.future = future
        self.event = threading.Event() if loop is None else None
        self.granted = False

    def wake(self) -> bool:
        """Tell the waiter it holds the gate now; False if it can no longer hear it (its event loop is closed)."""
        if self.event is not None:
            self.event.set()
            return True
        assert self.loop is not None and self.future is not None
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            return False
        return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class TurnGate:
    """The in-process gate of one conversation (see the module docstring).

    Attributes:
        lease: The store lease held while the gate is not free (set by the holder; released with the gate).
    """

    __slots__ = ("_lock", "_state", "_waiters", "lease")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: GateState = "free"
        self._waiters: deque[_Waiter] = deque()
        self.lease: Lease | None = None

    @property
    def state(self) -> GateState:
        """``"free"``, ``"armed"`` or ``"busy"``."""
        return self._state

    def try_claim(self) -> GateState | None:
        """Hold the gate if no one else does; returns the state it was in (``free`` or ``armed``), or None."""
        with self._lock:
            previous = self._state
            if previous == "busy":
                return None
            self._state = "busy"
            return previous

    def claim(self, max_wait: float | None, what: str, on_wait: Callable[[], Any] | None = None) -> GateState:
        """Hold the gate, waiting in this thread (outside any event loop) for the holder to finish (``on_wait`` is
        called first when it must wait).

        Returns:
            The state it was in: ``free``, ``armed``, or ``busy`` when it was handed over by a finishing holder.

        Raises:
            ConversationBusy: after ``max_wait`` seconds.
        """
        with self._lock:
            previous = self._state
            if previous != "busy":
                self._state = "busy"
                return previous
            waiter = _Waiter(None, None)
            self._waiters.append(waiter)
        if on_wait is not None:
            on_wait()
        assert waiter.event is not None
        waiter.event.wait(max_wait)
        with self._lock:
            if waiter.granted:
                return "busy"
            self._waiters.remove(waiter)
        raise ConversationBusy(f"{what} waited {max_wait:g} s for the turn running on it; it is still running")

    async def claim_async(
        self, max_wait: float | None, what: str, on_wait: Callable[[], Any] | None = None
    ) -> GateState:
        """`claim` for async code: the event loop keeps running while this waits."""
        with self._lock:  # the usual case, first: nobody holds it
            previous = self._state
            if previous != "busy":
                self._state = "busy"
                return previous
        import asyncio  # already loaded here (a coroutine is running); not imported with the package

        loop = asyncio.get_running_loop()
        with self._lock:
            previous = self._state
            if previous != "busy":
                self._state = "busy"
                return previous
            waiter = _Waiter(loop, loop.create_future())
            self._waiters.append(waiter)
        if on_wait is not None:
            on_wait()
        assert waiter.future is not None
        try:
            async with asyncio.timeout(max_wait):
                await waiter.future
        except BaseException as exc:
            with self._lock:
                if not waiter.granted:
                    self._waiters.remove(waiter)
                    if isinstance(exc, TimeoutError):
                        raise ConversationBusy(
                            f"{what} waited {max_wait:g} s for the turn running on it; it is still running"
                        ) from None
                    raise
                if isinstance(exc, TimeoutError):
                    return "busy"  # it was handed over just as the time ran out
            self.release("free")  # handed over, but this caller is gone: pass it on
            raise
        return "busy"

    def release(self, to: Literal["free", "armed"]) -> None:
        """Stop holding the gate: arm it for the conversation's next turn, or hand it to the next waiter (free
        when there is none; the lease is released then, before anyone else can claim the gate)."""
        with self._lock:
            if to == "armed":
                self._state = "armed"
                return
            while self._waiters:
                waiter = self._waiters.popleft()
                waiter.granted = True
                if waiter.wake():
                    return  # still busy: the next holder runs under the same lease
            lease, self.lease = self.lease, None
            self._state = "free"
            if lease is not None:
                lease.release()


def _busy(what: str, max_wait: float | None) -> ConversationBusy:
    return ConversationBusy(
        f"{what} is held by another writer (a turn in another process, or another Conversation object on the same "
        "store, one reserved by prompt_conversation() for a turn not run yet included: run it or call release()); "
        f"waited {max_wait or 0:g} s"
    )


def wait_for_lease(
    try_lease: Callable[[], Lease | None],
    what: str,
    max_wait: float | None,
    on_wait: Callable[[], Any] | None = None,
) -> Lease:
    """Take a lease, trying again until ``max_wait`` seconds have passed (None: as long as it takes).

    Args:
        try_lease: Takes the lease, or returns None if someone else holds it.
        what: The conversation, as error messages name it.
        max_wait: Seconds to keep trying; 0 tries once.
        on_wait: Called once, when the first try fails (e.g. to show "waiting for another turn…").

    Raises:
        ConversationBusy: when the time is up.
    """
    lease = try_lease()
    if lease is None:
        for pause in _pauses(what, max_wait, on_wait):
            time.sleep(pause)
            lease = try_lease()
            if lease is not None:
                break
    assert lease is not None  # _pauses raises when the time is up
    return lease


async def wait_for_lease_async(
    try_lease: Callable[[], Lease | None],
    what: str,
    max_wait: float | None,
    on_wait: Callable[[], Any] | None = None,
) -> Lease:
    """`wait_for_lease` for async code: the event loop keeps running between tries."""
    import asyncio  # already loaded here (a coroutine is running); not imported with the package

    lease = try_lease()
    if lease is None:
        for pause in _pauses(what, max_wait, on_wait):
            await asyncio.sleep(pause)
            lease = try_lease()
            if lease is not None:
                break
    assert lease is not None  # _pauses raises when the time is up
    return lease


def _pauses(what: str, max_wait: float | None, on_wait: Callable[[], Any] | None) -> Iterator[float]:
    """The pauses between tries of a lease after the first failed: growing from `FIRST_POLL` to `MAX_POLL`, never
    past ``max_wait``; then `ConversationBusy`. ``on_wait`` is called before the first."""
    if on_wait is not None:
        on_wait()
    deadline = None if max_wait is None else time.monotonic() + max_wait
    delay = FIRST_POLL
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            raise _busy(what, max_wait)
        yield delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic()))
        delay = min(delay * 1.5, MAX_POLL)
