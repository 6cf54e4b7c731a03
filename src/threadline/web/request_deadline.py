"""Slow clients: how ``threadline serve`` keeps a connection from being held open by a request that never ends.

uvicorn has no timeout on receiving a request. Its ``timeout_keep_alive`` closes a connection idle between two
requests, but only once a response is complete, and any byte received cancels it: a client that connects and sends
nothing, or sends its request one byte every few seconds ("slow loris"), held the connection (and a worker's socket)
forever. h11's ``max_incomplete_event_size`` bounds the size of the headers, not the time they take.

`RequestDeadlineProtocol` is uvicorn's h11 protocol with one deadline: a whole request (headers and body) must arrive
within `REQUEST_SECONDS` of the connection opening or of its first byte (a kept-alive connection's idle time before
that is uvicorn's `KEEP_ALIVE_SECONDS`); past it the connection is closed. The deadline is lifted as soon as the
request is in, so a long response (a live-update stream, a turn running for minutes) is never cut.

It also ends those streams when the server stops (`RequestDeadlineProtocol.shutdown`), so Ctrl+C with a page open
stops the server at once and quietly.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["KEEP_ALIVE_SECONDS", "REQUEST_SECONDS", "RequestDeadlineProtocol"]

REQUEST_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5


class RequestDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request is not whole within `REQUEST_SECONDS`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch(started=True)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch(started=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Idle until the next request's first byte: uvicorn's keep-alive timeout has that part, unless a pipelined
        # request already began to arrive.
        self._watch(started=bool(self.conn.trailing_data[0]))

    def shutdown(self) -> None:
        """The server is stopping (Ctrl+C). A response already being sent that has not ended by now is a stream (a
        page's live updates; a page or a download ends in moments): its connection is closed, as a client that
        went away, so the stream ends at once and the page reconnects to the next server. Left to uvicorn, it ran
        out the graceful-shutdown time and was then cancelled, and the cancellation reached the terminal as a
        traceback. A request still being answered is let finish, as uvicorn does."""
        cycle = self.cycle
        if cycle is not None and cycle.response_started and not cycle.response_complete:
            self.transport.close()  # uvicorn's connection_lost then tells the app its client is gone
            return
        super().shutdown()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lift()
        super().connection_lost(exc)

    def _awaiting_request(self) -> bool:
        """Whether the server waits on the client for (the rest of) a request, not the other way round."""
        if self.conn.their_state is h11.SEND_BODY:
            return True
        return self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE

    def _watch(self, *, started: bool) -> None:
        if self.transport.is_closing() or not self._awaiting_request():
            self._lift()
        elif self._deadline is None and started:
            self._deadline = self.loop.call_later(REQUEST_SECONDS, self._expire)

    def _lift(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if not self.transport.is_closing() and self._awaiting_request():
            # No answer can be sent before a request is whole (h11 allows none); closing is all there is to say.
            self.transport.close()
