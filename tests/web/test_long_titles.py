"""A long unbroken title (no space to break at) wraps on every page that shows it: the conversation, its origin's
fork links and fork list, the compare page's back link and branch heads, the outline and context back links. The
page is never wider than the window."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.web._data import simple_conversation
from threadline.web.branches import MAX_TITLE

LONG = "W" * 200


def wider_than_window(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_a_long_unbroken_title_wraps_on_every_page(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "A question", "An answer")
    fork = sqlite_store.fork_conversation(conv.id, conv.messages[-1].id)
    sqlite_store.update_metadata(fork.id, title=LONG)
    sqlite_store.update_metadata(conv.id, title="X" * 200)
    served = serve(sqlite_store)
    pages = {
        "origin (fork link, fork list)": f"/c/{conv.id}",
        "fork (forked from)": f"/c/{fork.id}",
        "compare": f"/c/{fork.id}/compare",
        "outline": f"/c/{fork.id}/outline",
        "context": f"/c/{fork.id}/context",
        "list": "/",
    }
    wide = {}
    for name, path in pages.items():
        page.goto(served.url + path)
        if (extra := wider_than_window(page)) > 0:
            wide[name] = extra
    assert wide == {}, f"pages wider than the window (by px): {wide}"
    page.goto(f"{served.url}/c/{conv.id}")
    assert page.locator(".fork-link").inner_text().startswith("Forked into “WWW")


def test_a_long_title_wraps_in_a_narrow_window(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "A question", "An answer")
    fork = sqlite_store.fork_conversation(conv.id, conv.messages[-1].id)
    sqlite_store.update_metadata(fork.id, title=LONG)
    served = serve(sqlite_store)
    page.set_viewport_size({"width": 400, "height": 800})
    for path in (f"/c/{conv.id}", f"/c/{fork.id}", f"/c/{fork.id}/compare"):
        page.goto(served.url + path)
        assert wider_than_window(page) <= 0, path


def test_a_fork_of_a_title_at_the_limit_can_be_saved_as_named(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "A question", "An answer")
    sqlite_store.update_metadata(conv.id, title="t" * MAX_TITLE)
    served = serve(sqlite_store)
    page.goto(f"{served.url}/c/{conv.id}")
    page.locator(f"#m-{conv.messages[-1].id} .fork-button").click()
    expect(page.locator(".origin")).to_contain_text("Forked from")
    name = page.locator(".conv-header h1").inner_text()
    assert len(name) <= MAX_TITLE and name.endswith("t… (fork)")
    page.click(".rename summary")
    page.click(".rename button[type=submit]")  # the Rename box, prefilled with the fork's name: saved as it is
    expect(page.locator(".conv-header h1")).to_have_text(name)
    assert page.locator(".error-page").count() == 0
