"""``threadline logs delete ID`` and ``threadline logs search WORDS`` as a user runs them, on SQLite and PostgreSQL.

Deleting takes the conversation's messages, artifacts and pages with it, asks first (``--yes`` off a terminal), and
leaves a fork's pages with the fork; searching reads the store's full-text index."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json

import pytest

from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from tests.store.test_delete_store import gone, make_page
from threadline import AssistantMessage, StoreError, UserMessage
from threadline.store import Store


def conversation(store: Store, title: str, question: str, answer: str) -> str:
    info = store.create_conversation(title)
    store.append(info.id, [UserMessage(content=question), AssistantMessage(content=answer)])
    return info.id


def test_delete_takes_the_conversation_with_its_artifacts_and_pages(store_url: str, store: Store) -> None:
    doomed = conversation(store, "doomed", "Tell me about otters", "Otters hold hands.")
    kept = conversation(store, "kept", "Tell me about owls", "Owls turn their heads.")
    store.save_artifact(doomed, "notes.txt", "private notes")
    page = make_page(store, doomed, "chart")

    done = run_cli("logs", "delete", doomed, "--yes", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert f"deleted conversation {doomed} (doomed" in done.stderr
    with pytest.raises(StoreError):
        store.get_conversation(doomed)
    with pytest.raises(StoreError):
        store.read_artifact(doomed, "notes.txt")
    assert gone(store, page)
    assert [info.id for info in store.list_conversations()] == [kept]
    assert not run_cli("logs", "search", "otters", "--json", "--store", store_url).stdout.count(doomed)


def test_delete_asks_first_and_off_a_terminal_wants_yes(store_url: str, store: Store) -> None:
    cid = conversation(store, "precious", "hello", "hi")
    done = run_cli("logs", "delete", cid, "--store", store_url, stdin="y\n")
    assert done.returncode == 2
    assert "add --yes" in done.stderr
    assert store.get_conversation(cid).message_count == 2  # nothing was deleted


def test_delete_of_an_unknown_id_is_one_clear_line(store_url: str, store: Store) -> None:
    done = run_cli("logs", "delete", "no-such-conversation", "--yes", "--store", store_url)
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "no-such-conversation" in line


def test_delete_leaves_the_pages_a_fork_shows_with_the_fork(store_url: str, store: Store) -> None:
    original = conversation(store, "original", "make a chart", "on it")
    page = make_page(store, original, "chart")
    last = store.read_tail(original, 1).messages[0].id
    fork = store.fork_conversation(original, last, title="the fork")

    done = run_cli("logs", "delete", original, "--yes", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert f"1 of its pages stay: a fork of it ({fork.id}) shows them" in done.stderr
    assert store.get_page(page).conversation_id == fork.id
    assert store.get_conversation(fork.id).message_count == len(store.load(fork.id))


def test_search_finds_conversations_by_the_words_of_their_messages(store_url: str, store: Store) -> None:
    otters = conversation(store, "animals", "Tell me about otters", "Sea otters hold hands while sleeping.")
    conversation(store, "birds", "Tell me about owls", "Owls turn their heads.")

    done = run_cli("logs", "search", "sleeping", "otters", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert otters in done.stdout and "animals" in done.stdout
    assert "birds" not in done.stdout
    assert "hold hands while sleeping" in done.stdout

    rows = json.loads(run_cli("logs", "search", "owls", "--json", "--store", store_url).stdout)
    assert [row["title"] for row in rows] == ["birds"]
    assert rows[0]["matches"] >= 1

    nothing = run_cli("logs", "search", "giraffes", "--store", store_url)
    assert nothing.returncode == 0
    assert nothing.stdout == ""
    assert "no conversation" in nothing.stderr and "giraffes" in nothing.stderr
