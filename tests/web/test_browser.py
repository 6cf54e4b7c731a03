"""The viewer in a real browser (Debian's Chromium via Playwright), doing what a person does: open the list, search,
open a conversation, expand a tool group, read a failure, continue on a model and watch the answer stream in, fork
and continue the fork, see another process's message appear live, read the context view, scroll back through a long
conversation. Screenshots of the list, the timeline and the context view are saved as test artifacts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from playwright.sync_api import expect

from tests.web._data import gated_lookup, simple_conversation, weather_conversation
from tests.web.conftest import screenshot
from threadline import AssistantMessage, ToolCall, UserMessage
from threadline.testing import ScriptedModel

# Set before anything happens on a page: if the page ever reloads, the marker is gone.
MARKER = "window.__noReload = 'still here';"
# Records every text the streaming draft showed, so a test can tell the answer streamed in before it was recorded.
DRAFT_WATCH = """
window.__draftTexts = [];
new MutationObserver(() => {
  const draft = document.querySelector('#draft');
  if (draft && !draft.hidden) window.__draftTexts.push(draft.querySelector('.text').textContent);
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


def test_list_search_and_open_a_conversation(sqlite_store, serve, page) -> None:
    weather = weather_conversation(sqlite_store)
    for i in range(3):
        simple_conversation(sqlite_store, f"Question {i} about lighthouses", f"Lighthouse answer {i}")
    served = serve(sqlite_store, model=ScriptedModel([]))

    page.goto(served.url + "/")
    rows = page.locator(".conv-row")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("Question 2 about lighthouses")  # newest first
    weather_row = rows.filter(has_text="Weather in Paris and Rome?")
    expect(weather_row).to_contain_text("1 failure")
    expect(weather_row).to_contain_text("openai:gpt-4o-mini")
    expect(weather_row).to_contain_text("7 messages")
    screenshot(page, "list")

    page.fill("input[name=q]", "sunny")
    page.click("form.search button")
    expect(rows).to_have_count(1)
    expect(rows.first.locator(".snippet mark")).to_have_text("Sunny")
    rows.first.locator("a").click()
    expect(page).to_have_url(f"{served.url}/c/{weather.id}?at={weather.messages[4].id}&q=sunny")
    expect(page.locator("h1")).to_have_text("Weather in Paris and Rome?")


def test_tool_groups_open_and_failures_show_their_partial_output(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")

    group = page.locator("#call-w-paris")
    expect(group.locator("summary")).to_contain_text("get_weather")
    expect(group.locator("summary")).to_contain_text('{"city": "Paris"}')
    expect(group.locator("summary")).to_contain_text("ok")
    output = group.locator(".tool-output")
    expect(output).to_be_hidden()  # collapsed
    group.locator("summary").click()
    expect(output).to_be_visible()
    expect(output).to_contain_text("22 C and sunny in Paris")

    failure = page.locator(".role-failure")
    expect(failure).to_contain_text("Model call failed")
    expect(failure.locator(".failure-head .badge").first).to_have_text("timeout")
    expect(failure).to_contain_text("read timed out after 30 s")
    expect(failure.locator(".text.partial")).to_have_text("Rome was founded in 753 BC and")
    expect(failure.locator(".continue-form button")).to_be_visible()  # the page offers to continue from it
    expect(page.locator(".role-assistant .usage").first).to_contain_text("412 in")
    screenshot(page, "timeline")


def test_continue_streams_the_answer_and_shows_tool_calls_as_they_happen(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Hi", "Hello! Ask me anything.")
    answer = "The lighthouse of Alexandria was one of the seven wonders of the ancient world, built around 280 BC."
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="look-1", name="slow_lookup", arguments={"topic": "Pharos"})]),
            answer,
        ]
    )
    gate = threading.Event()
    served = serve(sqlite_store, model=model, tools=[gated_lookup(gate)])
    page.add_init_script(MARKER + DRAFT_WATCH)
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")

    page.fill("#composer textarea", "Tell me about the Pharos")
    page.click("#composer button[type=submit]")
    expect(page.locator("#items .msg.role-user").last).to_contain_text("Tell me about the Pharos")
    pending = page.locator("#call-look-1")
    expect(pending.locator(".tool-status")).to_have_text("running…")  # the call shows before its result
    gate.set()
    expect(pending.locator(".tool-status")).to_have_text("ok", timeout=10_000)
    pending.locator("summary").click()
    expect(pending.locator(".tool-output")).to_contain_text("Notes on Pharos")
    expect(page.locator("#items .msg.role-assistant").last).to_contain_text(answer)
    expect(page.locator("#draft")).to_be_hidden()

    drafts = page.evaluate("window.__draftTexts")
    assert any(text and answer.startswith(text.strip()) and text.strip() != answer for text in drafts), drafts
    assert page.evaluate("window.__noReload") == "still here"
    assert model.requests[1].messages[-1].content == "Notes on Pharos: it is old and well loved."
    assert [m.role for m in sqlite_store.load(conv.id)][-4:] == ["user", "assistant", "tool", "assistant"]


