"""What model calls used and cost, in the viewer: each call's head shows its tokens (cached ones apart) and cost,
each turn's timing strip sums them, and the conversation's header shows the whole log's total (read after the page
opened, from ``/c/<id>/usage``)."""

from __future__ import annotations

from decimal import Decimal

import httpx
from playwright.sync_api import expect

from threadline import AssistantMessage, Cost, ToolCall, ToolMessage, Usage, UserMessage
from threadline.testing import ScriptedModel

PRICES = "genai-prices 0.2.3"


def costly_conversation(store):
    """Two calls in one turn (one with cached tokens), one in the next whose model has no price."""
    conv = store.create_conversation("Costly")
    first = Usage(
        input_tokens=2000, output_tokens=100, cache_read_tokens=1500, cost=Cost(usd=Decimal("0.0002475"), prices=PRICES)
    )
    second = Usage(
        input_tokens=2200, output_tokens=40, cache_read_tokens=2000, cost=Cost(usd=Decimal("0.000204"), prices=PRICES)
    )
    unpriced = Usage(input_tokens=30, output_tokens=5, cost=Cost(unknown=("model my-own-model",), prices=PRICES))
    store.append(
        conv.id,
        [
            UserMessage(content="Weather?"),
            AssistantMessage(
                tool_calls=[ToolCall(id="w1", name="get_weather", arguments={})],
                usage=first,
                model="openai:gpt-4o-mini",
            ),
            ToolMessage(tool_call_id="w1", tool_name="get_weather", content="sun", duration_ms=5),
            AssistantMessage(content="Sunny.", usage=second, model="openai:gpt-4o-mini"),
            UserMessage(content="Thanks"),
            AssistantMessage(content="Welcome.", usage=unpriced, model="my-own-model"),
        ],
    )
    return conv


def test_the_usage_route_sums_the_whole_log(sqlite_store, serve) -> None:
    conv = costly_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=20) as http:
        data = http.get(f"/c/{conv.id}/usage").json()
        assert http.get("/c/no-such-conversation/usage").status_code == 404
    assert data == {
        "calls": 3,
        "tokens": 4375,
        "cached_tokens": 3500,
        "cache_write_tokens": 0,
        "cost_usd": "0.0004515",
        "cost_unknown": ["model my-own-model"],
        "cost_text": "$0.000452 + unknown",
        "text": "3 calls · 4,375 tokens (3,500 cached) · $0.000452 + unknown (unknown: model my-own-model)",
    }


def test_calls_turns_and_the_header_show_tokens_and_cost(sqlite_store, serve, page) -> None:
    conv = costly_conversation(sqlite_store)
    log = sqlite_store.load(conv.id)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")

    expect(page.locator(f"#m-{log[1].id} .msg-head .usage")).to_have_text(
        "2,000 in (1,500 cached) · 100 out · $0.000248"
    )
    expect(page.locator(f"#m-{log[5].id} .msg-head .usage")).to_have_text("30 in · 5 out · unknown")

    first = page.locator(f"#m-{log[3].id} .turn-timing")
    expect(first).to_contain_text("4,200 in (3,500 cached) · 140 out tokens")
    expect(first).to_contain_text("cost $0.000452")
    expect(first).not_to_contain_text("unknown")
    second = page.locator(f"#m-{log[5].id} .turn-timing")
    expect(second).to_contain_text("cost unknown")  # a model without a price is never shown as $0

    header = page.locator("#spending")
    expect(header).to_be_visible()
    expect(header).to_have_text(
        "3 calls · 4,375 tokens (3,500 cached) · $0.000452 + unknown (unknown: model my-own-model)"
    )


def test_the_header_follows_a_turn_run_from_the_page(sqlite_store, serve, page) -> None:
    conv = costly_conversation(sqlite_store)
    # gpt-4o-mini: 1000 input tokens at $0.15, 100 output at $0.60 per million: $0.00021
    model = ScriptedModel(["Done."], usage=Usage(input_tokens=1000, output_tokens=100), name="openai:gpt-4o-mini")
    served = serve(sqlite_store, model=model)
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#live-state")).to_have_text("live")
    header = page.locator("#spending")
    expect(header).to_contain_text("3 calls · 4,375 tokens")

    page.fill("#composer textarea", "Once more")
    page.click("#composer button[type=submit]")
    expect(page.locator("#items .msg.role-assistant").last).to_contain_text("Done.")
    expect(page.locator("#items .msg").last.locator(".msg-head .usage")).to_have_text("1,000 in · 100 out · $0.000210")
    expect(header).to_have_text(
        "4 calls · 5,475 tokens (3,500 cached) · $0.000662 + unknown (unknown: model my-own-model)"
    )
