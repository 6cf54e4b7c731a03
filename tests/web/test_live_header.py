"""The timeline's header follows live messages: its message count and its "updated" time change as messages that
another writer appends arrive, without a reload."""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import expect

from threadline import AssistantMessage, UserMessage
from threadline.store import ConversationInfo, ImportItem
from threadline.testing import ScriptedModel


def test_the_header_counts_live_messages_and_their_time(sqlite_store, serve, page) -> None:
    long_ago = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    info = ConversationInfo(id="live-header", title="Kept up to date", created_at=long_ago, updated_at=long_ago)
    opening = [
        UserMessage(content="First?", created_at=long_ago),
        AssistantMessage(content="Yes.", created_at=long_ago),
    ]
    sqlite_store.import_conversations([ImportItem(info, opening)])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.add_init_script("window.__noReload = 'still here';")
    page.goto(f"{served.url}/c/live-header")
    facts = page.locator(".conv-facts")
    expect(facts).to_contain_text("2 messages")
    expect(facts.locator("time")).to_have_attribute("datetime", "2024-03-01T12:00:00Z")
    expect(page.locator("#live-state")).to_have_text("live")

    sqlite_store.append("live-header", [UserMessage(content="Second?"), AssistantMessage(content="Still here.")])
    expect(page.locator("#items .msg").last).to_contain_text("Still here.")
    expect(facts).to_contain_text("4 messages")
    updated = sqlite_store.get_conversation("live-header").updated_at
    stamp = updated.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    expect(facts.locator("time")).to_have_attribute("datetime", stamp)
    expect(facts.locator("time")).not_to_contain_text("2024")

    sqlite_store.append("live-header", [UserMessage(content="Third?")])
    expect(facts).to_contain_text("5 messages")
    assert page.evaluate("window.__noReload") == "still here"
