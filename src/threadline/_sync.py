"""Running the async core from synchronous code: one private event loop per thread, closed when the thread ends,
and Ctrl-C delivered as the cancellation of the running turn.

Each thread that calls the sync API (``prompt()``, ``for text in builder.stream()``…) gets a private event loop,
reused across its calls, so the connection pools made on it (httpx) stay valid from one call to the next. When the
thread ends, its loop is closed, and with it the pools the cached models opened on it: an object kept only in a
thread-local is finalised by the ending thread, and closes them there. Loops of threads still alive at
interpreter exit are closed then. So a program that calls ``prompt()`` from many short-lived threads keeps no
loop, socket or pool of a finished thread.

Why not one shared background loop for every sync caller: every thread's turns would then run on one thread, so
anything blocking in a turn — a store write, a sync dynamic-tools provider, an ``on_text`` callback — would stall
the turns of every other thread. And not a fresh loop per call: each ``prompt()`` would then open new connections
(a TLS handshake per call to a remote API), where a long-lived thread now reuses them.

Ctrl-C: while a sync call runs on the main thread, SIGINT cancels the running task instead of raising
``KeyboardInterrupt`` at whatever line the loop happens to be on (the way `asyncio.Runner` does it). The turn then
records its failure with the partial answer and closes its streams, and only then does the caller get
``KeyboardInterrupt``. A second Ctrl-C while that happens raises at once. Between the steps of a sync ``for`` (the
caller's code runs there) Ctrl-C raises where that code is, as usual, and the iteration remembers it: Python drops
a ``KeyboardInterrupt`` raised while a finaliser or a weakref callback runs, and the next step then stops the turn
instead of waiting on it forever. So a Ctrl-C during a sync ``for`` always ends the iteration. A Ctrl-C that comes
just before the loop goes to sleep wakes it through `signal.set_wakeup_fd`, and one that comes as a step's task is
being made cancels that task before it runs.

asyncio is imported on first use, not with the package: it is most of the cost of ``import threadline``, and
reading logs or listing conversations never needs it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio
    import socket

__all__ = ["in_event_loop", "iterate_sync", "run_sync"]

T = TypeVar("T")

# How long closing a loop waits for the tasks still pending on it (a tool that ignored its cancellation…).
CLOSE_GRACE = 1.0
# How long, after a KeyboardInterrupt that did not come through our SIGINT handler (a tool raised it), the
# interrupted turn may take to record its failure.
SETTLE_GRACE = 5.0

_local = threading.local()
_loops: weakref.WeakSet[_ThreadLoop] = weakref.WeakSet()  # open loops, for the exit handler
_loops_lock = threading.Lock()


def in_event_loop() -> bool:
    """Whether the calling thread is running an event loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _ThreadLoop:
    """One thread's private loop, closed when its thread ends (by `_ThreadEnd`) or at interpreter exit.

    On the main thread it also holds the socket pair that wakes the loop when a signal arrives (`wakeup_fd`)."""

    __slots__ = ("__weakref__", "_no_wakeup", "_wakeup", "loop")

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self._wakeup: tuple[socket.socket, socket.socket] | None = None
        self._no_wakeup = False  # the loop cannot watch a socket

    def wakeup_fd(self) -> int | None:
        """The file descriptor for `signal.set_wakeup_fd` while this loop runs a step: a signal writes a byte there,
        which wakes the loop even when the signal came just before it went to sleep in ``select()``. None for a loop
        that cannot watch a socket (``add_reader``), such as the Proactor loop on Windows, which sets its own."""
        if self._wakeup is None and not self._no_wakeup:
            import socket

            reader, writer = socket.socketpair()
            reader.setblocking(False)
            writer.setblocking(False)
            try:
                self.loop.add_reader(reader.fileno(), _drain, reader)
            except NotImplementedError:
                reader.close()
                writer.close()
                self._no_wakeup = True
                return None
            self._wakeup = (reader, writer)
        return None if self._wakeup is None else self._wakeup[1].fileno()

    def close(self) -> None:
        _close_loop(self.loop)
        if self._wakeup is not None:
            for end in self._wakeup:
                end.close()
            self._wakeup = None

    def abandon(self) -> None:
        """Forget this loop in a forked child without touching it. Its selector is the parent's epoll instance (a
        fork shares it), so closing the loop here would unregister the parent's file descriptors from it: the
        parent's loop would then no longer wake when a tool's result or a signal arrives. asyncio's own closed
        flag is set instead, so neither `close` nor the loop's finaliser does anything."""
        self.loop._closed = True  # type: ignore[attr-defined]  # asyncio's flag; no public way to detach a loop


