"""One turn at a time on a conversation: its `TurnLock` (the in-process gate and the store's writer lease) and the
`TurnHold` that ``conversation.hold()``, `Conversation.acquire`, a running turn and `Conversation.add` enter.

The gate itself (free, armed, busy; waiters served in order) is `threadline.conversation._gate`; this module adds
what a conversation needs around it: the store's lease taken while the gate is held (so writers of other processes and
other `Conversation` objects stay out), the conversation's ``busy_timeout``, the catch-up with what other writers
stored while the lease was elsewhere, and the release of a lease whose conversation was dropped while it held it.

A lock reaches its conversation only through `LockOwner` (its id, store and config) and the ``on_lease`` callback
the conversation hands to each hold.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .._numbers import finite_problem
from .._sync import in_event_loop
from ..engine._tool_scope import refuse_own_tool
from ..errors import ConversationBusy, UserError
from ._gate import GateState, Lease, TurnGate, wait_for_lease, wait_for_lease_async

if TYPE_CHECKING:
    from ..store.capabilities import ConversationStore
    from .config import ConversationConfig

__all__ = ["LockOwner", "TurnHold", "TurnLock"]

MaxWait = float | EllipsisType | None
"""Seconds to wait for another turn: ``...`` means the conversation's ``config.busy_timeout``; None, no limit."""


class LockOwner(Protocol):
    """What a `TurnLock` reads of the conversation it guards; a `ConversationHost` is one."""

    @property
    def id(self) -> str: ...

    @property
    def store(self) -> ConversationStore | None: ...

    @property
    def config(self) -> ConversationConfig: ...


T = TypeVar("T")


class TurnLock:
    """The turn lock of one conversation (see the module docstring). The conversation makes one and keeps it."""

    __slots__ = ("_finalizer", "gate")

    def __init__(self) -> None:
        self.gate = TurnGate()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def enter_sync(
        self,
        owner: LockOwner,
        max_wait: MaxWait,
        on_wait: Callable[[], Any] | None,
        on_lease: Callable[[], None],
    ) -> GateState:
        """Hold the gate (and the store's lease) from synchronous code; returns the gate's previous state.

        Args:
            owner: The conversation.
            max_wait: See `MaxWait`.
            on_wait: Called once, before waiting, when someone else holds the conversation.
            on_lease: Called after a fresh lease was taken (the conversation reads what others stored meanwhile).

        Raises:
            ConversationBusy: when the wait ran out, or this runs inside an event loop and would have to wait, or
                inside a tool of the conversation's own running turn (which waits for that tool).
        """
        refuse_own_tool(owner)
        gate = self.gate
        seconds = _seconds(owner, max_wait)
        what = f"conversation {owner.id}"
        previous = gate.try_claim()
        if previous is None:
            if in_event_loop():
                raise ConversationBusy(
                    f"{what} is running a turn; a synchronous call inside an event loop cannot wait "
                    "for it (await the turn, or use prompt_async()/acquire_async(), which wait)"
                )
            previous = gate.claim(seconds, what, on_wait)
            on_wait = None  # said once
        try:
            store = owner.store
            if store is not None and gate.lease is None:
                key = owner.id
                lease: Lease | None
                if in_event_loop():
                    lease = store.try_lease(key)
                    if lease is None:
                        raise ConversationBusy(
                            f"{what} is held by another writer; a synchronous call inside an event loop cannot wait "
                            "for it (use acquire_async() or prompt_async(), which wait)"
                        )
                else:
                    lease = wait_for_lease(lambda: store.try_lease(key), what, seconds, on_wait)
                self._adopt(owner, lease, on_lease)
        except BaseException:
            self.leave(keep_reserved=previous == "armed")
            raise
        return previous

    async def enter_async(
        self,
        owner: LockOwner,
        max_wait: MaxWait,
        on_wait: Callable[[], Any] | None,
        on_lease: Callable[[], None],
    ) -> GateState:
        """`enter_sync` for async code: waits without blocking the event loop."""
        refuse_own_tool(owner)
        gate = self.gate
        seconds = _seconds(owner, max_wait)
        what = f"conversation {owner.id}"
        previous = await gate.claim_async(seconds, what, on_wait)
        try:
            store = owner.store
            if store is not None and gate.lease is None:
                key = owner.id
                said = previous == "busy"  # handed over by a turn this caller waited for: it was told already
                lease = await wait_for_lease_async(
                    lambda: store.try_lease(key), what, seconds, None if said else on_wait
                )
                self._adopt(owner, lease, on_lease)
        except BaseException:
            self.leave(keep_reserved=previous == "armed")
            raise
        return previous

    def leave(self, *, keep_reserved: bool) -> None:
        """Stop holding the gate: keep it reserved for the conversation's next turn, or free it (handing it to the
        next waiter, or releasing the lease when nobody waits)."""
        self.gate.release("armed" if keep_reserved else "free")

    def release_reservation(self) -> None:
        """Give up a reservation whose turn will not run (nothing happens while a turn holds the gate)."""
        gate = self.gate
        if gate.state == "armed" and gate.try_claim() is not None:
            gate.release("free")

    def _adopt(self, owner: LockOwner, lease: Lease, on_lease: Callable[[], None]) -> None:
        """Keep a fresh lease with the gate, then let the conversation catch up with what others stored."""
        gate = self.gate
        gate.lease = lease
        if self._finalizer is None:
            # A conversation dropped while it holds a lease (armed, never run) must not keep other writers out.
            self._finalizer = weakref.finalize(owner, _drop_lease, gate)
        on_lease()


