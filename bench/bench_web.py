"""Viewer benchmark (docs/contributing.md#performance-targets): the web viewer against floors measured in the same run.

- open a 10,000-message conversation: the server's time to the first byte of ``GET /c/<id>`` (real uvicorn on
  127.0.0.1, raw socket client) vs ``store.load`` of the same conversation — target ≤ 0.5× (the page reads only its
  newest part); on SQLite and PostgreSQL;
- the list of 10,000 conversations (``GET /``, first byte) vs ``store.list_conversations(limit=50)``;
- a search over 100,000 messages: ``store.search_conversations`` and ``GET /?q=`` vs a raw FTS5 ``MATCH`` of the
  same words with ``sqlite3`` (no join, no snippet);
- live latency: another process appends a message to the SQLite file while a client holds ``/c/<id>/events``
  open; the time from its commit to the event's arrival — target ≤ 2 s (median).

Run: ``python bench/bench_web.py`` (PostgreSQL from ``THREADLINE_TEST_POSTGRES``, default the local test server).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import uvicorn

from _common import median, p95, print_table, record, timeit
from threadline import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from threadline.store import ConversationInfo, ImportItem, Store, open_store
from threadline.web import create_app

POSTGRES = os.environ.get("THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
WORDS = ["harbour", "lantern", "granite", "meadow", "copper", "willow", "tide", "ember", "quartz", "falcon"]


def make_messages(n: int, seed: int = 0) -> list[Message]:
    """Questions, tool calls, tool results and answers, with varied words so searches have work to do."""
    out: list[Message] = []
    for i in range(n):
        word = WORDS[(i * 7 + seed) % len(WORDS)]
        kind = i % 4
        if kind == 0:
            out.append(UserMessage(content=f"Question {i}: what about the {word} near city {i + seed}?"))
        elif kind == 1:
            call = ToolCall(id=f"call_{seed}_{i}", name="lookup", arguments={"topic": word, "n": i})
            out.append(AssistantMessage(tool_calls=[call], model="bench"))
        elif kind == 2:
            out.append(
                ToolMessage(tool_call_id=f"call_{seed}_{i - 1}", tool_name="lookup", content=f"{word} facts " * 8)
            )
        else:
            out.append(AssistantMessage(content=f"The {word} of city {i + seed} is fine. " * 3, model="bench"))
    return out


def imported(n_conversations: int, per_conversation: int) -> list[ImportItem]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        ImportItem(
            ConversationInfo(
                id=f"conv-{i:06d}",
                title=f"Conversation {i} about {WORDS[i % len(WORDS)]}",
                created_at=start + timedelta(seconds=i),
                updated_at=start + timedelta(seconds=i),
            ),
            make_messages(per_conversation, seed=i),
        )
        for i in range(n_conversations)
    ]


class Server:
    """The viewer served by uvicorn in a thread on a free loopback port."""

    def __init__(self, store: Store) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(create_app(store), log_level="warning", ws="none", access_log=False, lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def first_byte(self, path: str) -> float:
        """Seconds from sending ``GET path`` to the first byte of the answer (the whole answer is then drained)."""
        with socket.create_connection(("127.0.0.1", self.port)) as conn:
            request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nConnection: close\r\n\r\n".encode()
            start = time.perf_counter()
            conn.sendall(request)
            first = conn.recv(65536)
            elapsed = time.perf_counter() - start
            assert first.startswith(b"HTTP/1.1 200"), first[:80]
            while conn.recv(65536):
                pass
        return elapsed

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def bench_open(store: Store, label: str) -> list[tuple[str, Any, str, Any]]:
    store.import_conversations([ImportItem(imported(1, 0)[0].info, make_messages(10_000))])
    cid = "conv-000000"
    load = median(timeit(lambda: store.load(cid), repeat=9))
    server = Server(store)
    try:
        ttfb = median([server.first_byte(f"/c/{cid}") for _ in range(15)])
    finally:
        server.stop()
    ratio = ttfb / load
    return [
        (f"{label}: open a 10k-message conversation, first byte (ms)", ttfb * 1e3, "", None),
        (f"{label}: store.load of it, floor (ms)", load * 1e3, "", None),
        ("  ratio page / load", ratio, "<= 0.5x", ratio <= 0.5),
    ]


def bench_list(folder: Path) -> list[tuple[str, Any, str, Any]]:
    store = open_store(f"sqlite:///{folder / 'list.db'}")
    store.import_conversations(imported(10_000, 2))
    floor = median(timeit(lambda: store.list_conversations(limit=50), repeat=9))
    server = Server(store)
    try:
        ttfb = median([server.first_byte("/") for _ in range(15)])
    finally:
        server.stop()
        store.close()
    return [
        ("SQLite: list of 10k conversations, first byte of / (ms)", ttfb * 1e3, "", None),
        ("SQLite: store.list_conversations(limit=50), floor (ms)", floor * 1e3, "", None),
        ("  ratio page / floor", ttfb / floor, "", None),
    ]


def bench_search(folder: Path) -> list[tuple[str, Any, str, Any]]:
    path = folder / "search.db"
    store = open_store(f"sqlite:///{path}")
    store.import_conversations(imported(100, 1_000))  # 100,000 messages
    queries = ["lantern", "granite city", "quartz facts", "falc"]
    search = median(timeit(lambda: [store.search_conversations(q) for q in queries], repeat=7)) / len(queries)
    raw = sqlite3.connect(path)

    def floor() -> None:
        for q in queries:
            match = " ".join(f'"{w}"*' for w in q.split())
            raw.execute("SELECT rowid FROM message_search WHERE message_search MATCH ? LIMIT 51", (match,)).fetchall()

    fts = median(timeit(floor, repeat=7)) / len(queries)
    server = Server(store)
    try:
        page = median([server.first_byte("/?q=granite+city") for _ in range(9)])
    finally:
        server.stop()
        store.close()
        raw.close()
    return [
        ("SQLite: search 100k messages, store.search_conversations (ms)", search * 1e3, "", None),
        ("SQLite: same words, raw FTS5 MATCH, floor (ms)", fts * 1e3, "", None),
        ("  ratio search / floor", search / fts, "", None),
        ("SQLite: search page GET /?q=, first byte (ms)", page * 1e3, "", None),
    ]


APPENDER = """
import sys, time
from threadline import UserMessage
from threadline.store import open_store
store = open_store(sys.argv[1])
for i in range(int(sys.argv[3])):
    time.sleep(0.35)
    stamp = time.time()
    store.append(sys.argv[2], [UserMessage(content=f"ping {i} {stamp!r}")])
