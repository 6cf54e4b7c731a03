"""Writer leases (`Store.try_lease`) and the optimistic count check of `Store.append`, on every backend.

A lease keeps a conversation's turn to one writer at a time — in this process, in another process, on another host
(PostgreSQL) — and dies with its holder: a process killed with SIGKILL leaves nothing stuck.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from threadline import ConversationBusy, StoreError, UserMessage, user
from threadline.store import Store, open_store

ROOT = Path(__file__).parents[2]

HOLDER = """
import sys, time
from threadline.store import open_store
store = open_store(sys.argv[1])
lease = store.try_lease(sys.argv[2])
print("held" if lease is not None else "refused", flush=True)
time.sleep(600)
"""


def test_one_writer_holds_a_conversations_lease_until_it_releases_it(any_store: Store) -> None:
    first = any_store.try_lease("c1")
    assert first is not None
    assert any_store.try_lease("c1") is None  # a second writer of this process is kept out
    other = any_store.try_lease("c2")  # other conversations are not affected
    assert other is not None
    first.release()
    first.release()  # releasing twice does nothing
    again = any_store.try_lease("c1")
    assert again is not None
    again.release()
    other.release()


def test_a_lease_excludes_another_store_object_on_the_same_database(store_url: str) -> None:
    with open_store(store_url) as a, open_store(store_url) as b:
        lease = a.try_lease("shared")
        assert lease is not None
        assert b.try_lease("shared") is None
        lease.release()
        taken = b.try_lease("shared")
        assert taken is not None
        assert a.try_lease("shared") is None
        taken.release()


def test_any_conversation_id_can_be_leased(any_store: Store) -> None:
    for conversation_id in ("../../etc/passwd", "a/b", "x" * 500, "with space", "é\u2028"):
        lease = any_store.try_lease(conversation_id)
        assert lease is not None
        lease.release()


def start_holder(url: str, conversation_id: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, conversation_id], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_lease_held_by_another_process_keeps_this_one_out_and_dies_with_it(store_url: str) -> None:
    holder = start_holder(store_url, "conv")
    try:
        with open_store(store_url) as store:
            assert store.try_lease("conv") is None
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
            # The kernel (SQLite) or the server (PostgreSQL) dropped the dead holder's lease: it is free at once or
            # within a moment (the server notices the closed connection); 10 s is a bound only a stuck lease reaches.
            deadline = time.monotonic() + 10
            free = store.try_lease("conv")
            while free is None and time.monotonic() < deadline:
                time.sleep(0.02)
                free = store.try_lease("conv")
            assert free is not None, "the dead holder's lease was never released"
            free.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_append_with_an_expected_count_refuses_a_log_that_moved_on(any_store: Store) -> None:
    any_store.create_conversation(id="c")
    any_store.append("c", [user("one")], expected_count=0)
    any_store.append("c", [user("two")], expected_count=1)
    behind = UserMessage(content="written by a writer that missed 'two'")
    with pytest.raises(ConversationBusy, match="changed by another writer"):
        any_store.append("c", [behind], expected_count=1)
    assert [m.content for m in any_store.load("c")] == ["one", "two"]  # nothing was appended
    assert any_store.get_conversation("c").message_count == 2


def test_append_without_an_expected_count_is_unchanged(any_store: Store) -> None:
    any_store.create_conversation(id="c")
    any_store.append("c", [user("one")])
    any_store.append("c", [user("two")])
    assert len(any_store.load("c")) == 2


def test_a_store_whose_append_predates_expected_count_still_works() -> None:
    """Stores written before ``expected_count`` existed (an ``append`` override without it) declare so
    (``checks_append_count = False``) and are called without it: they keep working, with the lease alone keeping
    writers apart."""
    from threadline import Conversation, ConversationConfig
    from threadline.store.memory import MemoryStore
    from threadline.testing import ScriptedModel

    seen: list[int] = []

    class Counting(MemoryStore):
        checks_append_count = False

        def append(self, conversation_id, messages):  # type: ignore[no-untyped-def, override]
            items = list(messages)
            seen.append(len(items))
            super().append(conversation_id, items)

    store = Counting()
    conversation = Conversation(store=store, config=ConversationConfig(model=ScriptedModel(["hi"])))
    assert conversation.continuation.request("hello").prompt() == "hi"
    assert seen == [1, 1]
    assert store.load(conversation.id) == conversation.messages


def test_a_store_that_neither_takes_expected_count_nor_declares_it_gets_a_clear_error() -> None:
    """The append contract is explicit (`Store.checks_append_count`), not read off ``append``'s signature: a store
    that claims the count (the default) but does not take it is refused at its first write, saying how to fix it,
    and nothing is appended."""
    from threadline import Conversation, ConversationConfig
    from threadline.store.memory import MemoryStore
    from threadline.testing import ScriptedModel

    class Undeclared(MemoryStore):
        def append(self, conversation_id, messages):  # type: ignore[no-untyped-def, override]
            super().append(conversation_id, list(messages))

    store = Undeclared()
    conversation = Conversation(store=store, config=ConversationConfig(model=ScriptedModel(["hi"])))
    with pytest.raises(StoreError, match=r"Undeclared.append does not take expected_count.*checks_append_count = Fal"):
        conversation.continuation.request("hello").prompt()
    assert len(conversation.messages) == 0
    assert store.load(conversation.id) == []


def test_every_store_of_threadline_takes_expected_count() -> None:
    from threadline.store.memory import MemoryStore
    from threadline.store.postgres import PostgresStore
    from threadline.store.sqlite import SQLiteStore

    assert all(kind.checks_append_count for kind in (MemoryStore, SQLiteStore, PostgresStore))
