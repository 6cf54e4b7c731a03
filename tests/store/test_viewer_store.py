"""What the web viewer asks of a store, on SQLite, PostgreSQL and memory: reading a log by sequence number (newest
page, older pages, what came after), the list's figures, full-text search kept in step with every append, import and
fork, and forks themselves."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    LLMError,
    StoreError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from threadline.store import ConversationInfo, ImportItem, Store


def numbered(n: int) -> list[UserMessage | AssistantMessage]:
    return [
        UserMessage(content=f"question {i}") if i % 2 == 0 else AssistantMessage(content=f"answer {i}", model="m")
        for i in range(n)
    ]


def tool_turn(text: str = "Weather in Paris?") -> list:
    call = ToolCall(id="call-w", name="get_weather", arguments={"city": "Paris"})
    return [
        UserMessage(content=text),
        AssistantMessage(tool_calls=[call], model="scripted-a"),
        ToolMessage(tool_call_id="call-w", tool_name="get_weather", content="22 C and sunny"),
        AssistantMessage(content="It is sunny in Paris.", model="scripted-b"),
    ]


# -- reading by sequence number --------------------------------------------------------------------------------
def test_pages_from_the_newest_end_cover_the_log_in_order(any_store: Store) -> None:
    conv = any_store.create_conversation("long")
    messages = numbered(25)
    any_store.append(conv.id, messages[:10])
    any_store.append(conv.id, messages[10:])

    page = any_store.read_tail(conv.id, 10)
    assert [m.content for m in page.messages] == [m.content for m in messages[15:]]
    assert page.has_older and len(page.seqs) == 10 and page.seqs == sorted(page.seqs)

    seen = list(page.messages)
    while page.has_older:
        assert page.first_seq is not None
        page = any_store.read_tail(conv.id, 10, before=page.first_seq)
        seen[:0] = page.messages
    assert [m.id for m in seen] == [m.id for m in messages]
    assert len(page.messages) == 5 and not page.has_older


def test_read_after_gives_what_was_appended_since(any_store: Store) -> None:
    conv = any_store.create_conversation()
    any_store.append(conv.id, numbered(3))
    last = any_store.read_tail(conv.id, 50).last_seq
    assert last is not None
    assert any_store.read_after(conv.id, last).messages == []

    later = [UserMessage(content="one more"), AssistantMessage(content="and another")]
    any_store.append(conv.id, later)
    after = any_store.read_after(conv.id, last)
    assert [m.id for m in after.messages] == [m.id for m in later]
    assert after.has_older and all(seq > last for seq in after.seqs)
    assert [m.content for m in any_store.read_after(conv.id, -1, limit=2).messages] == ["question 0", "answer 1"]


def test_reads_name_what_is_missing(any_store: Store) -> None:
    conv = any_store.create_conversation()
    message = UserMessage(content="hi")
    any_store.append(conv.id, [message])
    assert any_store.message_seq(conv.id, message.id) == any_store.read_tail(conv.id, 1).seqs[0]
    with pytest.raises(StoreError, match="no message 'nope'"):
        any_store.message_seq(conv.id, "nope")
    for read in (lambda: any_store.read_tail("ghost", 5), lambda: any_store.read_after("ghost", -1)):
        with pytest.raises(StoreError, match="no conversation 'ghost'"):
            read()
    with pytest.raises(ValueError):
        any_store.read_tail(conv.id, 0)


# -- the list's figures ----------------------------------------------------------------------------------------
def test_summaries_carry_latest_model_and_failures(any_store: Store) -> None:
    quiet = any_store.create_conversation("quiet")
    busy = any_store.create_conversation("busy")
    failure = AssistantMessage(content="par", error=LLMError(type="timeout", message="read timed out"), model="m-x")
    any_store.append(busy.id, [*tool_turn(), failure])
    any_store.append(busy.id, [failure])  # the same message again: stored once, counted once
    any_store.append(busy.id, [UserMessage(content="again"), AssistantMessage(content="ok", model="m-final")])

    summaries = any_store.list_summaries()
    assert [s.info.id for s in summaries] == [busy.id, quiet.id]  # most recently active first
    top = summaries[0]
    assert (top.model, top.failures, top.info.message_count, top.forked_from) == ("m-final", 1, 7, None)
    assert (summaries[1].model, summaries[1].failures) == (None, 0)
    assert [s.info.id for s in any_store.list_summaries(limit=1, offset=1)] == [quiet.id]


# -- search ----------------------------------------------------------------------------------------------------
def test_search_finds_words_in_every_kind_of_message(any_store: Store) -> None:
    weather = any_store.create_conversation("Trip planning")
    any_store.append(weather.id, tool_turn())
    other = any_store.create_conversation("Groceries")
    any_store.append(other.id, [UserMessage(content="Buy milk and Bread"), SystemMessage(content="Be brief.")])
    failed = any_store.create_conversation()
    any_store.append(
        failed.id, [AssistantMessage(content="", error=LLMError(type="rate_limit", message="quota exhausted"))]
    )

    def ids(query: str) -> list[str]:
        return [s.info.id for s in any_store.search_conversations(query)]

    assert ids("sunny") == [weather.id]  # a tool result
    assert ids("get_weather") == [weather.id]  # a tool call's name
    assert ids("PARIS") == [weather.id]  # case-insensitive
    assert ids("bre") == [other.id]  # words match as prefixes
    assert ids("milk bread") == [other.id]  # every word, anywhere in one message
    assert ids("milk sunny") == []
    assert ids("quota") == [failed.id]  # a failure's message
    assert ids("groceries") == [other.id]  # the title
    assert ids("nothing-like-this") == []


def test_search_reports_the_matching_message_and_a_snippet(any_store: Store) -> None:
    conv = any_store.create_conversation("notes")
    filler = " ".join(f"word{i}" for i in range(60))
    target = UserMessage(content=f"{filler} the treasure is under the old oak tree {filler}")
    any_store.append(conv.id, [UserMessage(content="nothing here"), target, AssistantMessage(content="ok")])
    (hit,) = any_store.search_conversations("treasure oak")
    assert hit.match_id == target.id
    assert hit.snippet is not None and "treasure is under the old oak" in hit.snippet
    assert hit.snippet.startswith("…") and len(hit.snippet) < 260


def test_search_query_syntax_is_never_an_error(any_store: Store) -> None:
    conv = any_store.create_conversation()
    any_store.append(conv.id, [UserMessage(content='he said "hello" -- AND NEAR(x) * OR')])
    for query in ['"hello', "hello*", "NEAR(", "-hello", "AND OR NOT", "h'ello", "(((", "a:b", "hello)"]:
        any_store.search_conversations(query)  # no error, whatever it matches
    assert [s.info.id for s in any_store.search_conversations('"hello"')] == [conv.id]
    assert any_store.search_conversations("  ... !!! ") == []


def test_search_keeps_in_step_with_appends_deletes_and_imports(any_store: Store) -> None:
    conv = any_store.create_conversation()
    message = UserMessage(content="zebra crossing")
    any_store.append(conv.id, [message])
    any_store.append(conv.id, [message])  # idempotent: one hit, not two
    assert len(any_store.search_conversations("zebra")) == 1

    imported = ImportItem(
        info=ConversationInfo(
            id="imported-1", title="old", created_at=datetime(2024, 1, 1, tzinfo=UTC), updated_at=datetime.now(UTC)
        ),
        messages=[UserMessage(content="an imported zebra")],
    )
    any_store.import_conversations([imported])
    hits = any_store.search_conversations("zebra")
    assert {s.info.id for s in hits} == {conv.id, "imported-1"}
    summary = next(s for s in any_store.list_summaries() if s.info.id == "imported-1")
    assert summary.info.message_count == 1

    any_store.delete_conversation(conv.id)
    assert [s.info.id for s in any_store.search_conversations("zebra")] == ["imported-1"]


def test_search_pages_newest_first(any_store: Store) -> None:
    made = []
    for i in range(5):
        conv = any_store.create_conversation(f"c{i}")
        any_store.append(conv.id, [UserMessage(content=f"common thing {i}")])
        made.append(conv.id)
    first = [s.info.id for s in any_store.search_conversations("common", limit=3)]
    rest = [s.info.id for s in any_store.search_conversations("common", limit=3, offset=3)]
    assert first + rest == made[::-1]


def test_search_counts_matching_messages_and_lists_them_in_one_conversation(any_store: Store) -> None:
    conv = any_store.create_conversation("zoo visit")
    log = [
        UserMessage(content="Is there a zebra?"),
        AssistantMessage(content="Yes, one zebra and two lions.", model="m"),
        UserMessage(content="And giraffes?"),
        AssistantMessage(content="No giraffes.", model="m"),
        UserMessage(content="Zebras again, please"),
    ]
    any_store.append(conv.id, log)
    other = any_store.create_conversation("zebra in the title only")
    any_store.append(other.id, [UserMessage(content="nothing to see")])

    found = {s.info.id: s for s in any_store.search_conversations("zebra")}
    assert found[conv.id].matches == 3 and found[conv.id].match_id == log[4].id
    assert found[other.id].matches == 0 and found[other.id].match_id is None

    hits = any_store.search_messages(conv.id, "zebra")
    assert [message_id for _, message_id in hits] == [log[0].id, log[1].id, log[4].id]  # log order
    assert [seq for seq, _ in hits] == [any_store.message_seq(conv.id, m.id) for m in (log[0], log[1], log[4])]
    assert [message_id for _, message_id in any_store.search_messages(conv.id, "zebra", limit=2)] == [
        log[0].id,
        log[1].id,
    ]
    assert any_store.search_messages(conv.id, "zebra lions") == [hits[1]]
    assert any_store.search_messages(conv.id, "  !!! ") == []
    assert any_store.search_messages(other.id, "zebra") == []  # the title is not a message
    with pytest.raises(StoreError):
        any_store.search_messages("no-such-conversation", "zebra")

    any_store.append(conv.id, [AssistantMessage(content="A zebra crossing.", model="m")])  # kept in step
    assert len(any_store.search_messages(conv.id, "zebra")) == 4


def test_message_position_counts_from_the_start_of_the_log(any_store: Store) -> None:
    conv = any_store.create_conversation()
    messages = numbered(30)
    any_store.append(conv.id, messages[:12])
    any_store.append(conv.id, messages[5:20])  # repeats skipped: the log holds each message once
    any_store.append(conv.id, messages[20:])
    assert [any_store.message_position(conv.id, m.id) for m in (messages[0], messages[11], messages[12])] == [1, 12, 13]
    assert any_store.message_position(conv.id, messages[29].id) == 30
    with pytest.raises(StoreError):
        any_store.message_position(conv.id, "no-such-message")
    with pytest.raises(StoreError):
        any_store.message_position("no-such-conversation", messages[0].id)


# -- forks -----------------------------------------------------------------------------------------------------
def test_fork_copies_the_log_up_to_a_message_and_leaves_the_original(any_store: Store) -> None:
    origin = any_store.create_conversation("Original")
    first, second = tool_turn(), tool_turn("And in Rome?")
    second[1] = AssistantMessage(
        tool_calls=[ToolCall(id="call-r", name="get_weather", arguments={"city": "Rome"})], model="m"
    )
    second[2] = ToolMessage(tool_call_id="call-r", tool_name="get_weather", content="18 C")
    any_store.append(origin.id, first + second)

    fork = any_store.fork_conversation(origin.id, first[3].id)
    assert fork.id != origin.id and fork.title == "Original (fork)" and fork.message_count == 4
    assert fork.metadata["forked_from"] == {"conversation": origin.id, "message": first[3].id}
    assert [m.id for m in any_store.load(fork.id)] == [m.id for m in first]
    assert len(any_store.load(origin.id)) == 8

    # The fork goes on by itself; the original does not move.
    any_store.append(fork.id, [UserMessage(content="What about Oslo?")])
    assert len(any_store.load(fork.id)) == 5 and len(any_store.load(origin.id)) == 8
    any_store.load(fork.id).validate()

    summary = next(s for s in any_store.list_summaries() if s.info.id == fork.id)
    assert (summary.forked_from, summary.model) == (origin.id, "scripted-b")
    assert [info.id for info in any_store.list_forks(origin.id)] == [fork.id]
    assert any_store.list_forks(fork.id) == []
    assert {s.info.id for s in any_store.search_conversations("oslo")} == {fork.id}
    assert {s.info.id for s in any_store.search_conversations("sunny")} == {fork.id, origin.id}


def test_fork_at_a_tool_call_keeps_its_whole_group(any_store: Store) -> None:
    origin = any_store.create_conversation()
    calls = [ToolCall(id=f"c{i}", name="t", arguments={}) for i in range(3)]
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=calls),
        *[ToolMessage(tool_call_id=f"c{i}", tool_name="t", content=str(i)) for i in range(3)],
        AssistantMessage(content="done"),
    ]
    any_store.append(origin.id, log)
    for at in (log[1], log[2], log[4]):
        fork = any_store.fork_conversation(origin.id, at.id, title="branch")
        kept = any_store.load(fork.id)
        assert [m.id for m in kept] == [m.id for m in log[:5]], at
        assert kept.pending_tool_calls() == []
        assert fork.title == "branch"


def test_fork_refuses_unknown_ids_and_writes_nothing(any_store: Store) -> None:
    origin = any_store.create_conversation()
    any_store.append(origin.id, [UserMessage(content="hi")])
    with pytest.raises(StoreError, match="no message 'nope'"):
        any_store.fork_conversation(origin.id, "nope")
    with pytest.raises(StoreError, match="no conversation 'ghost'"):
        any_store.fork_conversation("ghost", "nope")
    message_id = any_store.load(origin.id)[0].id
    any_store.fork_conversation(origin.id, message_id, id="taken")
    with pytest.raises(StoreError, match="already exists"):
        any_store.fork_conversation(origin.id, message_id, id="taken")
    assert len(any_store.list_conversations()) == 2


# -- the migration indexes the logs a database already holds ---------------------------------------------------
def _old_log() -> list:
    return [
        *tool_turn("Where is the lighthouse?"),
        AssistantMessage(content="half", error=LLMError(type="server", message="502"), model="m-old"),
    ]


def test_sqlite_migration_indexes_existing_logs(tmp_path) -> None:
    import sqlite3

    from threadline.serialization import encode_message
    from threadline.store.migrations import MIGRATIONS_TABLE, SQLITE_MIGRATIONS
    from threadline.store.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE {MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT)")
    for version, migration in enumerate(SQLITE_MIGRATIONS[:2], start=1):
        for statement in migration.sql():
            conn.execute(statement)
        conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?, '2024-01-01T00:00:00.000000Z')", (version, migration.name)
        )
    stamp = "2024-01-01T00:00:00.000000Z"
    conn.execute(
        "INSERT INTO conversations (key, id, title, created_at, updated_at, message_count, next_seq) "
        "VALUES (7, 'old', 'Old one', ?, ?, 5, 5)",
        (stamp, stamp),
    )
    conn.executemany(
        "INSERT INTO messages (conversation, id, seq, data) VALUES (7, ?, ?, ?)",
        [(m.id, seq, encode_message(m)) for seq, m in enumerate(_old_log())],
    )
    conn.commit()
    conn.close()

    with SQLiteStore(path) as store:
        assert [s.info.id for s in store.search_conversations("lighthouse")] == ["old"]
        (summary,) = store.list_summaries()
        assert (summary.model, summary.failures) == ("m-old", 1)
        assert [m.content for m in store.read_tail("old", 2).messages] == ["It is sunny in Paris.", "half"]


def test_postgres_migration_indexes_existing_logs() -> None:
    import psycopg

    from tests.conftest import POSTGRES_DSN
    from tests.store._backends import postgres_url
    from threadline.serialization import encode_message
    from threadline.store import open_store
    from threadline.store.migrations import MIGRATIONS_TABLE, POSTGRES_MIGRATIONS

    with postgres_url() as url:
        schema = url.rsplit("schema=", 1)[1]
        prefix = f'"{schema}".'
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
            conn.execute(f"CREATE TABLE {prefix}{MIGRATIONS_TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                         "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")  # fmt: skip
            for version, migration in enumerate(POSTGRES_MIGRATIONS[:2], start=1):
                for statement in migration.sql(prefix):
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {prefix}{MIGRATIONS_TABLE} (version, name) VALUES (%s, %s)", (version, migration.name)
                )
            conn.execute(
                f"INSERT INTO {prefix}conversations (id, title, created_at, updated_at, message_count, next_seq) "
                "VALUES ('old', 'Old one', now(), now(), 5, 5)"
            )
            for seq, message in enumerate(_old_log()):
                conn.execute(
                    f"INSERT INTO {prefix}messages (conversation_id, seq, id, data) VALUES ('old', %s, %s, %s)",
                    (seq, message.id, encode_message(message)),
                )
        with open_store(url) as store:
            assert [s.info.id for s in store.search_conversations("lighthouse")] == ["old"]
            (summary,) = store.list_summaries()
            assert (summary.model, summary.failures) == ("m-old", 1)


def test_a_fork_is_named_after_its_origin_and_numbered_past_its_siblings(any_store: Store) -> None:
    conv = any_store.create_conversation("Trip to Rome")
    log = [UserMessage(content="first"), AssistantMessage(content="one")]
    any_store.append(conv.id, log)
    names = [any_store.fork_conversation(conv.id, log[-1].id).title for _ in range(3)]
    assert names == ["Trip to Rome (fork)", "Trip to Rome (fork 2)", "Trip to Rome (fork 3)"]
    assert any_store.fork_conversation(conv.id, log[0].id, title="Mine").title == "Mine"
    untitled = any_store.create_conversation()
    any_store.append(untitled.id, [UserMessage(content="x")])
    assert any_store.fork_conversation(untitled.id, any_store.load(untitled.id)[0].id).title == "Untitled (fork)"
    in_library = Conversation.load(conv.id, any_store).fork()
    assert any_store.get_conversation(in_library.id).title == "Trip to Rome (fork 4)"
    titles = [info.title for info in any_store.list_conversations()]
    assert len(titles) == 8 and len(set(titles)) == 8  # no two rows alike
