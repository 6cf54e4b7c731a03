"""`Store.delete_conversation` leaves nothing of the conversation behind, on SQLite, PostgreSQL and the in-memory store:
its messages and search rows, artifacts, cached context summaries and the pages it made (the viewer must not keep
serving a deleted conversation's HTML). A page that a fork also shows passes to the fork instead, and goes with it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.conftest import POSTGRES_DSN
from tests.store._backends import postgres_url
from threadline import (
    AssistantMessage,
    ContextSettings,
    Conversation,
    ConversationConfig,
    StoreError,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from threadline.store import Store, open_store
from threadline.store.base import conversation_cache_prefix
from threadline.testing import ScriptedModel
from threadline.toolboxes import Pages


def make_page(store: Store, conversation_id: str, title: str) -> str:
    """A turn of ``conversation_id`` that calls ``Pages.generate_ui``: the page is saved and the tool result (with
    its ``page_id``) is in the log, as a real turn leaves them. Returns the page id."""
    answer = Pages(store).generate_ui(title, f"<h1>{title}</h1>", conversation_id=conversation_id)
    call = ToolCall(id=f"call-{title}", name="Pages.generate_ui", arguments={"title": title, "html": "…"})
    store.append(
        conversation_id,
        [
            UserMessage(content=f"make {title}"),
            AssistantMessage(tool_calls=[call]),
            ToolMessage(tool_call_id=call.id, tool_name=call.name, content=json.dumps(answer)),
            AssistantMessage(content=f"{title} is ready"),
        ],
    )
    return str(answer["page_id"])


def gone(store: Store, page_id: str) -> bool:
    try:
        store.get_page(page_id)
    except StoreError:
        return True
    return False


def last_id(store: Store, conversation_id: str) -> str:
    return store.load(conversation_id)[-1].id


def test_deleting_a_conversation_deletes_the_pages_it_made(any_store: Store) -> None:
    doomed = any_store.create_conversation("doomed")
    other = any_store.create_conversation("other")
    first = make_page(any_store, doomed.id, "first")
    second = make_page(any_store, doomed.id, "second")
    kept = make_page(any_store, other.id, "kept")
    loose = any_store.save_page("Loose", "<p>no conversation</p>")

    any_store.delete_conversation(doomed.id)
    assert gone(any_store, first) and gone(any_store, second)
    assert any_store.list_pages(doomed.id) == []
    assert [p.id for p in any_store.list_pages(other.id)] == [kept]  # others' pages are untouched
    assert any_store.get_page(loose.id).html == "<p>no conversation</p>"


def test_a_deleted_conversation_leaves_nothing_an_id_reused_later_could_see(any_store: Store) -> None:
    doomed = any_store.create_conversation("doomed", id="doomed")
    neighbour = any_store.create_conversation("neighbour", id="doomed:2")  # its cache keys share doomed's prefix
    any_store.append(doomed.id, [UserMessage(content="zanzibar secret plans")])
    any_store.save_artifact(doomed.id, "out", "the full output")
    make_page(any_store, doomed.id, "plans")
    for info in (doomed, neighbour):
        any_store.cache_put(f"{conversation_cache_prefix(info.id)}latest", {"text": f"summary of {info.id}"})
    any_store.cache_put("generate:abc", {"result": "not a conversation's"})

    any_store.delete_conversation(doomed.id)
    assert any_store.cache_get(f"{conversation_cache_prefix(doomed.id)}latest") is None
    assert any_store.cache_get(f"{conversation_cache_prefix(neighbour.id)}latest") == {"text": "summary of doomed:2"}
    assert any_store.cache_get("generate:abc") == {"result": "not a conversation's"}
    assert any_store.search_conversations("zanzibar") == []

    any_store.create_conversation(id=doomed.id)  # the id is free again, and nothing of the old one shows through
    assert len(any_store.load(doomed.id)) == 0
    assert any_store.list_pages(doomed.id) == []
    assert any_store.search_conversations("zanzibar") == []
    with pytest.raises(StoreError):
        any_store.read_artifact(doomed.id, "out")
    assert any_store.cache_get(f"{conversation_cache_prefix(doomed.id)}latest") is None


def test_the_summaries_a_conversation_cached_go_with_it(any_store: Store) -> None:
    summarizer = ScriptedModel(["They talked about apples.", "They talked about apples."])
    config = ConversationConfig(
        model=ScriptedModel(["a1", "a2"]), context=ContextSettings(max_messages=2, summarizer=summarizer)
    )
    conv = Conversation(store=any_store, config=config)
    conv.continuation.request("apples?").prompt()
    conv.continuation.request("pears?").prompt()  # "apples?" falls out of the window: it is summarized and cached
    assert len(summarizer.requests) == 1
    window = list(conv.messages)[:3]  # the log the second request was built from

    def build_again() -> None:
        """Build that request again, in a conversation of the same id and log."""
        again = Conversation(window, config, store=any_store, id=conv.id)
        asyncio.run(again.host.build_request_context(again.host.resolve_tools()))

    latest = f"{conversation_cache_prefix(conv.id)}latest"  # the rolling summary, kept in the store's cache
    assert any_store.cache_get(latest)["text"] == "They talked about apples."
    any_store.delete_conversation(conv.id)
    assert any_store.cache_get(latest) is None
    build_again()
    assert len(summarizer.requests) == 2  # nothing of it was left: it is summarized anew


def test_a_fork_keeps_the_pages_its_log_shows_after_the_original_is_deleted(any_store: Store) -> None:
    original = any_store.create_conversation("original")
    early = make_page(any_store, original.id, "early")
    fork_point = last_id(any_store, original.id)
    late = make_page(any_store, original.id, "late")
    # A fork made after both pages shows both; a fork made between them shows only the early one.
    both = any_store.fork_conversation(original.id, last_id(any_store, original.id), title="both")
    partial = any_store.fork_conversation(original.id, fork_point, title="partial")
    assert any_store.list_pages(both.id) == []  # shared pages stay the original's while it exists

    any_store.delete_conversation(original.id)
    # Each page passes to the oldest fork that shows it (and is listed there); the fork's log still works.
    assert [p.id for p in any_store.list_pages(both.id)] == [early, late]
    assert any_store.get_page(late).conversation_id == both.id
    assert any_store.list_pages(partial.id) == []
    any_store.delete_conversation(both.id)
    assert gone(any_store, late)  # no one else shows it
    assert [p.id for p in any_store.list_pages(partial.id)] == [early]
    any_store.delete_conversation(partial.id)
    assert gone(any_store, early)


def test_a_fork_of_a_fork_keeps_a_page_after_the_fork_between_them_is_deleted(any_store: Store) -> None:
    original = any_store.create_conversation("original")
    page = make_page(any_store, original.id, "page")
    middle = any_store.fork_conversation(original.id, last_id(any_store, original.id), title="middle")
    any_store.append(middle.id, [UserMessage(content="more")])
    grandchild = any_store.fork_conversation(middle.id, last_id(any_store, middle.id), title="grandchild")

    any_store.delete_conversation(middle.id)
    assert any_store.get_page(page).conversation_id == original.id  # still the original's
    any_store.delete_conversation(original.id)
    assert any_store.get_page(page).conversation_id == grandchild.id
    any_store.delete_conversation(grandchild.id)
    assert gone(any_store, page)


def test_a_fork_does_not_keep_the_pages_it_made_itself_from_going_with_it(any_store: Store) -> None:
    original = any_store.create_conversation("original")
    any_store.append(original.id, [UserMessage(content="hello")])
    fork = any_store.fork_conversation(original.id, last_id(any_store, original.id))
    own = make_page(any_store, fork.id, "own")
    any_store.delete_conversation(fork.id)
    assert gone(any_store, own)
    assert any_store.has_conversation(original.id)


def test_deleting_an_unknown_conversation_is_refused_and_deletes_nothing(any_store: Store) -> None:
    info = any_store.create_conversation("kept")
    page = make_page(any_store, info.id, "kept")
    with pytest.raises(StoreError, match="no conversation"):
        any_store.delete_conversation("no-such-conversation")
    assert any_store.get_page(page).conversation_id == info.id


def forget_page_shares(store_url: str) -> None:
    """Make the database look as it did before page shares existed: no table, no migration recorded."""
    statements = ["DROP TABLE {p}page_shares", "DELETE FROM {p}threadline_migrations WHERE name = 'page_shares'"]
    if store_url.startswith("sqlite://"):
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"))
        for statement in statements:
            conn.execute(statement.format(p=""))
        conn.commit()
        conn.close()
    else:
        schema = store_url.rsplit("schema=", 1)[1]
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.format(p=f'"{schema}".'))  # type: ignore[arg-type]


def test_forks_made_before_the_upgrade_keep_the_pages_they_show(store_url: str) -> None:
    with open_store(store_url) as store:
        original = store.create_conversation("original")
        page = make_page(store, original.id, "page")
        fork = store.fork_conversation(original.id, last_id(store, original.id))
        own = make_page(store, fork.id, "own")  # the fork's own page is not a share
    forget_page_shares(store_url)
    with open_store(store_url) as store:  # the upgrade finds what existing forks show
        store.delete_conversation(original.id)
        assert store.get_page(page).conversation_id == fork.id
        store.delete_conversation(fork.id)
        assert gone(store, page) and gone(store, own)


def test_postgres_a_page_is_never_handed_to_a_fork_being_deleted_at_the_same_time() -> None:
    """Deleting the original while the fork that would inherit its page is being deleted by another host: the
    original's delete waits for the fork's, sees it gone, and deletes the page instead of leaving it to a conversation
    that no longer exists."""
    with postgres_url() as url, open_store(url) as store:
        original = store.create_conversation("original")
        page = make_page(store, original.id, "page")
        fork = store.fork_conversation(original.id, last_id(store, original.id))
        schema = url.rsplit("schema=", 1)[1]
        with psycopg.connect(POSTGRES_DSN) as other:  # another host, halfway through deleting the fork
            other.execute(f'DELETE FROM "{schema}".conversations WHERE id = %s', (fork.id,))
            with ThreadPoolExecutor(1) as pool:
                deleting = pool.submit(store.delete_conversation, original.id)
                while not deleting.done() and not waiting_for_a_lock(schema):
                    time.sleep(0.01)
                other.commit()
                deleting.result(timeout=60)
        assert gone(store, page)


def waiting_for_a_lock(schema: str) -> bool:
    with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            (f'%"{schema}".page_shares%',),
        ).fetchone()
    return bool(row and row[0])
