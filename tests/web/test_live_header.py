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


def test_the_header_follows_live_messages_also_on_a_page_opened_far_from_the_end(sqlite_store, serve, page) -> None:
    """Before, only a page showing the newest messages listened: one opened at the start (``?start=1``) or at a
    search hit (``?at=``) kept its first count and time, and said nothing of the messages arriving below."""
    long_ago = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    info = ConversationInfo(id="far", title="Long", created_at=long_ago, updated_at=long_ago)
    opening = [UserMessage(content=f"Question {n}?", created_at=long_ago) for n in range(300)]
    sqlite_store.import_conversations([ImportItem(info, opening)])
    served = serve(sqlite_store, model=ScriptedModel([]))
    facts = page.locator(".conv-facts")
    count = 300
    for where in ("?start=1", f"?at={opening[20].id}"):
        page.goto(f"{served.url}/c/far{where}")
        expect(facts).to_contain_text(f"{count} messages")
        expect(page.locator("#live-state")).to_have_text("live")
        sqlite_store.append("far", [AssistantMessage(content="Arrived while reading the start.")])
        count += 1
        expect(facts).to_contain_text(f"{count} messages")
        expect(facts.locator("time")).not_to_contain_text("2024")
        # The new message is not put after the part shown (the messages between are not loaded): it comes with them.
        expect(page.locator("#items .msg", has_text="Arrived while reading")).to_have_count(0)
        arrived = page.locator("#items .msg", has_text="Arrived while reading")
        for _ in range(40):  # scroll down part by part until the newest messages are loaded
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            page.wait_for_timeout(250)
            if arrived.count():
                break
        expect(arrived).to_have_count(count - 300)
