"""One connection to an MCP server, kept on a thread and event loop of its own and callable from any other.

Why a thread of its own: an MCP client session (``mcp.Client``) lives inside anyio task groups, which are bound to
the task and the event loop that opened them. threadline runs turns on whatever loop the caller has: the private
loop of each thread that calls the synchronous API, or the caller's own loop in async code, one task per turn. A
session opened inside one turn could not be used by the next turn (another task), nor from another thread's loop.
So the session is opened by an owner task on the connection's own loop, and stays there; each call is handed to that
loop (``run_coroutine_threadsafe``) and its answer handed back. The hop costs tens of microseconds against the
milliseconds of a round trip to the server (``bench/bench_tools.py`` measures it).

Lifetime: the server is started (or the URL connected) on first use and kept across turns. A session that ended
(a stdio server that exited, a broken HTTP connection) is reopened once, by the next call. `MCPConnection.close`
shuts the server down (stdin closed, then terminate, then kill: the SDK's sequence) and stops the thread;
connections still open at interpreter exit are closed by an ``atexit`` hook, so no server process outlives us.

A forked child does not share its parent's connections (their thread is not in the child): it starts its own server
on its first call, and exits at once when it never makes one.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..._exception_text import readable_message
from ...errors import ThreadlineError
from ._session import (
    CLOSE_WAIT,
    CallHandle,
    ServerListing,
    Session,
    abandon_session,
    describe_failure,
    end_session,
    list_tools,
    run_loop,
    settle,
    stderr_tail,
)

if TYPE_CHECKING:
    import concurrent.futures
    from collections.abc import AsyncIterator, Coroutine

    from mcp.types import CallToolResult

__all__ = ["MCPConnection", "MCPConnectionError", "MCPToolError", "ServerListing", "safe_url"]

logger = logging.getLogger("threadline.mcp")


class MCPConnectionError(ThreadlineError):
    """The MCP server could not be started or connected (raised when its tools are first listed).

    Attributes:
        reason: Why, in one line, without the server's stderr (which the message may quote, for the person
            starting it, but which must not reach a conversation's log).
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class MCPToolError(Exception):
    """A call to an MCP tool failed: the server answered ``isError``, died, hung, or refused the call.

    Raised by the tool's handler, so the turn engine turns it into an error result for the model.
    """


