"""``k`` pressed faster than older messages load: every press counts. A press that comes while a part is loading
moves once it has loaded, so a burst of presses from the end lands where as many slow presses do."""

from __future__ import annotations

from playwright.sync_api import expect

from threadline import AssistantMessage, UserMessage
from threadline.testing import ScriptedModel

PRESSES = 90


def long_log(store):
    conv = store.create_conversation("Many turns")
    log = [
        UserMessage(content=f"question {i}") if i % 2 == 0 else AssistantMessage(content=f"answer {i}")
        for i in range(200)
    ]
    store.append(conv.id, log)
    return conv, [message.id for message in log]


def open_at_end(page, url):
    page.goto(url)
    expect(page.locator("#items > .msg")).to_have_count(40)  # the newest part only: the rest loads on the way up
    page.wait_for_load_state("networkidle")


def test_a_burst_of_k_presses_during_loads_lands_where_slow_presses_do(sqlite_store, serve, page) -> None:
    conv, ids = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    current = page.locator("#items > .msg.current")

    # Slowly: each press waits for the move (and any load it needed) before the next.
    open_at_end(page, f"{served.url}/c/{conv.id}")
    page.keyboard.press("k")
    expect(current).to_have_count(1)
    first = ids.index(current.get_attribute("data-id"))
    for step in range(1, PRESSES):
        page.keyboard.press("k")
        expect(current).to_have_attribute("data-id", ids[first - step])
    slow = current.get_attribute("data-id")

    # All at once: 90 presses in one go, most of them while older parts are loading.
    open_at_end(page, f"{served.url}/c/{conv.id}")
    page.evaluate(
        """(n) => { for (let i = 0; i < n; i++)
                 document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "k", bubbles: true })); }""",
        PRESSES,
    )
    expect(current).to_have_attribute("data-id", slow)
    expect(current).to_be_in_viewport()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)  # nothing left to move it further
    expect(current).to_have_attribute("data-id", slow)
    assert ids.index(slow) == first - (PRESSES - 1)
