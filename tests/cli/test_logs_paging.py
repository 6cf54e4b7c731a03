"""``threadline logs show`` pages a long log (issue 8, item 16): the newest 100 messages by default, with a line saying
how many were left out and how to see them; ``--last N``, ``--offset K --limit N``, ``--all``; a page never separates
a tool result from its call; ``--json`` prints the whole log unless a page is asked for. Subprocesses, SQLite and
PostgreSQL."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import sqlite3

import psycopg

from tests.conftest import POSTGRES_DSN
from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, MessageList, ToolCall, ToolMessage, UserMessage
from threadline.messages import Message
from threadline.store import Store


def long_log(store: Store, turns: int = 60) -> tuple[str, list[Message]]:
    """``turns`` turns of: question, a call, its result, an answer (4 messages each)."""
    messages: list[Message] = []
    for turn in range(turns):
        call = ToolCall(id=f"call_{turn}", name="lookup", arguments={"turn": turn})
        messages += [
            UserMessage(content=f"question {turn:03d}"),
            AssistantMessage(tool_calls=[call]),
            ToolMessage(tool_call_id=call.id, tool_name="lookup", content=f"result {turn:03d}"),
            AssistantMessage(content=f"answer {turn:03d}"),
        ]
    info = store.create_conversation("long")
    store.append(info.id, messages)
    return info.id, messages


def test_a_long_log_shows_its_newest_page_and_says_how_to_see_more(store_url: str, store: Store) -> None:
    conversation_id, _ = long_log(store)  # 240 messages
    done = run_cli("logs", "show", conversation_id, "--store", store_url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "240 messages" in out
    assert "140 earlier message(s) not shown" in out
    assert "--last N" in out and "--all" in out
    assert "question 035" in out and "answer 059" in out  # the page starts at message 140: question 035
    assert "answer 034" not in out and "question 000" not in out
    assert "later message(s) not shown" not in out


def test_last_offset_limit_and_all(store_url: str, store: Store) -> None:
    conversation_id, _ = long_log(store, turns=30)  # 120 messages
    last = run_cli("logs", "show", conversation_id, "--last", "4", "--store", store_url).stdout
    assert "question 029" in last and "answer 029" in last and "answer 028" not in last
    assert "116 earlier message(s) not shown" in last

    first = run_cli("logs", "show", conversation_id, "--offset", "0", "--limit", "8", "--store", store_url).stdout
    assert "question 000" in first and "answer 001" in first and "question 002" not in first
    assert "earlier message(s) not shown" not in first
    assert "112 later message(s) not shown" in first and "--offset 8" in first

    everything = run_cli("logs", "show", conversation_id, "--all", "--store", store_url).stdout
    assert "question 000" in everything and "answer 029" in everything and "not shown" not in everything


def test_an_offset_past_the_end_is_one_clear_line(store_url: str, store: Store) -> None:
    """Before: exit 0, no message, and "… 40 earlier message(s) not shown (messages 40–39 of 40)"."""
    conversation_id, _ = long_log(store, turns=10)  # 40 messages
    for extra in ([], ["--limit", "5"], ["--json"]):
        done = run_cli("logs", "show", conversation_id, "--offset", "40", *extra, "--store", store_url)
        assert done.returncode == 2, done.stdout
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert lines == ["Error: --offset 40 is past the end: the conversation has 40 message(s), at positions 0–39"]
    last = run_cli("logs", "show", conversation_id, "--offset", "39", "--store", store_url)
    assert last.returncode == 0 and "answer 009" in last.stdout


def test_a_page_never_starts_on_a_tool_result_without_its_call(store_url: str, store: Store) -> None:
    conversation_id, _ = long_log(store, turns=10)
    # The newest 2 messages would start at "result 009": the page starts at its call instead.
    done = run_cli("logs", "show", conversation_id, "--last", "2", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert '→ lookup({"turn": 9})' in done.stdout and "← result 009" in done.stdout
    assert "37 earlier message(s) not shown" in done.stdout
    middle = run_cli("logs", "show", conversation_id, "--offset", "6", "--limit", "3", "--store", store_url)
    assert '→ lookup({"turn": 1})' in middle.stdout and "← result 001" in middle.stdout


def test_json_prints_the_whole_log_unless_a_page_is_asked_for(store_url: str, store: Store) -> None:
    conversation_id, messages = long_log(store, turns=40)  # 160 messages, more than a page
    whole = run_cli("logs", "show", conversation_id, "--json", "--store", store_url)
    assert whole.returncode == 0, whole.stderr
    assert list(MessageList.from_json(whole.stdout)) == messages
    page = run_cli("logs", "show", conversation_id, "--json", "--last", "2", "--store", store_url)
    assert list(MessageList.from_json(page.stdout)) == messages[-3:]  # starts at the call of the last result


def test_conflicting_page_options_are_one_line_errors(store_url: str, store: Store) -> None:
    conversation_id, _ = long_log(store, turns=2)
    for options in (["--all", "--last", "3"], ["--last", "3", "--offset", "1"], ["--last", "0"]):
        done = run_cli("logs", "show", conversation_id, *options, "--store", store_url)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert [line for line in done.stderr.splitlines() if line.startswith("Error")], done.stderr


def damage_first_message(store_url: str, conversation_id: str) -> None:
    """Overwrite the stored bytes of a conversation's first message with something that is not a message."""
    if store_url.startswith("sqlite://"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        conn.execute(
            'UPDATE messages SET data = CAST(\'{"not": "a message"}\' AS BLOB) WHERE seq = 0 AND conversation = '
            "(SELECT key FROM conversations WHERE id = ?)",
            (conversation_id,),
        )
        conn.commit()
        conn.close()
    else:
        schema = store_url.rsplit("schema=", 1)[1]
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
            conn.execute(
                f'UPDATE "{schema}".messages SET data = \'{{"not": "a message"}}\'::bytea '
                "WHERE seq = 0 AND conversation_id = %s",
                (conversation_id,),
            )


def test_a_page_reads_only_the_messages_it_shows(store_url: str, store: Store) -> None:
    """A long log's newest page is read without the rest of the log: a damaged first message does not keep it from
    showing, while --all, which needs that message, says what is wrong in one line."""
    conversation_id, _ = long_log(store, turns=30)  # 120 messages
    damage_first_message(store_url, conversation_id)
    for options in ([], ["--last", "2"], ["--json", "--last", "2"]):
        done = run_cli("logs", "show", conversation_id, *options, "--store", store_url)
        assert done.returncode == 0, (options, done.stderr)
    newest = run_cli("logs", "show", conversation_id, "--store", store_url).stdout
    assert "question 005" in newest and "answer 029" in newest and "20 earlier message(s) not shown" in newest
    everything = run_cli("logs", "show", conversation_id, "--all", "--store", store_url)
    assert everything.returncode != 0 and "Traceback" not in everything.stderr