def test_fork_from_a_message_and_continue_the_fork(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel(["Cloudy in Oslo."]))
    page.goto(f"{served.url}/c/{conv.id}")
    first_answer = page.locator(f"#m-{conv.messages[4].id}")
    first_answer.hover()
    first_answer.locator(".fork-button").click()

    expect(page.locator(".origin")).to_contain_text("Forked from")
    fork_id = page.url.rsplit("/", 1)[1]
    assert fork_id != conv.id
    expect(page.locator("#items .msg")).to_have_count(3)  # question, the tool calls with results, the answer
    page.fill("#composer textarea", "And in Oslo?")
    page.click("#composer button[type=submit]")
    expect(page.locator("#items .msg.role-assistant").last).to_contain_text("Cloudy in Oslo.")

    assert [m.content for m in sqlite_store.load(fork_id)][-2:] == ["And in Oslo?", "Cloudy in Oslo."]
    assert len(sqlite_store.load(conv.id)) == 7  # the original is untouched
    page.click(".origin a")
    expect(page).to_have_url(f"{served.url}/c/{conv.id}?at={conv.messages[4].id}")
    expect(page.locator(f"#m-{conv.messages[4].id} .fork-link")).to_have_attribute("href", f"/c/{fork_id}")


def test_a_message_another_process_appends_appears_without_reload(sqlite_store, serve, page, tmp_path) -> None:
    conv = simple_conversation(sqlite_store, "Are you there?", "Yes.")
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.add_init_script(MARKER)
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")

    writer = textwrap.dedent(
        f"""
        from threadline import UserMessage
        from threadline.store import open_store
        store = open_store({f"sqlite:///{tmp_path / 'viewer.db'}"!r})
        store.append({conv.id!r}, [UserMessage(content="Hello from another process <b>not bold</b>")])
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", writer], check=True, timeout=60)
    last = page.locator("#items .msg").last
    expect(last).to_contain_text("Hello from another process <b>not bold</b>", timeout=5_000)
    assert page.evaluate("window.__noReload") == "still here"


def test_the_context_view_shows_the_next_request_and_its_report(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    sqlite_store.append(conv.id, [UserMessage(content="a UI-only note", meta=_ui_only())])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    page.click("nav.conv-actions >> text=Context")
    expect(page.locator("h1")).to_have_text("The next request")
    expect(page.locator(".req").first).to_contain_text("made by the context builder")
    expect(page.locator(".req").first).to_contain_text("active: chat")
    expect(page.locator(".report")).to_contain_text("kept 7 of 8 log messages")
    expect(page.locator(".drops")).to_contain_text("ui_only")
    expect(page.locator(".req").last).to_contain_text("[LLM_ERROR type=timeout")
    screenshot(page, "context", full_page=True)
    page.click(".modes >> text=agent")
    expect(page.locator(".req").first).to_contain_text("active: agent")


def test_older_parts_load_when_scrolling_up(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Long")
    sqlite_store.append(conv.id, [UserMessage(content=f"message number {i}") for i in range(150)])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    messages = page.locator("#items .msg")
    expect(messages.last).to_contain_text("message number 149")
    shown = messages.count()
    assert shown < 60
    for _ in range(10):
        page.mouse.wheel(0, -20_000)
        page.wait_for_timeout(200)
        if page.locator(".start").count():
            break
    expect(page.locator(".older .start")).to_have_text("Start of the conversation")
    expect(messages).to_have_count(150)
    expect(messages.first).to_contain_text("message number 0")


def test_the_timeline_is_usable_400_px_wide(sqlite_store, serve, browser) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    context = browser.new_context(viewport={"width": 400, "height": 800}, color_scheme="dark")
    narrow = context.new_page()
    narrow.goto(f"{served.url}/c/{conv.id}")
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= 400  # nothing forces a sideways scroll
    expect(narrow.locator("#composer button[type=submit]")).to_be_in_viewport()
    screenshot(narrow, "timeline-400px-dark")
    context.close()


def _ui_only():
    from threadline import MessageMeta

    return MessageMeta(include_in_context=False)
