"""The deadline of one attempt of an HTTP model call: ``timeout`` seconds from the request to the answer's last byte.

httpx's own timeouts bound each wait for bytes, so a server that trickles its answer a byte at a time is never timed
out by them. `AttemptDeadline` bounds the attempt as a whole. The attempt runs in its caller's task, and hands the
caller what it read at each ``yield``: the transport `pause`s the deadline before each one and `resume`s it after.
When the deadline passes while the attempt runs (waiting for the server: the request, a read of the body or the
stream), the task is cancelled, as ``asyncio.timeout`` would, so the wait ends at once; the transport's handler sees
the cancellation (`seen`) and raises the attempt's timeout error in its place. When it passes while paused, nothing
is cancelled and `resume` raises the error. So the cancellation never lands in the caller's code.

The deadlines of one event loop share one timer (`_Watch`), set for the earliest of them: an attempt only enters
and leaves a table. A timer of its own for every attempt (``loop.call_at`` and its cancellation, as
``asyncio.timeout`` does) cost several percent of a tool round against a server on loopback.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from ...errors import ModelError

__all__ = ["AttemptDeadline"]


class AttemptDeadline:
    """One attempt's deadline, armed from now until ``ends`` (event loop time) in the running task.

    Args:
        ends: When the attempt must have finished, in ``loop.time()``.
        overdue: Makes the error raised once it has passed.
    """

    __slots__ = ("__weakref__", "_cancelled", "_others", "_overdue", "_running", "_watch", "ends", "expired")

    def __init__(self, ends: float, overdue: Callable[[], ModelError]) -> None:
        self.ends = ends
        self.expired = False
        self._overdue = overdue
        self._running: asyncio.Task[Any] | None = None  # the task the attempt runs in, unless paused
        self._others = 0  # cancellations of that task by others when it resumed
        self._cancelled: asyncio.Task[Any] | None = None  # the task this deadline cancelled, until it was seen
        self.resume()
        self._watch = _watch_of(asyncio.get_running_loop())
        self._watch.add(self)

    def expire(self) -> None:
        """The deadline has passed (called by the loop's `_Watch`)."""
        self.expired = True
        task = self._running
        if task is not None:
            self._cancelled = task
            task.cancel()

    def pause(self) -> None:
        """Before the attempt hands its caller something: the deadline cancels nothing until `resume`."""
        self._running = None

    def resume(self) -> None:
        """When the caller hands control back to the attempt.

        Raises:
            ModelError: the attempt's timeout error, when the deadline passed meanwhile.
        """
        if self.expired:
            raise self._overdue()
        task = asyncio.current_task()
        assert task is not None
        self._running = task
        self._others = task.cancelling()

    def seen(self) -> None:
        """In the handler of whatever ended the attempt: when this deadline's cancellation is why (whatever the code
        below made of it: a cancellation, or httpx's timeout error when its own read timeout fell due at the same
        moment), raise the timeout error in its place, unless someone else cancelled the task too (that cancellation
        then goes on, as ``asyncio.timeout`` lets it).

        Raises:
            ModelError: the attempt's timeout error.
        """
        task, self._cancelled = self._cancelled, None
        if task is not None and task.uncancel() <= self._others:
            raise self._overdue() from None

    def close(self) -> None:
        """Disarm the deadline (the attempt is over)."""
        self._watch.discard(self)
        self._running = None
        task, self._cancelled = self._cancelled, None
        if task is not None:
            task.uncancel()  # its cancellation was swallowed below and the attempt finished: nothing is pending


class _Watch:
    """The deadlines of the attempts running on one event loop, and the one timer set for the earliest of them.

    The timer is moved earlier when an attempt with an earlier deadline starts, and left where it is when attempts
    end: when it fires, the attempts past their deadline expire and it is set again for the earliest left.
    """

    __slots__ = ("_timer", "attempts")

    def __init__(self) -> None:
        # No reference to the loop: the table of watches is keyed by it weakly, and must not keep it alive.
        self._timer: asyncio.TimerHandle | None = None
        self.attempts: dict[AttemptDeadline, None] = {}  # an ordered set

    def add(self, deadline: AttemptDeadline) -> None:
        self.attempts[deadline] = None
        timer = self._timer
        if timer is None or deadline.ends < timer.when():
            if timer is not None:
                timer.cancel()
            self._timer = asyncio.get_running_loop().call_at(deadline.ends, self._fire)

    def discard(self, deadline: AttemptDeadline) -> None:
        self.attempts.pop(deadline, None)

    def _fire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        for deadline in [deadline for deadline in self.attempts if deadline.ends <= now]:
            del self.attempts[deadline]
            deadline.expire()
        if self.attempts:
            self._timer = loop.call_at(min(deadline.ends for deadline in self.attempts), self._fire)


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch] = weakref.WeakKeyDictionary()
# The loop asked for last, and its watch: nearly every attempt asks for the same loop as the one before (a weak
# reference, so a closed loop is not kept alive).
_last: tuple[weakref.ReferenceType[asyncio.AbstractEventLoop], _Watch] | None = None


def _watch_of(loop: asyncio.AbstractEventLoop) -> _Watch:
    global _last
    last = _last  # one read: threads with loops of their own replace it
    if last is not None and last[0]() is loop:
        return last[1]
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = _Watch()
    _last = (weakref.ref(loop), watch)
    return watch