class _ThreadEnd:
    """Closes a thread's loop when the thread ends. Only the thread-local refers to it (the exit handler's set holds
    the loops weakly), so it is finalised as the thread ends. The loop's holder itself may outlive the thread: the
    frames of a sync call refer to it, and a kept exception keeps those frames (in a reference cycle, which the
    garbage collector finalises in any order, the loop's own sockets first)."""

    __slots__ = ("holder",)

    def __init__(self, holder: _ThreadLoop) -> None:
        self.holder = holder

    def __del__(self) -> None:
        self.holder.close()


def _drain(reader: socket.socket) -> None:
    """Empty the wakeup socket: its bytes only woke the loop; the signal's Python handler does the work."""
    try:
        while reader.recv(4096):
            pass
    except OSError:  # empty (BlockingIOError), or closed
        pass


def _thread_loop() -> _ThreadLoop:
    end: _ThreadEnd | None = getattr(_local, "end", None)
    if end is None or end.holder.loop.is_closed():
        holder = _ThreadLoop()
        _local.end = _ThreadEnd(holder)
        with _loops_lock:
            _loops.add(holder)
        return holder
    return end.holder


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on this thread's private loop.

    Raises:
        KeyboardInterrupt: after Ctrl-C, once the coroutine has finished cancelling.
        RuntimeError: when called from a running event loop.
    """
    if in_event_loop():
        coro.close()
        raise RuntimeError("run_sync() was called from a running event loop; await the async API instead")
    return _run(_thread_loop(), coro)


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Drive an async iterator from synchronous code, one item at a time (Ctrl-C as in `run_sync`)."""
    if in_event_loop():
        # Without this check asyncio says "Cannot run the event loop while another loop is running", which does
        # not tell the caller what to do.
        raise RuntimeError("a sync `for` was used inside a running event loop; use `async for` there instead")
    holder = _thread_loop()
    loop = holder.loop
    interrupted = False
    between = _Between.install()
    try:
        while True:
            try:
                if between is not None and between.pressed:
                    # Ctrl-C came between two steps and its KeyboardInterrupt was dropped: Python drops an exception
                    # raised while a finaliser or a weakref callback runs (a finished task being collected, say).
                    raise KeyboardInterrupt
                item = _run(holder, agen.__anext__(), outer=between)
            except StopAsyncIteration:
                return
            except KeyboardInterrupt:
                interrupted = True
                raise
            yield item
    finally:
        # Also after Ctrl-C, which may have come between two steps (then nothing was cancelled yet): closing the
        # iterator is what makes it stop its work and record where it stopped.
        closer = getattr(agen, "aclose", None)
        try:
            if closer is not None and not loop.is_closed():
                try:
                    _run(holder, closer(), outer=between)
                except RuntimeError:
                    # After a second Ctrl-C the step may still be running and cannot be closed now (the loop's
                    # shutdown does it); the interrupt, not this, is what the caller must see.
                    if not interrupted:
                        raise
        finally:
            if between is not None:
                between.uninstall()


class _Between:
    """The SIGINT handler while a sync ``for`` iterates, between its steps (each step puts its own, see `_run`).

    It raises ``KeyboardInterrupt`` where the caller's code is, as Python's own handler does, and remembers the
    press: Python drops an exception raised while a finaliser or a weakref callback runs, and the iteration's next
    step must then stop instead of waiting for a turn that nobody cancelled.
    """

    __slots__ = ("pressed",)

    def __init__(self) -> None:
        self.pressed = False

    @classmethod
    def install(cls) -> _Between | None:
        """Put the handler in place, on the main thread when Python's own handler is there; None otherwise."""
        import signal

        if threading.current_thread() is not threading.main_thread():
            return None
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        between = cls()
        try:
            signal.signal(signal.SIGINT, between)
        except ValueError:  # not the main interpreter
            return None
        return between

    def uninstall(self) -> None:
        import signal

        if signal.getsignal(signal.SIGINT) is self:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def __call__(self, signum: int, frame: Any) -> None:
        self.pressed = True
        raise KeyboardInterrupt


