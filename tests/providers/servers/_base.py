"""A small HTTP/1.1 server on 127.0.0.1 that plays back a script, for testing the HTTP adapters.

It runs on its own event loop in a background thread, so synchronous and asynchronous tests can both use it, and
it speaks plain HTTP/1.1 with keep-alive, ``Content-Length`` bodies and chunked server-sent-event streams, which
lets a script do what real providers sometimes do: refuse with a status, wait too long, close a connection
without answering, or cut a stream in the middle.

The script is a queue. Each item is an `Answer` (what the model says; the provider subclass renders it as a JSON
body or as a stream, whichever the request asked for) or a fault (`Status`, `Hang`, `Close`, `Cut`). Every request
is recorded (`FakeServer.requests`), so a test can count attempts and check what was sent field by field
(`FakeServer.tally` counts them by any key, e.g. per conversation and number of messages sent).

A `FakeServer.responder` answers from the request itself instead of the script: a model that many conversations
call at once, in an order no script can foresee.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class ToolUse:
    """A tool call in a scripted answer; ``arguments`` is the exact text the model sends (it may be invalid JSON)."""

    name: str
    arguments: str = "{}"
    id: str | None = None


@dataclass(frozen=True)
class Answer:
    """What the model answers: text, tool calls, or both (nothing at all is an empty answer)."""

    text: str = ""
    tool_calls: tuple[ToolUse, ...] = ()
    input_tokens: int = 11
    output_tokens: int = 7
    cached_tokens: int = 0  # the part of input_tokens read from the prompt cache


@dataclass(frozen=True)
class Status:
    """An HTTP error answer."""

    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Stall:
    """Stream the first ``after`` events of ``answer``, then send nothing for ``seconds`` (a model still generating
    when the client gives up, e.g. on Ctrl-C); the connection is then closed."""

    answer: Answer
    after: int
    seconds: float = 120.0


@dataclass(frozen=True)
class Hang:
    """Accept the request and say nothing for ``seconds`` (a read timeout on the client)."""

    seconds: float


@dataclass(frozen=True)
class Close:
    """Close the connection without answering."""


@dataclass(frozen=True)
class Cut:
    """Start answering ``answer`` and break the connection after ``after`` stream events (or mid-body)."""

    answer: Answer
    after: int = 3


@dataclass(frozen=True)
class Trickle:
    """Answer ``answer`` (a JSON body or a stream, as the request asked) one byte every ``interval`` seconds, after
    sending its first ``after`` stream events at once: a server (or a proxy) that keeps a connection alive without
    ever finishing, which no read timeout notices."""

    answer: Answer
    interval: float = 0.5
    after: int = 0


@dataclass(frozen=True)
class Events:
    """Answer with exactly these server-sent events ``(event name or None, data)``, e.g. an error event."""

    events: tuple[tuple[str | None, str], ...]


@dataclass(frozen=True)
class Chunks:
    """Answer with this body as written, in these pieces: each is its own HTTP chunk, sent on its own. An event
    stream by default (line ends, comments, byte-order marks and splits inside a line or a character as a server
    or proxy may send them); any body with ``content_type`` and ``status``."""

    pieces: tuple[bytes, ...]
    content_type: str = "text/event-stream; charset=utf-8"
    status: int = 200


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(eq=False)
class _Connection:
    writer: asyncio.StreamWriter
    task: asyncio.Task[None] | None = None


class FakeServer:
    """Base of the fake providers: the server, the script queue and the request log.

    Subclasses render an `Answer` as a JSON body (`render_json`) or a list of SSE events (`render_events`).
    """

    path = "/"
    name = "fake"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        # The model id every answer names, as the real APIs name a dated snapshot ("gpt-4o-mini-2024-07-18" for a
        # "gpt-4o-mini" request); None: the model the request asked for.
        self.snapshot: str | None = None
        # When set, it answers every request (with an `Answer` or a fault), and the script is not read. It runs on
        # the server's thread, one request at a time, after the request is recorded.
        self.responder: Callable[[Recorded], Any] | None = None
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[_Connection] = set()
        self.port = 0
        self.tls: ssl.SSLContext | None = None  # set before start() to serve HTTPS with that context

    # -- lifecycle --------------------------------------------------------------------------------------------------
    def start(self) -> FakeServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name=f"{self.name}-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for connection in list(self._connections):
                connection.writer.transport.abort()
                if connection.task is not None:
                    connection.task.cancel()
            await asyncio.sleep(0)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        assert self._thread is not None
        self._thread.join(10)
        self._loop = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.port}"

    # -- script -----------------------------------------------------------------------------------------------------
    def add(self, *items: Any) -> FakeServer:
        """Queue answers and faults, in order."""
        with self._lock:
            self._queue.extend(items)
        return self

    def reply(self, *texts: str) -> FakeServer:
        """Queue plain text answers."""
        return self.add(*(Answer(text) for text in texts))

    def clear(self) -> None:
        """Drop what the script still holds (answers no request came for)."""
        with self._lock:
            self._queue.clear()

    @property
    def count(self) -> int:
        """How many requests arrived."""
        return len(self.requests)

    def tally(self, key: Callable[[Recorded], K]) -> Counter[K]:
        """How many requests arrived, per ``key(request)``."""
        return Counter(key(request) for request in list(self.requests))

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of every request, in order."""
        return [request.json for request in self.requests]

    def _next(self) -> Any:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return Status(500, {"error": {"message": "fake server: the script has no answer left", "type": "server_error"}})

    # -- rendering (provider subclasses) ----------------------------------------------------------------------------
    def render_json(self, answer: Answer, request: Recorded) -> Any:
        raise NotImplementedError

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        raise NotImplementedError

    def error_body(self, status: int) -> Any:
        return {"error": {"message": f"fake error {status}"}}

    def refuse(self, request: Recorded) -> Status | None:
        """A server quirk that refuses this request whatever the script says (the script item is kept)."""
        return None

    def serves(self, path: str) -> bool:
        """Whether requests to ``path`` are answered (the others get 404): the API's one path by default."""
        return path == self.path

    # -- HTTP -------------------------------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(writer, asyncio.current_task())  # type: ignore[arg-type]
        self._connections.add(connection)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        key, _, value = line.partition(":")
                        headers[key.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Recorded(method, path, headers, body, time.monotonic())
                self.requests.append(request)
                if not self.serves(path):
                    await self._send_json(writer, 404, {"error": {"message": f"no route {path}"}})
                    continue
                refusal = self.refuse(request)
                if refusal is None:
                    item = self.responder(request) if self.responder is not None else self._next()
                else:
                    item = refusal
                if not await self._respond(writer, request, item):
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            # A graceful close (FIN): the client reads everything sent before it, so a cut stream is cut exactly
            # where the script says, never earlier by a reset that drops buffered bytes.
            self._connections.discard(connection)
            writer.close()

    async def _respond(self, writer: asyncio.StreamWriter, request: Recorded, item: Any) -> bool:
        """Answer one request; False closes the connection."""
        if isinstance(item, Status):
            body = item.body if item.body is not None else self.error_body(item.status)
            await self._send_json(writer, item.status, body, item.headers)
            return True
        if isinstance(item, Hang):
            await asyncio.sleep(item.seconds)
            return False
        if isinstance(item, Close):
            return False
        if isinstance(item, Events):
            await self._send_events(writer, list(item.events), None)
            return True
        if isinstance(item, Chunks):
            writer.write(self._head(item.status, item.content_type, (("Transfer-Encoding", "chunked"),)))
            for piece in item.pieces:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                await asyncio.sleep(0.002)  # so the pieces reach the client one by one, as far as the OS allows
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        if isinstance(item, Trickle):
            await self._trickle(writer, item, request)
            return False
        if isinstance(item, Stall):
            await self._send_events(writer, self.render_events(item.answer, request), item.after)
            await asyncio.sleep(item.seconds)
            return False
        cut = item.after if isinstance(item, Cut) else None
        answer = item.answer if isinstance(item, Cut) else item
        assert isinstance(answer, Answer), f"cannot play {item!r}"
        streamed = bool((request.json or {}).get("stream"))
        if not streamed:
            payload = dumps_verbatim(self.render_json(answer, request))
            if cut is not None:  # announce the whole body, send half of it, hang up
                head = self._head(200, "application/json", (("Content-Length", str(len(payload))),))
                writer.write(head + payload[: len(payload) // 2])
                await writer.drain()
                return False
            await self._send_raw(writer, 200, "application/json", payload)
            return True
        return await self._send_events(writer, self.render_events(answer, request), cut)

    async def _send_events(
        self, writer: asyncio.StreamWriter, events: list[tuple[str | None, str]], cut: int | None
    ) -> bool:
        writer.write(self._head(200, "text/event-stream; charset=utf-8", (("Transfer-Encoding", "chunked"),)))
        for number, (event, data) in enumerate(events):
            if cut is not None and number >= cut:
                await writer.drain()
                return False
            text = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
            chunk = text.encode()
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _trickle(self, writer: asyncio.StreamWriter, item: Trickle, request: Recorded) -> None:
        if (request.json or {}).get("stream"):
            events = self.render_events(item.answer, request)
            writer.write(self._head(200, "text/event-stream; charset=utf-8", (("Transfer-Encoding", "chunked"),)))
            texts = [(f"event: {event}\n" if event else "") + f"data: {data}\n\n" for event, data in events]
            first = "".join(texts[: item.after]).encode()
            if first:
                writer.write(b"%x\r\n%s\r\n" % (len(first), first))
            rest = "".join(texts[item.after :]).encode()
            pieces = [b"1\r\n%s\r\n" % rest[i : i + 1] for i in range(len(rest))] + [b"0\r\n\r\n"]
        else:
            payload = json.dumps(self.render_json(item.answer, request)).encode()
            writer.write(self._head(200, "application/json", (("Content-Length", str(len(payload))),)))
            pieces = [payload[i : i + 1] for i in range(len(payload))]
        await writer.drain()
        for piece in pieces:
            await asyncio.sleep(item.interval)
            writer.write(piece)
            await writer.drain()

    @staticmethod
    def _head(status: int, content_type: str, extra: Iterable[tuple[str, str]] = ()) -> bytes:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", f"Content-Type: {content_type}"]
        lines += [f"{key}: {value}" for key, value in extra]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def _send_raw(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str,
        payload: bytes,
        extra: Iterable[tuple[str, str]] = (),
    ) -> None:
        writer.write(self._head(status, content_type, (("Content-Length", str(len(payload))), *extra)) + payload)
        await writer.drain()

    async def _send_json(
        self, writer: asyncio.StreamWriter, status: int, body: Any, extra: Iterable[tuple[str, str]] = ()
    ) -> None:
        await self._send_raw(writer, status, "application/json", dumps_verbatim(body), extra)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


class Verbatim(str):
    """JSON text to put into a rendered body as it is, not as a string: a value nested too deeply for `json` to
    read or write (a model's tool input 3,000 levels deep), which the server must still send. It stands in the body
    as a unique token, which `dumps_verbatim` replaces by the text."""

    text: str

    def __new__(cls, text: str) -> Verbatim:
        token = f"\x00verbatim-{uuid.uuid4().hex}\x00"
        made = super().__new__(cls, token)
        made.text = text
        _VERBATIM[token] = text
        return made


_VERBATIM: dict[str, str] = {}
_TOKEN = re.compile(r'"\\u0000(verbatim-[0-9a-f]{32})\\u0000"')


def dumps_verbatim(body: Any) -> bytes:
    """``body`` as JSON bytes, each `Verbatim` in it written as the JSON text it holds."""
    text = json.dumps(body)
    if "\\u0000verbatim-" in text:
        text = _TOKEN.sub(lambda match: _VERBATIM.pop(f"\x00{match.group(1)}\x00"), text)
    return text.encode()


def chunks(text: str, size: int = 4) -> list[str]:
    """Text split into small pieces, the way providers stream it."""
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []
