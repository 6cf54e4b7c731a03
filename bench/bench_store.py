"""Storage benchmark (docs/contributing.md#performance-targets): the SQLite and PostgreSQL stores against floors
measured in the same run.

- write + read back 10,000 messages through `SQLiteStore` (one ``append``, one ``load``) vs raw ``sqlite3``
  ``executemany`` + ``SELECT`` of the same JSON payloads (already encoded: the floor does no serialization at all),
  same file settings (WAL, synchronous=NORMAL) — target ≤ 1.5×; also against the same raw calls made
  by hand from the message objects (msgspec encode before the insert, msgspec decode after the select), which is
  what the store does plus its ordering and idempotency;
- durable appends, one message per transaction (how the turn engine writes): SQLite from one writer — target
  ≥ 2,000 msg/s; PostgreSQL from 4 concurrent writer *processes*, each appending to its own conversation and, in a
  second run, all four to one shared conversation — target ≥ 1,000 msg/s; the first against a floor of raw psycopg
  from 4 processes (one connection each, autocommit off, one single-row ``INSERT`` of the same message, encoded
  before the clock starts, and a commit per message, into a scratch table keyed like the messages table), the two
  run in turns, three rounds, medians — target ≥ 0.7×;
- load of a 10,000-message conversation (ms), and listing 10,000 conversations (ms), on both backends;
- ``threadline logs show ID --all`` of a 100,000-message SQLite conversation, output to a file (s), against a floor
  run the same way: a script that loads the log (``store.load``) and prints each message's text, no boxes.

Run: ``python bench/bench_store.py`` (PostgreSQL from ``THREADLINE_TEST_POSTGRES``, default the local test server).
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import median, print_table, record, timeit
from threadline import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from threadline.serialization import decode_messages, encode_message
from threadline.store import ConversationInfo, ImportItem, open_store

POSTGRES = os.environ.get("THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
N = 10_000
LOG_SHOWN = 100_000
RAW_TABLE = "raw_messages"
ROUNDS = 3
FLOOR_SCRIPT = """
import sys
from threadline.store import open_store

with open_store(sys.argv[1]) as store:
    write = sys.stdout.write
    for message in store.load(sys.argv[2]):
        write((message.content or "") + "\\n")
