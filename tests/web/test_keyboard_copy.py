"""The keyboard and the clipboard, in a real browser: ``/`` focuses the search, ``j``/``k`` move from message to
message (not while typing), and copy buttons put a message's source, a call's arguments or a tool's whole output on
the clipboard."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.web._data import weather_conversation
from tests.web.test_full_output import long_output, tool_log
from threadline import AssistantMessage, UserMessage
from threadline.testing import ScriptedModel


def test_slash_focuses_the_search(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/")
    search = page.locator("form.search input[name=q]")
    expect(search).not_to_be_focused()
    page.keyboard.press("/")
    expect(search).to_be_focused()
    expect(search).to_have_value("")  # the key is not typed into it
    page.keyboard.type("sunny")
    page.keyboard.press("Enter")
    expect(page.locator(".conv-row")).to_have_count(1)

    page.goto(f"{served.url}/c/{conv.id}")
    find = page.locator("#find input[name=q]")
    page.keyboard.press("/")
    expect(find).to_be_focused()
    page.keyboard.press("Escape")
    expect(find).not_to_be_focused()


def test_j_and_k_move_between_messages(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Many")
    log = [
        UserMessage(content=f"question {i}") if i % 2 == 0 else AssistantMessage(content=f"answer {i}")
        for i in range(30)
    ]
    sqlite_store.append(conv.id, log)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#items .msg").last).to_be_in_viewport()
    current = page.locator("#items .msg.current")
    expect(current).to_have_count(0)

    page.keyboard.press("k")
    expect(current).to_have_count(1)
    start = current.get_attribute("data-id")
    index = [m.id for m in log].index(start)
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect(current).to_have_attribute("data-id", log[index - 2].id)
    expect(current).to_be_in_viewport()
    page.keyboard.press("j")
    expect(current).to_have_attribute("data-id", log[index - 1].id)

    for _ in range(40):  # past the top: stays on the first message
        page.keyboard.press("k")
    expect(current).to_have_attribute("data-id", log[0].id)
    expect(page.locator(f"#m-{log[0].id}")).to_be_in_viewport()

    # Typing a j in the composer is typing, not moving.
    page.locator("#composer textarea").click()
    page.keyboard.type("jjj")
    expect(page.locator("#composer textarea")).to_have_value("jjj")
    expect(current).to_have_attribute("data-id", log[0].id)


def test_copy_buttons_copy_sources_arguments_and_whole_outputs(sqlite_store, serve, page) -> None:
    weather = weather_conversation(sqlite_store)
    sqlite_store.append(weather.id, [AssistantMessage(content="It is **22 C**.\n\n- Paris\n- Rome", model="m")])
    output = long_output(30_000)
    reading = tool_log(sqlite_store, output)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.url)

    def clipboard() -> str:
        return page.evaluate("navigator.clipboard.readText()")

    page.goto(f"{served.url}/c/{weather.id}")
    answer = page.locator("#items .msg.role-assistant").last
    answer.locator("button.copy").click()
    expect(answer.locator("button.copy")).to_have_text("Copied")
    assert clipboard() == "It is **22 C**.\n\n- Paris\n- Rome"  # the Markdown source, not the rendering

    group = page.locator("#call-w-rome")
    group.locator("summary").click()
    group.locator("button.copy[data-copy=arguments]").click()
    assert json.loads(clipboard()) == {"city": "Rome"}
    group.locator("button.copy[data-copy=output]").click()
    assert clipboard() == "22 C and sunny in Rome"

    page.goto(f"{served.url}/c/{reading.id}")
    page.locator("#call-read-1 summary").click()
    copy = page.locator("#call-read-1 button.copy[data-copy=output]")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert clipboard() == output  # the whole output, not only the part the page shows