def _seconds(owner: LockOwner, max_wait: MaxWait) -> float | None:
    if isinstance(max_wait, EllipsisType):
        return owner.config.busy_timeout
    problem = finite_problem(max_wait)
    if problem is not None:  # NaN seconds is no wait at all, and infinity overflows the clock: None waits forever
        raise UserError(f"max_wait {problem} (None waits as long as it takes)")
    return max_wait


def _drop_lease(gate: TurnGate) -> None:
    """Release the lease of a conversation that was dropped while holding it (armed, never run)."""
    lease, gate.lease = gate.lease, None
    if lease is not None:
        lease.release()


class TurnHold(Generic[T]):
    """What `Conversation.hold` returns: a context manager for ``with`` (synchronous code) and ``async with``; both
    give the conversation.

    Args:
        target: What the block is given (the user's `Conversation`).
        owner: The lock's owner (the conversation's host).
        lock: Its turn lock.
        on_lease: See `TurnLock.enter_sync`.
        max_wait: See `MaxWait`.
        on_wait: Called once, before waiting.
        reserve: Keep the conversation reserved for its next turn when the block ends without an error.
    """

    __slots__ = ("_lock", "_max_wait", "_on_lease", "_on_wait", "_owner", "_previous", "_reserve", "_target")

    def __init__(
        self,
        target: T,
        owner: LockOwner,
        lock: TurnLock,
        on_lease: Callable[[], None],
        max_wait: MaxWait,
        on_wait: Callable[[], Any] | None,
        reserve: bool,
    ) -> None:
        self._target = target
        self._owner = owner
        self._lock = lock
        self._on_lease = on_lease
        self._max_wait = max_wait
        self._on_wait = on_wait
        self._reserve = reserve
        self._previous: GateState = "free"

    def __enter__(self) -> T:
        self._previous = self._lock.enter_sync(self._owner, self._max_wait, self._on_wait, self._on_lease)
        return self._target

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._leave(failed=exc_type is not None)

    async def __aenter__(self) -> T:
        self._previous = await self._lock.enter_async(self._owner, self._max_wait, self._on_wait, self._on_lease)
        return self._target

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        self._leave(failed=exc_type is not None)

    def _leave(self, failed: bool) -> None:
        # Reserved for the next turn: a reservation that succeeded, or one that was there before a block that failed.
        self._lock.leave(keep_reserved=self._reserve and (not failed or self._previous == "armed"))