def _run(holder: _ThreadLoop, awaitable: Awaitable[T], outer: _Between | None = None) -> T:
    """Run ``awaitable`` as a task on ``holder``'s loop; on the main thread, Ctrl-C cancels that task (see the module
    docstring) and is raised as ``KeyboardInterrupt`` once the task is done. ``outer``: the handler of the sync
    ``for`` this step belongs to, put back when the step ends.

    Our handler goes in before the task exists: a Ctrl-C between the two then cancels the task as soon as it is
    made, where a handler put in afterwards would leave a task that never ran (asyncio reports it as "destroyed but
    pending"). While it is in place, signals also write to the loop's wakeup socket: Python runs a handler between
    two bytecodes, and a Ctrl-C that comes just before the loop goes to sleep in ``select()`` would otherwise run it
    only when the sleep ends (the next timer: an hour for a model that is thinking)."""
    import asyncio
    import signal

    loop = holder.loop
    task: asyncio.Task[T] | None = None
    made = False  # the task has been made (and `task` set); until then a Ctrl-C only counts
    interrupts = 0
    late = False  # Ctrl-C came as the step was ending: raised when it has ended

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupts, late
        interrupts += 1
        if not made:
            return  # counted: the task is cancelled as soon as it is made
        if task is None or task.done():
            # The step is over and being let go: collecting its task runs a weakref callback, and Python drops an
            # exception raised there. Raised from `_run` itself instead, a moment later.
            late = True
            return
        if interrupts == 1:
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it sleeps in select()
            return
        raise KeyboardInterrupt

    handler = None
    wakeup = None  # the wakeup fd that was set before ours
    previous = outer if outer is not None else signal.default_int_handler
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is previous:
        try:
            signal.signal(signal.SIGINT, on_sigint)
            handler = on_sigint
            ours = holder.wakeup_fd()
            if ours is not None:
                wakeup = signal.set_wakeup_fd(ours, warn_on_full_buffer=False)
                if wakeup != -1:  # someone else's (a GUI toolkit, asyncio's signal handlers): theirs stays
                    signal.set_wakeup_fd(wakeup)
                    wakeup = None
        except ValueError:  # not the main interpreter
            handler = None
    try:
        task = loop.create_task(awaitable if asyncio.iscoroutine(awaitable) else _awaited(awaitable))
        made = True
        if interrupts:
            task.cancel()
        result = loop.run_until_complete(task)
        late = late or interrupts > 0  # the task was ending when Ctrl-C came, and it ended all the same
        return result
    except asyncio.CancelledError:
        if interrupts and task is not None and task.uncancel() == 0:
            raise KeyboardInterrupt from None
        raise
    except KeyboardInterrupt:
        if not interrupts and task is not None:
            # Raised inside the loop by something other than our handler (a tool raised it): the turn's task was
            # left pending mid-step. Cancel it and let it record its failure, as for Ctrl-C.
            _settle(loop, task)
        raise
    except BaseException:
        # Cancelling a task that is running asks it to stop at its next ``await``; a task whose step ends without
        # one, in an exception, is not marked cancelled: a stream's last step (its ``StopAsyncIteration``, which
        # would end the caller's ``for`` as if nothing had happened) or a turn's own error. The Ctrl-C is raised
        # all the same, from the finally below.
        late = late or interrupts > 0
        raise
    finally:
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved here, so asyncio does not log it as never retrieved
        task = None  # let go of it while our handler is still in place (see on_sigint)
        if handler is not None:
            if wakeup is not None:
                signal.set_wakeup_fd(-1)
            if signal.getsignal(signal.SIGINT) is handler:
                signal.signal(signal.SIGINT, previous)
        if late:
            raise KeyboardInterrupt  # a Ctrl-C as the step ended stops the caller as one before it would


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _settle(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any]) -> None:
    import asyncio

    if task.done() or loop.is_running():
        return
    task.cancel()
    loop.run_until_complete(asyncio.wait((task,), timeout=SETTLE_GRACE))


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a loop that is not running, with the connection pools of cached models made on it and the tasks
    still pending there (cancelled, waited for a moment). Best effort: it runs at thread end and at exit."""
    if loop.is_closed() or loop.is_running():
        return
    try:
        if not in_event_loop():  # a finaliser may run in a thread that is running another loop: then just close
            _finish_tasks(loop)
            models = sys.modules.get("threadline.models")
            if models is not None:
                loop.run_until_complete(models.close_cached_models(loop))
            loop.run_until_complete(loop.shutdown_asyncgens())
    except BaseException:  # at thread end or exit there is nobody to tell; closing the loop is what matters
        pass
    finally:
        loop.close()


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    import asyncio

    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.wait(tasks, timeout=CLOSE_GRACE))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved


def _abandon_inherited_loops() -> None:
    """In a forked child: the parent's loops are forgotten, never closed (see `_ThreadLoop.abandon`); the child
    makes its own on first use."""
    global _loops_lock
    _loops_lock = threading.Lock()  # another thread may have held it at the fork
    for holder in list(_loops):
        holder.abandon()
    _loops.clear()


os.register_at_fork(after_in_child=_abandon_inherited_loops)


@atexit.register
def _close_loops() -> None:
    with _loops_lock:
        holders = list(_loops)
    for holder in holders:
        holder.close()
