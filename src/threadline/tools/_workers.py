"""Daemon worker threads that run sync tools.

Not asyncio's default executor, for two reasons. Its threads are joined at interpreter exit, so one tool that hangs
past its timeout keeps the whole program alive until the tool returns (if ever). And it has a fixed number of
threads, which hung tools use up one by one until no sync tool can start. Here a job goes to an idle worker, or to
a new one when all are busy; workers are daemon threads, so a tool still running when the program ends does not
keep it alive; a worker idle for `IDLE_SECONDS` ends.

`start` hands back an asyncio future of the call's `Outcome`, so the caller can stop waiting (a timeout, a
cancelled turn) without waiting for the thread.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import asyncio

__all__ = ["IDLE_SECONDS", "Outcome", "start"]

IDLE_SECONDS = 30.0


class Outcome(NamedTuple):
    """How a call ended: ``ok`` with its return value, or not ``ok`` with the exception it raised (any
    `BaseException`, ``SystemExit`` and ``KeyboardInterrupt`` included: the caller decides what each means)."""

    ok: bool
    value: Any


class _Pool:
    """Idle workers wait on one queue. ``_idle`` counts waiting workers not yet promised a queued job, so a job is
    queued only when a worker is sure to take it, and a new thread is started otherwise."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return
            self._started += 1
            number = self._started
        # Handed over in a list the worker empties: a Thread keeps its arguments until it ends, and the job holds
        # the tool and its arguments (and what they refer to), which must not live as long as the worker.
        handover = [job]
        threading.Thread(target=self._work, args=(handover,), name=f"threadline-tool-{number}", daemon=True).start()

    def _work(self, handover: list[Callable[[], None]]) -> None:
        job: Callable[[], None] | None = handover.pop()
        while job is not None:
            job()
            job = None  # drop the finished job (and what it holds) before waiting for the next
            with self._lock:
                self._idle += 1
            job = self._next()

    def _next(self) -> Callable[[], None] | None:
        while True:
            try:
                return self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._idle -= 1  # nobody promised this worker a job: it ends
                        return None
                # A job was queued for an idle worker between the timeout and the lock: take it.


_pool = _Pool()
# A forked child has none of the parent's threads: start from an empty pool, or jobs would wait for workers that
# do not exist there.
os.register_at_fork(after_in_child=_pool._reset)


def start(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> asyncio.Future[Outcome]:
    """Call ``fn(*args, **kwargs)`` on a daemon worker thread, in a copy of the caller's context variables.

    Must be called from a running event loop. The future's result is the call's `Outcome`; it never holds an
    exception. Cancelling the future does not stop the thread (nothing can); its outcome is then dropped.
    """
    import asyncio
    import contextvars

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Outcome] = loop.create_future()
    context = contextvars.copy_context()

    def job() -> None:
        try:
            outcome = Outcome(True, context.run(fn, *args, **kwargs))
        except BaseException as exc:  # every outcome goes back to the caller, who decides what it means
            outcome = Outcome(False, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            loop.call_soon_threadsafe(_deliver, future, outcome)

    _pool.submit(job)
    return future


def _deliver(future: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not future.done():  # the caller may have stopped waiting (timeout, cancelled turn)
        future.set_result(outcome)
