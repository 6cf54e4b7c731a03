"""The fake OpenAI server with one more script item, `DropDuring`: it streams part of an answer, runs an action (end
the store's connections, stop its server), then streams the rest, so the action lands while a command shows the
answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.providers.servers import Answer, FakeOpenAI, Recorded


@dataclass(frozen=True)
class DropDuring:
    """Stream the first ``after`` events of ``answer``, run ``action`` (in the server's thread, the stream waiting),
    then stream the rest."""

    answer: Answer
    after: int
    action: Callable[[], Any]


class DroppingOpenAI(FakeOpenAI):
    """The fake OpenAI server, which also plays `DropDuring`."""

    async def _respond(self, writer: asyncio.StreamWriter, request: Recorded, item: Any) -> bool:
        if not isinstance(item, DropDuring):
            return await super()._respond(writer, request, item)
        events = self.render_events(item.answer, request)
        writer.write(self._head(200, "text/event-stream; charset=utf-8", (("Transfer-Encoding", "chunked"),)))
        for number, (event, data) in enumerate(events):
            if number == item.after:
                await writer.drain()
                await asyncio.to_thread(item.action)
            chunk = ((f"event: {event}\n" if event else "") + f"data: {data}\n\n").encode()
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
        if item.after >= len(events):
            await asyncio.to_thread(item.action)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
