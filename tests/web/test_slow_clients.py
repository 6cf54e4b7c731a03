"""Slow clients against a real ``threadline serve``: a connection that sends nothing, or its request one byte at a
time (headers, a body, or the next request on a kept-alive connection), is closed within a bounded time, while a
normal client is served all along and an open live-update stream is left alone (before: uvicorn kept such
connections open for as long as the bytes kept coming, or forever when none came)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from threadline import AssistantMessage, UserMessage
from threadline.store import open_store

# The server's limit is 10 s for a whole request (threadline.web.request_deadline); this only proves it ended.
DEADLINE = 40.0
TRICKLE = 0.4  # seconds between two bytes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def threadline_serve(store_url: str) -> Iterator[str]:
    """``threadline serve`` in a subprocess; yields its base URL, stops it with Ctrl+C."""
    port = free_port()
    command = [sys.executable, "-m", "threadline", "serve", "--store", store_url, "--port", str(port)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert f"http://127.0.0.1:{port}/" in line, line + (process.stderr.read() if process.stderr else "")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.send_signal(signal.SIGINT)
            _, errors = process.communicate(timeout=30)
    assert "Traceback" not in errors, errors


class SlowClient(threading.Thread):
    """A raw connection that sends ``first`` at once, then ``then`` one byte every `TRICKLE` seconds (repeating it),
    reading whatever comes back, until the server closes the connection or `DEADLINE` passes."""

    def __init__(self, port: int, first: bytes, then: bytes) -> None:
        super().__init__(daemon=True)
        self.port, self.first, self.then = port, first, then
        self.closed_after: float | None = None
        self.received = b""
        self.done = threading.Event()  # set to hang up

    def run(self) -> None:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.settimeout(TRICKLE)
            try:
                sock.sendall(self.first)
                position = 0
                while time.monotonic() - started < DEADLINE and not self.done.is_set():
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        if self.then:
                            sock.sendall(self.then[position % len(self.then) : position % len(self.then) + 1])
                            position += 1
                        continue
                    if not data:
                        break
                    self.received += data
                else:
                    return  # still open at the deadline, or hung up
            except OSError:  # reset by the server while sending
                pass
        self.closed_after = time.monotonic() - started


def test_slow_clients_are_closed_and_the_others_served(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'viewer.db'}"
    store = open_store(store_url)
    try:
        conv = store.create_conversation("Live")
        store.append(conv.id, [UserMessage(content="Hi"), AssistantMessage(content="Hello", model="m")])
    finally:
        store.close()
    with threadline_serve(store_url) as url:
        port = int(url.rsplit(":", 1)[1])
        host = b"Host: 127.0.0.1\r\n"
        slow = {
            "sends nothing": SlowClient(port, b"", b""),
            "headers byte by byte": SlowClient(port, b"GET / HTTP/1.1\r\n", host + b"X-Slow: " + b"a" * 10_000),
            "a body byte by byte": SlowClient(
                port,
                b"POST /c/" + conv.id.encode() + b"/title HTTP/1.1\r\n" + host + b"Origin: " + url.encode() + b"\r\n"
                b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\ntitle=",
                b"x",
            ),
            "kept alive, then slow": SlowClient(
                port, b"GET / HTTP/1.1\r\n" + host + b"\r\n", b"GET / HTTP/1.1\r\n" + host + b"X-Slow: " + b"a" * 10_000
            ),
        }
        # A live-update stream: its request is whole, its response goes on; it must outlive the slow ones.
        live = SlowClient(port, b"GET /c/" + conv.id.encode() + b"/events?after=1 HTTP/1.1\r\n" + host + b"\r\n", b"")
        live.start()
        for client in slow.values():
            client.start()
        served = 0
        with httpx.Client(base_url=url, timeout=20) as http:
            while any(client.is_alive() for client in slow.values()):
                assert http.get("/").status_code == 200  # a normal client is served meanwhile
                served += 1
                time.sleep(0.5)
        not_closed = [name for name, client in slow.items() if client.closed_after is None]
        assert not_closed == [], f"still open after {DEADLINE} s: {not_closed}"
        assert live.closed_after is None and live.received.startswith(b"HTTP/1.1 200")
        live.done.set()
        live.join(timeout=10)
    assert served > 5
    assert slow["kept alive, then slow"].received.startswith(b"HTTP/1.1 200")
