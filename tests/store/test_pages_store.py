"""`Store.list_pages`: the pages one conversation made, on SQLite, PostgreSQL and the in-memory store."""

from __future__ import annotations

from threadline.store import Store


def test_list_pages_gives_one_conversations_pages_oldest_first(any_store: Store) -> None:
    first = any_store.create_conversation(title="first")
    other = any_store.create_conversation(title="other")
    a = any_store.save_page("Tabs v1", "<p>1</p>", conversation_id=first.id)
    any_store.save_page("Elsewhere", "<p>x</p>", conversation_id=other.id)
    any_store.save_page("Loose", "<p>y</p>")
    b = any_store.save_page("Tabs v2", "<p>2</p>", "p{}", "go()", conversation_id=first.id)

    pages = any_store.list_pages(first.id)
    assert [page.id for page in pages] == [a.id, b.id]
    assert pages[1] == any_store.get_page(b.id)
    assert [page.title for page in any_store.list_pages(other.id)] == ["Elsewhere"]


def test_list_pages_of_a_conversation_without_pages_is_empty(any_store: Store) -> None:
    info = any_store.create_conversation(title="quiet")
    assert any_store.list_pages(info.id) == []
    assert any_store.list_pages("no-such-conversation") == []