class MCPConnection:
    """A connection to one MCP server (stdio command or streamable-HTTP URL), usable from any thread or loop.

    Args:
        command: The stdio server's command line (program and arguments).
        url: The streamable-HTTP endpoint.
        env: Extra environment variables for a stdio server.
        timeout: Seconds to wait for each call.
        start_timeout: Seconds to wait for the server to start and list its tools.
        label: How messages name the server until it has named itself.
    """

    def __init__(
        self,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        start_timeout: float = 60.0,
        label: str,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("give either a command or a url")
        self.command = list(command) if command is not None else None
        self.url = url
        self.env = dict(env) if env else None
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.label = label
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: Session | None = None  # touched only on the connection's loop
        self._opening: asyncio.Lock | None = None  # made on the connection's loop
        # The session being started and the task waiting for it, so `close` can stop a start (on the loop, too).
        self._starting: tuple[Session, asyncio.Task[Any] | None] | None = None
        _open_connections.add(self)

    # -- used from any thread ------------------------------------------------------------------------------------
    def open(self) -> ServerListing:
        """Connect now (if not connected yet) and return what the server said about itself; blocks this thread.

        Raises:
            MCPConnectionError: when the server cannot be started or does not answer within the timeout.
        """
        session: Session = self._submit(self._ensure_session()).result()
        assert session.listing is not None  # set before the session is handed out
        return session.listing

    async def call(self, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call a tool of the server from any event loop; reopens a session that ended, once.

        Raises:
            MCPToolError: when the call cannot be made or gets no answer (the message says why, for the model).
        """
        # Hand-off without run_coroutine_threadsafe's chain of futures: the call's task sets our future directly
        # (half the cost of a hop, measured in bench/bench_tools.py).
        caller = asyncio.get_running_loop()
        done: asyncio.Future[CallToolResult] = caller.create_future()
        handle = CallHandle()
        loop = self._running_loop()
        loop.call_soon_threadsafe(self._start_call, name, dict(arguments), caller, done, handle)
        try:
            return await done
        except asyncio.CancelledError:
            with suppress(RuntimeError):  # the connection's loop is already closed: nothing runs there
                loop.call_soon_threadsafe(handle.cancel)
            raise

    def _start_call(
        self,
        name: str,
        arguments: dict[str, Any],
        caller: asyncio.AbstractEventLoop,
        done: asyncio.Future[CallToolResult],
        handle: CallHandle,
    ) -> None:
        """On the connection's loop: run one call as a task that hands its outcome to the caller's loop."""
        if handle.cancelled:
            return

        async def run() -> None:
            try:
                result: Any = await self._call(name, arguments)
                outcome: tuple[Any, BaseException | None] = (result, None)
            except asyncio.CancelledError:
                if handle.cancelled:  # our caller gave up: nobody is waiting
                    raise
                # The connection is being closed under the call.
                outcome = (None, MCPToolError(f"the MCP server {self.label} was closed during the call"))
            except Exception as exc:
                outcome = (None, exc)
            with suppress(RuntimeError):  # the caller's loop is closed: nobody is waiting
                caller.call_soon_threadsafe(settle, done, *outcome)

        handle.task = asyncio.get_running_loop().create_task(run())

    @property
    def connected(self) -> bool:
        """Whether a session is open now (a server process running, for stdio)."""
        session = self._session
        return session is not None and session.alive()

    def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Shut the server down and stop the connection's thread; waits up to ``timeout`` seconds.

        A later call opens a new connection.
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:  # a finalizer run on our own thread: we cannot wait for ourselves
            loop.call_soon_threadsafe(self._start_shutdown, loop)
            return
        try:
            future = asyncio.run_coroutine_threadsafe(self._shutdown(loop), loop)
        except RuntimeError:  # the loop is already closed
            return
        with suppress(Exception):
            future.result(timeout)
        thread.join(timeout)

    def close_soon(self) -> None:
        """Ask for `close` without waiting (safe from a garbage-collection finalizer on any thread)."""
        with self._lock:
            loop = self._loop
            self._loop = self._thread = None
        if loop is not None and not loop.is_closed():
            with suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
                loop.call_soon_threadsafe(self._start_shutdown, loop)

    def _start_shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        # A module-level set holds the task: the loop keeps only weak references to tasks.
        task = loop.create_task(self._shutdown(loop))
        _shutting_down.add(task)
        task.add_done_callback(_shutting_down.discard)

    def _forget_after_fork(self) -> None:
        """In a forked child: drop the parent's loop, thread and session, which do not exist here (the thread did
        not survive the fork, so its loop never runs again), so a call from the child starts a server of its own and
        `close` has nothing to wait for. The parent's server is the parent's: the child neither uses nor stops it."""
        _inherited.append((self._loop, self._session))
        self._lock = threading.Lock()  # it may have been held by another thread at the fork
        self._loop = self._thread = None
        self._session = None
        self._opening = None

    # -- the connection's thread ---------------------------------------------------------------------------------
    def _submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self._running_loop())

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        """The connection's loop, started (with its thread) if there is none."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=run_loop, args=(loop,), name=f"threadline-mcp:{self.label}", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            session, self._session = self._session, None
            starting, self._starting = self._starting, None
            self._opening = None  # bound to this loop; a later call makes a new loop
            if starting is not None:
                # A start still waiting for the server: stop it now (its server is stopped as any other), and let
                # whoever waits for it hear why before the loop stops.
                pending, waiter = starting
                pending.closed = True
                await abandon_session(pending)
                if waiter is not None and not waiter.done():
                    await asyncio.wait({waiter}, timeout=CLOSE_WAIT)
            if session is not None:
                await end_session(session)
        finally:
            loop.stop()

    # -- on the connection's loop --------------------------------------------------------------------------------
    async def _ensure_session(self) -> Session:
        session = self._session
        if session is not None and session.alive():  # the usual case: no lock to take
            return session
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:  # concurrent calls wait for one start, not one each
            session = self._session
            if session is not None and session.alive():
                return session
            if session is not None:
                self._session = None
                await end_session(session)
            session = await self._start()
            self._session = session
            return session

    async def _start(self) -> Session:
        # The SDK is imported before the clock starts: on a busy machine its first import takes seconds, which are
        # ours, not the server's.
        import mcp.client.stdio  # noqa: F401

        session = Session()
        if self.command is not None:
            # The server's stderr (its logs; its traceback if it fails) goes to a temporary file, not our terminal;
            # the end of it is quoted when the server fails to start.
            session.stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        session.ready = ready
        session.task = asyncio.ensure_future(self._own(session, ready))
        self._starting = (session, asyncio.current_task())
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.start_timeout)
        except TimeoutError:
            tail = self._redact(stderr_tail(session))
            await abandon_session(session)
            reason = f"it did not finish starting within {self.start_timeout:g} s"
            raise MCPConnectionError(f"MCP server {self.label}: {reason}{tail}", reason) from None
        except BaseException as exc:
            tail = self._redact(stderr_tail(session))
            await abandon_session(session)
            if session.closed:
                reason = "the toolset was closed while the server was starting"
                raise MCPConnectionError(f"MCP server {self.label}: {reason}", reason) from None
            if isinstance(exc, Exception):
                failed = "could not be started" if self.command is not None else "could not be reached"
                reason = self._redact(self._start_failure(exc))
                raise MCPConnectionError(f"MCP server {self.label} {failed}: {reason}{tail}", reason) from None
            raise
        finally:
            if self._starting is not None and self._starting[0] is session:
                self._starting = None
        return session

    async def _own(self, session: Session, ready: asyncio.Future[None]) -> None:
        """Open the client session, list the tools, then hold the session open until told to stop."""
        from mcp import Client

        try:
            transport: Any = self._stdio(session) if self.command is not None else self.url
            async with Client(transport, cache=None) as client:
                session.client = client
                session.listing = await list_tools(client)
                ready.set_result(None)
                await session.stop.wait()
        except BaseException as exc:
            session.broken = True
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else MCPConnectionError("the start was stopped"))
            elif not isinstance(exc, asyncio.CancelledError):
                logger.debug("MCP session of %s ended: %s", self.label, describe_failure(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            session.broken = True

    def _stdio(self, session: Session) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert self.command is not None
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env)

        @asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            async with stdio_client(params, errlog=session.stderr) as streams:  # type: ignore[arg-type]
                session.read_stream = streams[0]
                yield streams

        return transport()

    async def _call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        restarting = self._session is not None and not self._session.alive()
        try:
            session = await self._ensure_session()
        except MCPConnectionError as exc:
            what = "stopped and could not be restarted" if restarting else "could not be started"
            if self.url is not None:
                what = "could not be reached again" if restarting else "could not be reached"
            raise MCPToolError(f"the MCP server {self.label} {what}: {exc.reason}") from None
        assert session.client is not None
        try:
            return await session.client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise MCPToolError(
                    f"the MCP server {self.label} did not answer within {self.timeout:g} s; the call was cancelled"
                ) from None
            if exc.code == CONNECTION_CLOSED:
                session.broken = True
                if session.stop.is_set():  # closed by us (close(), or a restart), not by the server
                    raise MCPToolError(f"the MCP server {self.label} was closed during the call") from None
                if self.command is not None:
                    raise MCPToolError(
                        f"the MCP server {self.label} stopped during the call (it is restarted on the next call)"
                    ) from None
                raise MCPToolError(
                    f"the MCP server {self.label} closed the connection during the call (it is reopened on the next "
                    "call)"
                ) from None
            said = self._redact(readable_message(exc))
            raise MCPToolError(f"the MCP server {self.label} refused the call: {said}") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            session.broken = True
            raise MCPToolError(
                f"the connection to the MCP server {self.label} failed: {self._redact(describe_failure(exc))} "
                "(it is reopened on the next call)"
            ) from None

    def _start_failure(self, exc: Exception) -> str:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        inner: BaseException = exc
        while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
            inner = inner.exceptions[0]
        if isinstance(inner, MCPError) and inner.code == CONNECTION_CLOSED:
            return "it exited before it answered" if self.command is not None else "it closed the connection"
        return describe_failure(exc)

    def _redact(self, text: str) -> str:
        """Text for a message, without the secrets we were given: ``env`` values and the URL's credentials."""
        secrets = [value for value in (self.env or {}).values() if len(value) >= 4]
        if self.url is not None:
            parts = urlsplit(self.url)
            secrets += [part for part in (parts.username, parts.password, parts.query, parts.fragment) if part]
            secrets.append(self.url)  # whole, first: its safe form is put back below
        for secret in sorted(set(secrets), key=len, reverse=True):
            text = text.replace(secret, safe_url(secret) if secret == self.url else "***")
        return text


def safe_url(url: str) -> str:
    """A URL as messages may show it: without user, password, query or fragment (where tokens travel)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


_open_connections: weakref.WeakSet[MCPConnection] = weakref.WeakSet()
_shutting_down: set[asyncio.Task[None]] = set()


# What a forked child inherited of its parent's connections. Kept, never used: if collected, the dead loop's pending
# tasks would each log "Task was destroyed but it is pending!".
_inherited: list[tuple[asyncio.AbstractEventLoop | None, Session | None]] = []


def _forget_all_after_fork() -> None:
    _shutting_down.clear()
    for connection in list(_open_connections):
        connection._forget_after_fork()


os.register_at_fork(after_in_child=_forget_all_after_fork)


@atexit.register
def _close_all() -> None:
    """Stop every server still running when the interpreter exits."""
    for connection in list(_open_connections):
        with suppress(Exception):
            connection.close()
