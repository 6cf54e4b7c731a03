"""Live updates: what an open page learns without a reload, as server-sent events.

Messages come from the store, whoever wrote them (this server's own turns, the CLI in another shell, another host
on PostgreSQL): each open stream reads what was appended after the last sequence number it sent, every
`POLL_SECONDS`, an indexed read that costs next to nothing when nothing is new. Turns that this server runs also
publish, in process, the text the model is streaming and whether the turn is running, done or failed; each such
event also wakes the streams of that conversation at once, so the messages a turn records show up without waiting
for the next poll.

Events (``data`` is JSON): ``message`` (a new message's sequence number and rendered HTML; the last of a batch also
carries the conversation's message ``count`` and ``updated`` time, for the page's header), ``delta`` (streamed
text), ``turn`` (``running``, ``done``, ``failed``, ``busy``, ``error`` with a one-line ``detail``), and what a
stream's ``watch`` finds (``durable``: the conversation's durable turns, rendered, when their states change; read
every `WATCH_SECONDS`, see `threadline.web.durable_turns`). Each ``message`` event carries its sequence number as the
SSE ``id``, so a reconnecting browser resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from anyio import to_thread

from ..store import MessagePage, Store

__all__ = ["POLL_SECONDS", "WATCH_SECONDS", "TurnEvents", "Watch", "event_stream", "sse"]

POLL_SECONDS = 0.25
WATCH_SECONDS = 1.0
HEARTBEAT_SECONDS = 15.0
BATCH = 200


def sse(event: str, data: Any, id: int | None = None) -> str:
    """One server-sent event."""
    head = f"id: {id}\n" if id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


Watch = Callable[[], tuple[str, Any] | None]
"""Looks at something besides the messages (in a worker thread): the event to send when it changed, else None."""


class TurnEvents:
    """In-process fan-out of what this server's turns do, per conversation."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[asyncio.Queue[tuple[str, Any]]]] = {}

    def subscribe(self, conversation_id: str) -> asyncio.Queue[tuple[str, Any]]:
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=10_000)
        self._subscribers.setdefault(conversation_id, set()).add(queue)
        return queue

    def unsubscribe(self, conversation_id: str, queue: asyncio.Queue[tuple[str, Any]]) -> None:
        queues = self._subscribers.get(conversation_id)
        if queues is not None:
            queues.discard(queue)
            if not queues:
                del self._subscribers[conversation_id]

    def publish(self, conversation_id: str, event: str, data: Any) -> None:
        """Send an event to every open stream of the conversation (a stream too slow to keep up loses deltas,
        never messages: those come from the store)."""
        for queue in self._subscribers.get(conversation_id, ()):
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:
                pass


async def event_stream(
    store: Store,
    conversation_id: str,
    after: int,
    events: TurnEvents,
    render: Callable[[MessagePage], list[dict[str, Any]]],
    closing: asyncio.Event,
    watch: Watch | None = None,
) -> AsyncIterator[str]:
    """The events of one open page: messages appended after sequence number ``after``, and this server's turn
    events, until the client goes away or the server stops.

    Args:
        store: Where the messages are read from.
        conversation_id: The conversation the page shows.
        after: The last sequence number the page already shows.
        events: This server's turn events.
        render: Turns newly read messages into ``message`` event payloads (each with its ``seq``).
        closing: Set when the server shuts down.
        watch: Called every `WATCH_SECONDS`; the event it returns is sent.
    """
    queue = events.subscribe(conversation_id)
    clock = asyncio.get_running_loop().time
    last = after
    next_poll = 0.0
    next_watch = 0.0 if watch is not None else float("inf")
    quiet_since = clock()
    try:
        yield "retry: 1000\n\n"
        while not closing.is_set():
            if watch is not None and clock() >= next_watch:
                seen = await to_thread.run_sync(watch)
                next_watch = clock() + WATCH_SECONDS
                if seen is not None:
                    yield sse(*seen)
                    quiet_since = clock()
            if clock() >= next_poll:
                page = await to_thread.run_sync(store.read_after, conversation_id, last, BATCH)
                next_poll = clock() + POLL_SECONDS
                if page.messages:
                    # Rendering reads the store too (the conversation's new count), so off the event loop.
                    for payload in await to_thread.run_sync(render, page):
                        yield sse("message", payload, id=payload["seq"])
                    assert page.last_seq is not None
                    last = page.last_seq
                    quiet_since = clock()
                    if len(page.messages) == BATCH:
                        next_poll = 0.0  # more are waiting: read on at once
                        continue
            try:
                wake = min(next_poll, next_watch)
                event, data = await asyncio.wait_for(queue.get(), timeout=max(0.0, wake - clock()))
            except TimeoutError:
                if clock() - quiet_since >= HEARTBEAT_SECONDS:
                    quiet_since = clock()
                    yield ": keep-alive\n\n"
                continue
            yield sse(event, data)
            while not queue.empty():
                event, data = queue.get_nowait()
                yield sse(event, data)
            if event == "turn":
                next_poll = 0.0  # a turn started or ended: what it recorded is there now
    finally:
        events.unsubscribe(conversation_id, queue)
