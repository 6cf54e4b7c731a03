"""Search hits in a real browser: a hit opened from the list is landed on and highlighted, and stays in view while
older messages load above it; the list shows how many messages matched, and the timeline moves between them."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.web.conftest import screenshot
from threadline import AssistantMessage, UserMessage
from threadline.testing import ScriptedModel

HITS = (60, 150, 250)


def long_log(store, size: int = 300):
    """A conversation of ``size`` messages; the ones at `HITS` mention a zebra."""
    conv = store.create_conversation("Safari notes")
    log = []
    for i in range(size):
        text = f"note {i}: the zebra crossed the river" if i in HITS else f"note {i}: nothing remarkable today"
        log.append(UserMessage(content=text) if i % 2 == 0 else AssistantMessage(content=text, model="m"))
    store.append(conv.id, log)
    return conv, log


def wait_for_older(page, more_than: int) -> None:
    # Polled from here: the viewer's Content-Security-Policy forbids the eval that page.wait_for_function uses.
    for _ in range(100):
        if page.locator("#items .msg").count() > more_than:
            break
        page.wait_for_timeout(100)
    assert page.locator("#items .msg").count() > more_than, "no older part loaded"
    page.wait_for_timeout(300)  # let the page settle after inserting the part (any scroll it does has happened)


def test_a_hit_is_landed_on_highlighted_and_stays_in_view_while_older_messages_load(sqlite_store, serve, page):
    conv, log = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    target = log[HITS[-1]]

    url = f"{served.url}/c/{conv.id}?at={target.id}&q=zebra"  # where the list's hit links (see below)
    shown = httpx.get(url).text.count("<article ")  # the part the page opens with, around the hit
    page.goto(url)
    hit = page.locator(f"#m-{target.id}")
    expect(hit).to_be_in_viewport()
    wait_for_older(page, shown)  # the part above the hit loads, as it does when a reader lands near its top
    expect(hit).to_be_in_viewport()
    expect(hit).to_have_class(lambda_class("hit"))
    expect(hit.locator("mark").first).to_have_text("zebra")
    screenshot(page, "search-hit")


def test_the_list_counts_matches_and_the_timeline_moves_between_them(sqlite_store, serve, page):
    conv, log = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))

    page.goto(f"{served.url}/?q=zebra")
    expect(page.locator(".conv-row .matches")).to_have_text("3 matching messages")
    page.locator(".conv-row a").first.click()
    expect(page).to_have_url(f"{served.url}/c/{conv.id}?at={log[HITS[2]].id}&q=zebra")
    finder = page.locator("#find-status")
    expect(finder).to_have_text("match 3 of 3")

    page.click("#find-prev")
    middle = page.locator(f"#m-{log[HITS[1]].id}")
    expect(finder).to_have_text("match 2 of 3")
    expect(middle).to_be_in_viewport()
    expect(middle).to_have_class(lambda_class("hit"))
    expect(page.locator("#items .msg.hit")).to_have_count(1)

    page.click("#find-prev")
    expect(finder).to_have_text("match 1 of 3")
    expect(page.locator(f"#m-{log[HITS[0]].id}")).to_be_in_viewport()
    page.click("#find-next")
    expect(finder).to_have_text("match 2 of 3")
    expect(middle).to_be_in_viewport()

    # Searching from the timeline finds within this conversation.
    page.fill("#find input[name=q]", "remarkable 149")
    page.press("#find input[name=q]", "Enter")
    expect(finder).to_have_text("match 1 of 1")
    expect(page.locator(f"#m-{log[149].id}")).to_be_in_viewport()
    page.fill("#find input[name=q]", "okapi")
    page.press("#find input[name=q]", "Enter")
    expect(finder).to_have_text("no message matches")


def lambda_class(name: str):
    """A class-list pattern: ``name`` among the element's classes."""
    import re

    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def test_a_hit_in_a_tool_output_opens_its_group(sqlite_store, serve, page):
    from tests.web._data import weather_conversation

    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}?q=sunny+rome+22")
    expect(page.locator("#find-status")).to_have_text("match 1 of 1")
    group = page.locator("#call-w-rome")
    expect(group.locator(".tool-output mark").first).to_be_visible()  # the collapsed group was opened on it
    expect(page.locator("#items .msg.hit")).to_have_count(1)
    expect(page.locator("#items .msg.hit #call-w-rome")).to_have_count(1)
    expect(page.locator("#call-w-paris .tool-output")).to_be_hidden()
