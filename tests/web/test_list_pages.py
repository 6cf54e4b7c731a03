"""The list paged past its end (an old bookmark, a hand-edited ``?offset=``) says there is nothing there and links to
the first page, instead of an empty list with only "← Newer"."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.web._data import simple_conversation


def test_a_page_past_the_end_of_the_list_says_so_and_links_to_the_first(sqlite_store, serve, page) -> None:
    simple_conversation(sqlite_store, "Where is the lighthouse?", "On the cape.")
    served = serve(sqlite_store)

    page.goto(f"{served.url}/?offset=99999")
    notice = page.locator("main .notice")
    expect(notice).to_contain_text("No conversations here")
    assert page.locator(".pager a", has_text="Newer").count() == 0  # it led to another empty page
    notice.locator("a", has_text="first page").click()
    expect(page.locator(".conv-title")).to_have_text(["Where is the lighthouse?"])
    assert page.url == f"{served.url}/"

    # A search paged past its last match: the same, and the first page keeps the search.
    page.goto(f"{served.url}/?q=lighthouse&offset=50")
    expect(page.locator("main .notice")).to_contain_text("No conversations here")
    expect(page.locator(".result-line")).not_to_contain_text("Nothing matches")
    page.locator("main .notice a", has_text="first page").click()
    expect(page.locator(".conv-title")).to_have_text(["Where is the lighthouse?"])
    assert page.url == f"{served.url}/?q=lighthouse"
