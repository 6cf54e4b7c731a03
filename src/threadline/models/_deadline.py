"""The deadline of one attempt of an HTTP model call: ``timeout`` seconds from the request to the answer's last byte.

httpx's own timeouts bound each wait for bytes, so a server that trickles its answer a byte at a time is never timed
out by them. `AttemptDeadline` bounds the attempt as a whole with one timer, armed once per attempt (a timer per
read, as ``asyncio.timeout`` around each read would be, costs several percent of a streamed tool round on
loopback). The attempt runs in its caller's task, and hands the caller what it read at each ``yield``: the
transport `pause`s the deadline before each one and `resume`s it after. When the timer fires while the attempt runs
(waiting for the server: the request, a read of the body or the stream), it cancels the task, as ``asyncio.timeout``
would, so the wait ends at once; the transport's handler sees the cancellation (`seen`) and raises the attempt's
timeout error in its place. When it fires while paused, nothing is cancelled and `resume` raises the error. So the
cancellation never lands in the caller's code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..errors import ModelError

__all__ = ["AttemptDeadline"]


class AttemptDeadline:
    """One attempt's deadline, armed from now until ``ends`` (event loop time) in the running task.

    Args:
        ends: When the attempt must have finished, in ``loop.time()``.
        overdue: Makes the error raised once it has passed.
    """

    __slots__ = ("_cancelled", "_handle", "_others", "_overdue", "_running", "expired")

    def __init__(self, ends: float, overdue: Callable[[], ModelError]) -> None:
        self.expired = False
        self._overdue = overdue
        self._running: asyncio.Task[Any] | None = None  # the task the attempt runs in, unless paused
        self._others = 0  # cancellations of that task by others when it resumed
        self._cancelled: asyncio.Task[Any] | None = None  # the task this deadline cancelled, until it was seen
        self.resume()
        self._handle = asyncio.get_running_loop().call_at(ends, self._expire)

    def _expire(self) -> None:
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
        self._handle.cancel()
        self._running = None
        task, self._cancelled = self._cancelled, None
        if task is not None:
            task.uncancel()  # its cancellation was swallowed below and the attempt finished: nothing is pending