store.close()
"""


def bench_live(folder: Path) -> list[tuple[str, Any, str, Any]]:
    url = f"sqlite:///{folder / 'live.db'}"
    store = open_store(url)
    cid = store.create_conversation("live").id
    count = 20
    server = Server(store)
    latencies: list[float] = []
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as conn:
            conn.sendall(f"GET /c/{cid}/events?after=-1 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
            conn.settimeout(30)
            writer = subprocess.Popen([sys.executable, "-c", APPENDER, url, cid, str(count)])
            buffer = b""
            while len(latencies) < count:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                arrived = time.time()
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.startswith(b"data: ") and b"ping" in line:
                        html = json.loads(line[6:])["html"]
                        stamp = float(html.split("ping ", 1)[1].split("<", 1)[0].split()[1])
                        latencies.append(arrived - stamp)
            writer.wait(60)
    finally:
        server.stop()
        store.close()
    middle = median(latencies)
    return [
        (
            "SQLite: live latency, another process's append to the SSE event (ms, median)",
            middle * 1e3,
            "<= 2,000",
            middle <= 2.0,
        ),
        ("  same, p95 (ms)", p95(latencies) * 1e3, "", None),
    ]


def main() -> None:
    rows: list[tuple[str, Any, str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sqlite_store = open_store(f"sqlite:///{folder / 'open.db'}")
        rows += bench_open(sqlite_store, "SQLite")
        sqlite_store.close()
        schema = f"bench_web_{uuid.uuid4().hex[:8]}"
        postgres = open_store(f"{POSTGRES}{'&' if '?' in POSTGRES else '?'}schema={schema}")
        try:
            rows += bench_open(postgres, "PostgreSQL")
        finally:
            postgres.close()
            import psycopg

            with psycopg.connect(POSTGRES, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        rows += bench_list(folder)
        rows += bench_search(folder)
        rows += bench_live(folder)
    print_table("Viewer benchmark (medians)", ["measure", "value", "target", "met"], [
        (name, value, target, "" if met is None else met) for name, value, target, met in rows
    ])  # fmt: skip
    record(
        "bench_web", {name.strip(): {"value": value, "target": target, "met": met} for name, value, target, met in rows}
    )


if __name__ == "__main__":
    main()
