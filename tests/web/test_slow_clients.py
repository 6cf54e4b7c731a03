"""Slow clients against a real ``threadline serve``: a connection that sends nothing, or its request one byte at a
time (headers, a body, or the next request on a kept-alive connection), is closed within a bounded time, while a
normal client is served all along and an open live-update stream is left alone (before: uvicorn kept such
connections open for as long as the bytes kept coming, or forever when none came)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.web._serve_process import DEADLINE, SlowClient, threadline_serve
from threadline import AssistantMessage, UserMessage
from threadline.store import open_store


def test_slow_clients_are_closed_and_the_others_served(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'viewer.db'}"
    store = open_store(store_url)
    try:
        conv = store.create_conversation("Live")
        store.append(conv.id, [UserMessage(content="Hi"), AssistantMessage(content="Hello", model="m")])
    finally:
        store.close()
    with threadline_serve(store_url) as serving:
        url, port = serving.url, serving.port
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
    assert "Traceback" not in serving.errors, serving.errors
    assert slow["kept alive, then slow"].received.startswith(b"HTTP/1.1 200")
