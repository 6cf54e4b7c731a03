"""Running the async core from synchronous code.

Each thread gets one private event loop, reused across calls, so connection pools made on it (httpx clients) stay
valid from one synchronous ``prompt()`` to the next. The loops are closed at interpreter exit.

asyncio is imported on first use, not with the package: it is most of the cost of ``import threadline``, and
reading logs or listing conversations never needs it.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["in_event_loop", "iterate_sync", "run_sync"]

T = TypeVar("T")
_local = threading.local()
_loops: list[asyncio.AbstractEventLoop] = []
_loops_lock = threading.Lock()


def in_event_loop() -> bool:
    """Whether the calling thread is running an event loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _loop() -> asyncio.AbstractEventLoop:
    import asyncio

    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
        with _loops_lock:
            _loops.append(loop)
    return loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on this thread's private loop."""
    if in_event_loop():
        coro.close()
        raise RuntimeError("run_sync() was called from a running event loop; await the async API instead")
    return _loop().run_until_complete(coro)


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Drive an async iterator from synchronous code, one item at a time."""
    if in_event_loop():
        # Without this check asyncio says "Cannot run the event loop while another loop is running", which does
        # not tell the caller what to do.
        raise RuntimeError("a sync `for` was used inside a running event loop; use `async for` there instead")
    loop = _loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(agen.__anext__())
            except StopAsyncIteration:
                return
    finally:
        closer = getattr(agen, "aclose", None)
        if closer is not None and not loop.is_closed():
            loop.run_until_complete(closer())


@atexit.register
def _close_loops() -> None:
    with _loops_lock:
        loops = list(_loops)
        _loops.clear()
    for loop in loops:
        if loop.is_closed() or loop.is_running():
            continue
        try:
            from .models import close_cached_models

            loop.run_until_complete(close_cached_models(loop))
            loop.run_until_complete(loop.shutdown_asyncgens())
        except Exception:  # interpreter shutdown: best effort
            pass
        finally:
            loop.close()