"""


def make_messages(n: int) -> list[Message]:
    """A realistic mix: questions, tool calls, tool results, answers."""
    out: list[Message] = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            out.append(UserMessage(content=f"Question {i}: what is the weather in city number {i} today?"))
        elif kind == 1:
            call = ToolCall(id=f"call_{i}", name="get_weather", arguments={"city": f"City {i}", "units": "metric"})
            out.append(AssistantMessage(tool_calls=[call], model="scripted"))
        elif kind == 2:
            out.append(ToolMessage(tool_call_id=f"call_{i - 1}", tool_name="get_weather", content="22 C, sunny " * 8))
        else:
            out.append(AssistantMessage(content=f"It is 22 C and sunny in city {i}. " * 3, model="scripted"))
    return out


def _raw_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def bench_roundtrip(folder: Path, messages: list[Message]) -> tuple[float, float, float]:
    """Seconds for write + read back of the messages: (store, raw sqlite3 of ready payloads, raw sqlite3 by hand
    from the message objects: msgspec encode, executemany, select, msgspec decode)."""
    payloads = [(m.id, encode_message(m)) for m in messages]
    counter = iter(range(1_000_000))

    raw = _raw_connection(folder / "raw.db")
    raw.execute("CREATE TABLE messages (conversation_id TEXT, id TEXT, data BLOB)")

    def floor() -> None:
        cid = f"c{next(counter)}"
        raw.execute("BEGIN IMMEDIATE")
        raw.executemany("INSERT INTO messages VALUES (?, ?, ?)", [(cid, mid, data) for mid, data in payloads])
        raw.execute("COMMIT")
        rows = raw.execute("SELECT data FROM messages WHERE conversation_id = ? ORDER BY rowid", (cid,)).fetchall()
        assert len(rows) == len(payloads)

    def by_hand() -> None:
        cid = f"c{next(counter)}"
        raw.execute("BEGIN IMMEDIATE")
        raw.executemany("INSERT INTO messages VALUES (?, ?, ?)", [(cid, m.id, encode_message(m)) for m in messages])
        raw.execute("COMMIT")
        rows = raw.execute("SELECT data FROM messages WHERE conversation_id = ? ORDER BY rowid", (cid,)).fetchall()
        assert len(decode_messages([row[0] for row in rows])) == len(messages)

    store = open_store(f"sqlite:///{folder / 'store.db'}")

    def ours() -> None:
        cid = store.create_conversation().id
        store.append(cid, messages)
        assert len(store.load(cid)) == len(messages)

    # Interleave the three so machine noise hits them alike.
    times: dict[str, list[float]] = {"floor": [], "by_hand": [], "ours": []}
    for _ in range(7):
        for name, fn in (("floor", floor), ("by_hand", by_hand), ("ours", ours)):
            times[name] += timeit(fn, repeat=1, warmup=0)
    store.close()
    raw.close()
    return median(times["ours"]), median(times["floor"]), median(times["by_hand"])


def bench_sqlite_appends(folder: Path, messages: list[Message], count: int = 3000) -> float:
    """Messages per second, one append (one transaction) each."""
    with open_store(f"sqlite:///{folder / 'appends.db'}") as store:
        cid = store.create_conversation().id
        start = time.perf_counter()
        for message in messages[:count]:
            store.append(cid, [message])
        elapsed = time.perf_counter() - start
        assert len(store.load(cid)) == count
    return count / elapsed


def _raw_pg_writer(url: str, conversation_id: str, count: int, start_at: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """The floor of `_pg_writer`: one psycopg connection (autocommit off), one single-row INSERT of the same
    message (encoded before the clock starts) per transaction, then commit."""
    import psycopg

    rows = [
        (conversation_id, seq, message.id, encode_message(message)) for seq, message in enumerate(make_messages(count))
    ]
    with psycopg.connect(url) as conn:
        conn.execute("SELECT 1")  # connect before the clock starts
        conn.commit()
        while time.time() < start_at:
            time.sleep(0.001)
        begin = time.perf_counter()
        for row in rows:
            conn.execute(f"INSERT INTO {RAW_TABLE} (conversation_id, seq, id, data) VALUES (%s, %s, %s, %s)", row)
            conn.commit()
        out.put((begin, time.perf_counter()))


def _pg_writer(url: str, conversation_id: str, count: int, start_at: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    messages = make_messages(count)
    with open_store(url) as store:
        store.load(conversation_id)  # connect before the clock starts
        while time.time() < start_at:
            time.sleep(0.001)
        begin = time.perf_counter()
        for message in messages:
            store.append(conversation_id, [message])
        out.put((begin, time.perf_counter()))


def _run_writers(target: Any, url: str, ids: list[str], writers: int, count: int) -> float:
    """Messages per second over ``writers`` processes running ``target`` (writer n on ``ids[n % len(ids)]``),
    started together at a common time."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start_at = time.time() + 3.0
    processes = [
        context.Process(target=target, args=(url, ids[n % len(ids)], count, start_at, queue)) for n in range(writers)
    ]
    for process in processes:
        process.start()
    spans = [queue.get(timeout=120) for _ in processes]
    for process in processes:
        process.join()
    elapsed = max(end for _, end in spans) - min(begin for begin, _ in spans)
    return writers * count / elapsed


def bench_pg_appends(url: str, writers: int, count: int, shared: bool) -> float:
    """Messages per second over all writers (each a process), one append (one transaction) each."""
    with open_store(url) as store:
        ids = [store.create_conversation().id for _ in range(1 if shared else writers)]
    rate = _run_writers(_pg_writer, url, ids, writers, count)
    with open_store(url) as store:
        assert sum(len(store.load(cid)) for cid in ids) == writers * count
    return rate


