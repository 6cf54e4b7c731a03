"""Server-sent events read from the bytes of a streamed answer (the WHATWG ``text/event-stream`` format).

Every streamed answer of the HTTP adapters comes this way, one event per token or so, so the reader works on whole
chunks: a chunk is split into lines with bytes methods and its finished events are handed over together, instead
of passing each line through a chain of async generators and an object per field (what httpx-sse does; this reader
took about a tenth off a streamed tool round, `bench/bench_http.py`).

The format, as the standard reads it:

- lines end with CRLF, LF or CR (a CR at the end of a chunk waits for the next one, which may start with its LF);
- a line starting with ``:`` is a comment; ``name: value`` sets a field (one space after the colon is dropped); a
  line without a colon is a field with an empty value; fields other than ``event`` and ``data`` are ignored;
- ``data`` lines add up, joined by LF; a blank line ends the event, which is dispatched only when it has data;
- a byte-order mark at the very start is skipped; bytes that are not UTF-8 read as U+FFFD;
- an event the stream ends without finishing (no blank line after it) is dropped.

One limit the standard does not set: a line still unfinished after `LINE_LIMIT` bytes stops the stream with a
`ModelError` of type ``bad_response``, so a broken server cannot fill memory with a line that never ends.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from typing import NamedTuple

from ...errors import ModelError

__all__ = ["LINE_LIMIT", "Event", "EventReader", "read_events"]

LINE_LIMIT = 64 * 1024 * 1024  # far above any one event a provider sends (a whole response is a few MB at most)
_BOM = b"\xef\xbb\xbf"


class Event(NamedTuple):
    """One dispatched event: its type (``""`` when the stream names none) and its data."""

    event: str
    data: str


class EventReader:
    """Turns chunks of a stream into events: `feed` each chunk as it comes and take the events it finished."""

    def __init__(self, line_limit: int = LINE_LIMIT) -> None:
        self._line_limit = line_limit
        self._rest: list[bytes] = []  # the start of a line no line end has finished yet
        self._rest_size = 0
        self._held_cr = False  # the last chunk ended on a CR, which may be the first half of a CRLF
        self._first_line = True  # the line a byte-order mark may start
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` finishes, in order."""
        if not chunk:
            return []
        if self._held_cr:
            chunk = b"\r" + chunk  # it ends a line either way: with the LF this chunk may start with, or alone
            self._held_cr = False
        elif b"\n" not in chunk and b"\r" not in chunk:
            self._rest.append(chunk)  # no line ends yet: kept in pieces, joined once (no copying per chunk)
            self._grown(len(chunk))
            return []
        if self._rest:
            self._rest.append(chunk)
            chunk = b"".join(self._rest)
            self._rest = []
            self._rest_size = 0
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
            self._held_cr = True
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = chunk.split(b"\n")
        if rest or self._held_cr:
            self._rest = [rest]
            self._grown(len(rest))
        return self._lines(lines)

    def _grown(self, size: int) -> None:
        self._rest_size += size
        if self._rest_size > self._line_limit:
            raise ModelError(
                f"The server sent a stream line longer than {self._line_limit:,} bytes without ending it; "
                "threadline stopped reading the stream.",
                type="bad_response",
            )

    def finish(self) -> list[Event]:
        """The events the stream's last bytes finished: only a line the stream's last CR ended is left to read (an
        unfinished line, and an event no blank line ended, are dropped)."""
        rest, self._rest, self._rest_size = self._rest, [], 0
        if self._held_cr:
            self._held_cr = False
            return self._lines([b"".join(rest)])
        return []

    def _lines(self, lines: list[bytes]) -> list[Event]:
        if self._first_line and lines:
            self._first_line = False
            lines[0] = lines[0].removeprefix(_BOM)
        events: list[Event] = []
        for line in lines:
            if not line:
                if self._data:
                    events.append(Event(self._event, "\n".join(self._data)))
                    self._data = []
                self._event = ""
                continue
            if line[0] == 0x3A:  # ":" starts a comment
                continue
            name, colon, value = line.partition(b":")
            if colon and value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self._data.append(value.decode("utf-8", "replace"))
            elif name == b"event":
                self._event = value.decode("utf-8", "replace")
        return events


async def read_events(chunks: AsyncIterable[bytes]) -> AsyncGenerator[Event, None]:
    """The events of a stream, read from its chunks as they come."""
    reader = EventReader()
    feed = reader.feed
    async for chunk in chunks:
        for event in feed(chunk):
            yield event
    for event in reader.finish():
        yield event
