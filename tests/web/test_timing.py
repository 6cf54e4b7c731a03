"""Where a turn's time went, read from the log (no tracing back end), in a real browser: each turn ends with a strip
of its model time, tool time and tokens, also for a turn that runs while the page is open."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from playwright.sync_api import expect

from tests.web._data import simple_conversation, slow_lookup
from tests.web.conftest import screenshot
from threadline import AssistantMessage, LLMError, ToolCall, ToolMessage, Usage, UserMessage
from threadline.testing import ScriptedModel

T0 = datetime(2025, 6, 1, 9, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def timed_conversation(store):
    """Turn 1: 1.5 s to the calls, two tools (0.7 s and 0.3 s), 1.0 s to the answer. Turn 2: a call that failed
    after 2 s."""
    conv = store.create_conversation("Timed")
    calls = [ToolCall(id="t1", name="get_weather", arguments={}), ToolCall(id="t2", name="get_time", arguments={})]
    usage = [Usage(input_tokens=400, output_tokens=30), Usage(input_tokens=500, output_tokens=20)]
    store.append(
        conv.id,
        [
            UserMessage(content="Weather and time?", created_at=at(0)),
            AssistantMessage(tool_calls=calls, usage=usage[0], created_at=at(1.5)),
            ToolMessage(tool_call_id="t1", tool_name="get_weather", content="sun", duration_ms=700, created_at=at(2.3)),
            ToolMessage(tool_call_id="t2", tool_name="get_time", content="9:00", duration_ms=300, created_at=at(2.4)),
            AssistantMessage(content="Sunny, and it is nine.", usage=usage[1], created_at=at(3.4)),
            UserMessage(content="And tomorrow?", created_at=at(10)),
            AssistantMessage(content="", error=LLMError(type="timeout", message="slow"), created_at=at(12)),
        ],
    )
    return conv


def test_each_turn_ends_with_where_its_time_went(sqlite_store, serve, page) -> None:
    conv = timed_conversation(sqlite_store)
    log = sqlite_store.load(conv.id)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    strips = page.locator(".turn-timing")
    expect(strips).to_have_count(2)

    first = page.locator(f"#m-{log[4].id} .turn-timing")  # after the turn's answer
    expect(first).to_contain_text("model 2.5 s (2 calls)")
    expect(first).to_contain_text("tools 1.0 s (2 calls)")
    expect(first).to_contain_text("900 in · 50 out tokens")
    segments = first.locator(".timing-bar > span")
    expect(segments).to_have_count(4)  # model, the two tools, model
    assert [s.get_attribute("class") for s in segments.all()] == ["seg model", "seg tool", "seg tool", "seg model"]
    widths = [s.bounding_box()["width"] for s in segments.all()]
    assert widths[0] > widths[3] > widths[2]  # 1.5 s > 1.0 s > 0.3 s
    expect(segments.nth(1)).to_have_attribute("title", "get_weather 700 ms")

    first.scroll_into_view_if_needed()
    screenshot(page, "timing-strip")

    second = page.locator(f"#m-{log[6].id} .turn-timing")
    expect(second).to_contain_text("model 2.0 s (1 call, 1 failed)")
    expect(second).not_to_contain_text("tools")


def test_a_turn_run_from_the_page_gets_its_strip(sqlite_store, serve, page) -> None:
    conv = simple_conversation(sqlite_store, "Hi", "Hello!")
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[ToolCall(id="look-1", name="slow_lookup", arguments={"topic": "Pharos"})],
                usage=Usage(input_tokens=120, output_tokens=12),
            ),
            AssistantMessage(content="It was a lighthouse.", usage=Usage(input_tokens=160, output_tokens=6)),
        ]
    )
    served = serve(sqlite_store, model=model, tools=[slow_lookup])
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator(".turn-timing")).to_have_count(1)  # the first turn's

    page.fill("#composer textarea", "Tell me about the Pharos")
    page.click("#composer button[type=submit]")
    expect(page.locator("#items .msg.role-assistant").last).to_contain_text("It was a lighthouse.")
    strip = page.locator("#items .msg").last.locator(".turn-timing")
    expect(strip).to_contain_text("(2 calls)")
    expect(strip).to_contain_text(re.compile(r"tools (\d+ ms|\d+\.\d s) \(1 call\)"))  # slow_lookup sleeps 0.6 s
    expect(strip).to_contain_text("280 in · 18 out tokens")
    expect(page.locator(".turn-timing")).to_have_count(2)