def bench_raw_pg_appends(url: str, schema: str, writers: int, count: int) -> float:
    """The floor of `bench_pg_appends` (each writer its own conversation): messages per second of raw psycopg
    single-row INSERTs, one transaction each, into a scratch table keyed like the store's messages table."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(f'DROP TABLE IF EXISTS "{schema}".{RAW_TABLE}')
        conn.execute(
            f'CREATE TABLE "{schema}".{RAW_TABLE} (conversation_id TEXT NOT NULL, seq BIGINT NOT NULL, '
            "id TEXT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (conversation_id, seq), UNIQUE (conversation_id, id))"
        )
    # The writers connect with the scratch schema first on their search_path, so the INSERT names the bare table.
    raw_url = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    rate = _run_writers(_raw_pg_writer, raw_url, [f"raw-{n}" for n in range(writers)], writers, count)
    with psycopg.connect(url) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".{RAW_TABLE}').fetchone()
        assert row is not None and row[0] == writers * count
    return rate


def bench_load_and_list(url: str, messages: list[Message]) -> tuple[float, float]:
    """Milliseconds to load a 10,000-message conversation, and to list 10,000 conversations."""
    with open_store(url) as store:
        cid = store.create_conversation().id
        store.append(cid, messages)
        load = median(timeit(lambda: store.load(cid), repeat=5))
        stamp = datetime.now(UTC)
        items = [
            ImportItem(
                ConversationInfo(id=f"bulk-{i:05d}", title=f"Conversation {i}", created_at=stamp, updated_at=stamp), []
            )
            for i in range(N - 1)
        ]
        store.import_conversations(items)
        listed = median(timeit(lambda: store.list_conversations(limit=N), repeat=5))
        assert len(store.list_conversations(limit=N)) == N
    return load * 1000, listed * 1000


def bench_logs_show(folder: Path) -> tuple[float, float]:
    """Seconds for ``threadline logs show ID --all`` of a 100,000-message SQLite conversation (output to a file), and
    for the floor: a process that loads the same log and prints each message's text."""
    url = f"sqlite:///{folder / 'shown.db'}"
    messages = make_messages(LOG_SHOWN)
    with open_store(url) as store:
        cid = store.create_conversation("shown").id
        for start in range(0, LOG_SHOWN, 10_000):
            store.append(cid, messages[start : start + 10_000])
    env = {**os.environ, "COLUMNS": "120"}

    def run(*args: str) -> float:
        with open(folder / "shown.txt", "w", encoding="utf-8") as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, *args], stdout=out, env=env, check=True)
            return time.perf_counter() - start

    ours = median([run("-m", "threadline", "logs", "show", cid, "--all", "--store", url) for _ in range(3)])
    floor = median([run("-c", FLOOR_SCRIPT, url, cid) for _ in range(3)])
    return ours, floor


