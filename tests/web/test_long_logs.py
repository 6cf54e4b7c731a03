"""Reading a long log in a real browser: an outline of its turns with jumps to the start and to each failure, filters
by role, tool and error, a denser view, and times to the second on hover."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.web._data import weather_conversation
from threadline import AssistantMessage, LLMError, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

TURNS = 120
FAILED_TURNS = (17, 88)  # model calls that failed
TOOL_ERROR_TURN = 50


def long_log(store):
    """``TURNS`` turns of question, tool call, result and answer; a few failures and one tool error."""
    conv = store.create_conversation("A long agent run")
    log = []
    for turn in range(1, TURNS + 1):
        call = ToolCall(id=f"c{turn}", name="lookup" if turn % 3 else "fetch_page", arguments={"turn": turn})
        log.append(UserMessage(content=f"Question number {turn} about the archive"))
        log.append(AssistantMessage(tool_calls=[call], model="m"))
        broken = turn == TOOL_ERROR_TURN
        log.append(ToolMessage(tool_call_id=call.id, tool_name=call.name, content=f"result {turn}", is_error=broken))
        if turn in FAILED_TURNS:
            log.append(AssistantMessage(content="Partial", error=LLMError(type="overloaded", message=f"busy {turn}")))
        else:
            log.append(AssistantMessage(content=f"Answer {turn}", model="m"))
    store.append(conv.id, log)
    return conv, log


def test_the_outline_lists_turns_and_jumps_to_failures_and_the_start(sqlite_store, serve, page) -> None:
    conv, log = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#items .msg").last).to_contain_text(f"Answer {TURNS}")
    page.mouse.wheel(0, -2_500)  # reading back through the log, far from the header
    page.wait_for_timeout(300)
    expect(page.locator("#toolbar")).to_be_in_viewport()  # outline, filters and jumps stay at hand

    page.click("#outline summary")
    panel = page.locator("#outline .outline-body")
    expect(panel).to_be_in_viewport()
    expect(panel).to_contain_text(f"{len(log)} messages · {TURNS} turns")
    expect(panel.locator(".outline-turns li")).to_have_count(TURNS)
    expect(panel.locator(".outline-turns li").nth(16)).to_contain_text("Question number 17 about the archive")
    expect(panel.locator(".outline-turns li").nth(16)).to_contain_text("1 failed")
    failures = panel.locator(".outline-failures li")
    expect(failures).to_have_count(2)
    expect(failures.first).to_contain_text("overloaded: busy 17")
    expect(panel.locator(".outline-tool-errors li")).to_contain_text(f"result {TOOL_ERROR_TURN}")

    failures.first.locator("a").click()  # far back in the log: the part around it opens
    failed = next(m for m in log if isinstance(m, AssistantMessage) and m.error and m.error.message == "busy 17")
    target = page.locator(f"#m-{failed.id}")
    expect(target).to_be_in_viewport()
    expect(target).to_contain_text("busy 17")

    page.click("#toolbar .jump-start")
    expect(page.locator(".older .start")).to_have_text("Start of the conversation")
    expect(page.locator(f"#m-{log[0].id}")).to_be_in_viewport()
    page.mouse.wheel(0, 40_000)  # the part after the first one loads on the way down
    expect(page.locator(f"#m-{log[60].id}")).to_have_count(1, timeout=10_000)


def test_filters_by_role_tool_and_error(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    messages = page.locator("#items > .msg")
    visible = page.locator("#items > .msg:visible")
    expect(visible).to_have_count(5)  # question, calls with results, answer, question, failure

    page.click("#filter-menu summary")
    page.uncheck("#filters input[value=user]")
    expect(visible).to_have_count(3)
    expect(page.locator("#items > .msg.role-user:visible")).to_have_count(0)
    expect(page.locator("#filter-status")).to_have_text("showing 3 of the 5 messages loaded")
    page.check("#filters input[value=user]")

    page.check("#filters input[name=errors]")
    expect(visible).to_have_count(1)
    expect(visible.first).to_have_class(re.compile(r"\brole-failure\b"))
    page.uncheck("#filters input[name=errors]")

    page.select_option("#filters select[name=tool]", "get_weather")
    expect(visible).to_have_count(1)
    expect(visible.first.locator("details.tool:visible")).to_have_count(2)

    page.select_option("#filters select[name=tool]", "")
    page.uncheck("#filters input[value=tool]")
    expect(page.locator("details.tool:visible")).to_have_count(0)
    expect(messages).to_have_count(5)  # hidden, not removed

    # Tool calls alone: the calls are an assistant message's, and show without the other roles (before, unticking
    # "assistant" hid them too, and this showed nothing at all).
    page.check("#filters input[value=tool]")
    for role in ("user", "assistant", "failure", "system"):
        page.uncheck(f"#filters input[value={role}]")
    expect(page.locator("details.tool:visible")).to_have_count(2)
    expect(visible).to_have_count(1)
    expect(page.locator("#filter-status")).to_have_text("showing 1 of the 5 messages loaded")
    page.check("#filters input[value=assistant]")
    expect(visible).to_have_count(2)  # the answer's own message comes back


def test_the_dense_view_fits_more_and_is_remembered(sqlite_store, serve, page) -> None:
    conv, _ = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")

    def height() -> float:
        """The height the last 20 messages take (older parts may load meanwhile: they do not count)."""
        return page.locator("#items").evaluate(
            "el => { const m = [...el.children].slice(-20);"
            " return m[19].getBoundingClientRect().bottom - m[0].getBoundingClientRect().top; }"
        )

    roomy = height()
    page.click("#filter-menu summary")
    page.check("#filters input[name=dense]")
    expect(page.locator("body")).to_have_class(re.compile(r"\bdense\b"))
    assert height() < roomy * 0.8
    page.reload()
    expect(page.locator("body")).to_have_class(re.compile(r"\bdense\b"))
    expect(page.locator("#filters input[name=dense]")).to_be_checked()


def test_times_show_to_the_second_on_hover(sqlite_store, serve, page) -> None:
    conv = weather_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    to_the_second = re.compile(r"\d{1,2}:\d\d:\d\d")
    message_time = page.locator("#items .msg time").first
    expect(message_time).not_to_have_text(to_the_second)  # shown to the minute
    expect(message_time).to_have_attribute("title", to_the_second)  # the tooltip says the second
    expect(page.locator(".conv-facts time")).to_have_attribute("title", to_the_second)
    page.goto(f"{served.url}/")
    expect(page.locator(".conv-row time").first).to_have_attribute("title", to_the_second)


def test_the_outline_is_a_page_of_its_own_too(sqlite_store, serve) -> None:
    import httpx

    conv, log = long_log(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=20) as http:
        outline = http.get(f"/c/{conv.id}/outline")
        assert outline.status_code == 200 and "<script" not in outline.text.split("</head>", 1)[1]
        assert f'href="/c/{conv.id}?at={log[0].id}"' in outline.text  # the first turn
        assert outline.text.count("<li>") >= TURNS + 3
        assert http.get("/c/no-such-conversation/outline").status_code == 404
        start = http.get(f"/c/{conv.id}", params={"start": 1}).text
        assert f'id="m-{log[0].id}"' in start and "Start of the conversation" in start
        assert 'data-at-end="false"' in start
