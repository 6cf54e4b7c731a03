"""The parts of an MCP connection that live on its own loop: a client session (`Session`) and how it is listed,
ended and abandoned, the loop's thread, the handle of one call, and the text of a failure. `connection.MCPConnection`
drives them."""

from __future__ import annotations

import asyncio
import os
from contextlib import suppress
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ..._exception_text import describe_exception, exception_message, type_name

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import Tool

__all__ = [
    "CLOSE_WAIT",
    "MAX_PAGES",
    "CallHandle",
    "ServerListing",
    "Session",
    "abandon_session",
    "describe_failure",
    "end_session",
    "list_tools",
    "run_loop",
    "settle",
    "stderr_tail",
]

CLOSE_WAIT = 10.0  # seconds: the SDK's own shutdown waits at most ~6 s (stdin close, SIGTERM, SIGKILL)
MAX_PAGES = 100  # tools/list pages read at most: a server that pages forever cannot hang the start


@dataclass(frozen=True)
class ServerListing:
    """What a server said about itself when it was connected."""

    name: str | None
    instructions: str | None
    tools: list[Tool]


@dataclass(eq=False)
class Session:
    """One open client session, owned by a task on the connection's loop."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    client: Client | None = None
    listing: ServerListing | None = None
    # The stdio transport's receive stream: once its sending side is closed, the server's stdout has ended.
    read_stream: Any = None
    broken: bool = False
    stderr: IO[str] | None = None
    # Set by the start: done once the tools are listed (or the start failed).
    ready: asyncio.Future[None] | None = None
    # Set when `close` stopped the session while it was starting.
    closed: bool = False

    def alive(self) -> bool:
        if self.broken or self.client is None or (self.task is not None and self.task.done()):
            return False
        if self.read_stream is not None:
            statistics = getattr(self.read_stream, "statistics", None)
            if statistics is not None and statistics().open_send_streams == 0:
                return False
        return True


class CallHandle:
    """A call's task on the connection's loop, so the caller can cancel it (even before it starts)."""

    __slots__ = ("cancelled", "task")

    def __init__(self) -> None:
        self.cancelled = False
        self.task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.task is not None:
            self.task.cancel()


def settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the caller's loop: hand the call's outcome over, unless the caller stopped waiting."""
    if done.done():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


async def end_session(session: Session) -> None:
    """Close a session: let its owner task leave the client (which stops a stdio server), bounded in time."""
    session.broken = True
    session.stop.set()
    task = session.task
    try:
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_WAIT)
            except TimeoutError:
                task.cancel()
                with suppress(BaseException):
                    await task
            except asyncio.CancelledError:
                if not task.cancelled():  # we are being cancelled ourselves, not the owner
                    raise
            except Exception:  # the owner logs how its session ended
                pass
    finally:
        if session.stderr is not None:
            session.stderr.close()


async def abandon_session(session: Session) -> None:
    """Stop a session that never finished starting: its owner task is cancelled at once, since it never reached
    the point where it waits to be told to stop (waiting for that cost up to `CLOSE_WAIT` more seconds after a
    start that had timed out). Cancelling it runs the SDK's stop sequence, so no server process is left running."""
    if session.ready is not None and not session.ready.done():
        session.ready.cancel()
    if session.task is not None and not session.task.done():
        session.task.cancel()
    await end_session(session)


async def list_tools(client: Client) -> ServerListing:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    info = client.server_info
    return ServerListing(name=info.name if info is not None else None, instructions=client.instructions, tools=tools)


def run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def describe_failure(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_failure(inner) for inner in exc.exceptions)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"no such program: {exc.filename}"
    text = exception_message(exc)  # the client's and the server's exceptions: read safely, as a tool's are
    if text is None:
        return describe_exception(exc)
    text = text.strip()
    first = text.splitlines()[0] if text else ""
    return f"{type_name(exc)}: {first}" if first else type_name(exc)


def stderr_tail(session: Session, lines: int = 3) -> str:
    """The last lines the server wrote to stderr, to explain a failed start."""
    stream = session.stderr
    if stream is None or stream.closed:
        return ""
    try:
        stream.flush()
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - 4000))
        tail = [line.strip() for line in stream.read().splitlines() if line.strip()][-lines:]
    except (OSError, ValueError):
        return ""
    return f" (server stderr: {' | '.join(tail)})" if tail else ""