def main() -> None:
    messages = make_messages(N)
    schema = f"tl_bench_{uuid.uuid4().hex[:10]}"
    pg_url = f"{POSTGRES}{'&' if '?' in POSTGRES else '?'}schema={schema}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            store_s, floor_s, hand_s = bench_roundtrip(folder, messages)
            sqlite_rate = bench_sqlite_appends(folder, messages)
            sqlite_load, sqlite_list = bench_load_and_list(f"sqlite:///{folder / 'load.db'}", messages)
            shown_s, shown_floor_s = bench_logs_show(folder)
        # The store's writers and the raw floor in turns (the order swapped each round), so both see the same
        # machine state; the median of each.
        own_rates: list[float] = []
        raw_rates: list[float] = []
        for turn in range(ROUNDS):
            runs = [
                lambda: own_rates.append(bench_pg_appends(pg_url, writers=4, count=1000, shared=False)),
                lambda: raw_rates.append(bench_raw_pg_appends(POSTGRES, schema, writers=4, count=1000)),
            ]
            for run in runs if turn % 2 == 0 else reversed(runs):
                run()
        pg_rate, pg_raw_rate = median(own_rates), median(raw_rates)
        pg_shared_rate = bench_pg_appends(pg_url, writers=4, count=1000, shared=True)
        pg_load, pg_list = bench_load_and_list(pg_url, messages)
    finally:
        import psycopg

        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    ratio = store_s / floor_s
    rows = [
        ["SQLite write+read 10k msgs: store (ms)", store_s * 1000, "", ""],
        ["SQLite write+read 10k msgs: raw sqlite3 floor (ms)", floor_s * 1000, "", ""],
        ["  ratio store / raw", ratio, "<= 1.5x", ratio <= 1.5],
        ["SQLite write+read 10k msgs: by hand, with msgspec encode/decode (ms)", hand_s * 1000, "", ""],
        ["  ratio store / by hand", store_s / hand_s, "", ""],
        ["SQLite durable appends, 1 msg/tx, 1 writer (msg/s)", sqlite_rate, ">= 2,000", sqlite_rate >= 2000],
        ["PostgreSQL durable appends, 4 writer processes (msg/s)", pg_rate, ">= 1,000", pg_rate >= 1000],
        [f"  floor: raw psycopg INSERT+commit, 4 processes, in turns x{ROUNDS} (msg/s)", pg_raw_rate, "", ""],
        ["  ratio store / raw", pg_rate / pg_raw_rate, ">= 0.7x", pg_rate / pg_raw_rate >= 0.7],
        ["  same, 4 processes on one conversation (msg/s)", pg_shared_rate, "", ""],
        ["SQLite load 10k-message conversation (ms)", sqlite_load, "", ""],
        ["PostgreSQL load 10k-message conversation (ms)", pg_load, "", ""],
        ["SQLite list 10k conversations (ms)", sqlite_list, "", ""],
        ["PostgreSQL list 10k conversations (ms)", pg_list, "", ""],
        ["logs show --all, 100k-message SQLite log, to a file (s)", shown_s, "", ""],
        ["  floor: store.load + print each message's text (s)", shown_floor_s, "", ""],
        ["  ratio logs show / floor", shown_s / shown_floor_s, "", ""],
    ]
    print_table("Store benchmark (medians)", ["measure", "value", "target", "met"], rows)
    record(
        "store",
        {
            "sqlite_roundtrip_10k_ms": store_s * 1000,
            "raw_sqlite_roundtrip_10k_ms": floor_s * 1000,
            "sqlite_roundtrip_ratio": ratio,
            "raw_sqlite_by_hand_with_msgspec_10k_ms": hand_s * 1000,
            "sqlite_roundtrip_ratio_vs_by_hand": store_s / hand_s,
            "sqlite_appends_per_s": sqlite_rate,
            "postgres_appends_per_s_4_processes": pg_rate,
            "raw_postgres_inserts_per_s_4_processes": pg_raw_rate,
            "postgres_appends_ratio_vs_raw": pg_rate / pg_raw_rate,
            "postgres_appends_rounds_per_s": own_rates,
            "raw_postgres_inserts_rounds_per_s": raw_rates,
            "postgres_appends_per_s_4_processes_one_conversation": pg_shared_rate,
            "sqlite_load_10k_ms": sqlite_load,
            "postgres_load_10k_ms": pg_load,
            "sqlite_list_10k_ms": sqlite_list,
            "postgres_list_10k_ms": pg_list,
            "logs_show_all_100k_s": shown_s,
            "logs_show_all_100k_floor_s": shown_floor_s,
            "targets_met": {
                "roundtrip_ratio_le_1_5": ratio <= 1.5,
                "sqlite_appends_ge_2000": sqlite_rate >= 2000,
                "postgres_appends_ge_1000": pg_rate >= 1000,
                "postgres_appends_ratio_vs_raw_ge_0_7": pg_rate / pg_raw_rate >= 0.7,
            },
        },
    )


if __name__ == "__main__":
    main()
