"""``threadline logs fork ID --at MSG`` as a user runs it, on SQLite and PostgreSQL."""

# ruff: noqa: F811
from __future__ import annotations

from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, UserMessage
from threadline.store import Store


def test_logs_fork_prints_the_new_id_and_copies_up_to_the_message(store_url: str, store: Store) -> None:
    conv = store.create_conversation("Origin")
    log = [UserMessage(content="first"), AssistantMessage(content="one"), UserMessage(content="second")]
    store.append(conv.id, log)

    done = run_cli("logs", "fork", conv.id, "--at", log[1].id, "--store", store_url)
    assert done.returncode == 0, done.stderr
    new_id = done.stdout.strip()
    assert [m.id for m in store.load(new_id)] == [m.id for m in log[:2]]
    assert store.get_conversation(new_id).metadata["forked_from"] == {"conversation": conv.id, "message": log[1].id}
    assert store.get_conversation(new_id).title == "Origin (fork)"  # never a second "Origin" in the list
    assert f"threadline prompt --cid {new_id}" in done.stderr

    whole = run_cli("logs", "fork", conv.id, "--title", "Everything", "--store", store_url)
    assert whole.returncode == 0, whole.stderr
    copy = store.get_conversation(whole.stdout.strip())
    assert (copy.title, copy.message_count) == ("Everything", 3)


def test_logs_fork_names_a_missing_message_in_one_line(store_url: str, store: Store) -> None:
    conv = store.create_conversation()
    store.append(conv.id, [UserMessage(content="hi")])
    done = run_cli("logs", "fork", conv.id, "--at", "no-such-message", "--store", store_url)
    assert done.returncode == 1
    assert done.stderr.strip() == f"Error: no message 'no-such-message' in conversation '{conv.id}'"
    assert len(store.list_conversations()) == 1
