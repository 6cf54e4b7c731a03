"""A model's thinking in the viewer (in a real browser): collapsed under its assistant message, opened on a click,
escaped like every text, with what else a piece carries (signed, opaque data, cut off with a failure); the export
keeps it."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from threadline import AssistantMessage, LLMError, Reasoning, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel


def thinking_conversation(store):
    conv = store.create_conversation("Thinking")
    store.append(
        conv.id,
        [
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(
                tool_calls=[ToolCall(id="c1", name="weather", arguments={"city": "Paris"})],
                reasoning=[
                    Reasoning(text="The user wants <b>Paris</b>.", signature="c2ln", provider="anthropic"),
                    Reasoning(redacted="ZW5jcnlwdGVk" * 10, provider="anthropic"),
                ],
                model="anthropic:claude",
            ),
            ToolMessage(tool_call_id="c1", tool_name="weather", content="22 C"),
            AssistantMessage(content="It is 22 C.", model="anthropic:claude"),
            UserMessage(content="And Rome?"),
            AssistantMessage(
                content="Half",
                error=LLMError(type="stream_cut", message="cut"),
                reasoning=[Reasoning(text="Rome is in Ita", provider="anthropic")],
            ),
        ],
    )
    return conv


def test_thinking_is_collapsed_under_its_message_and_opens(sqlite_store, serve, page) -> None:
    conv = thinking_conversation(sqlite_store)
    log = sqlite_store.load(conv.id)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    calling = page.locator(f"#m-{log[1].id}")
    thinking = calling.locator("details.reasoning")
    expect(thinking.locator("summary")).to_contain_text("Thinking · 2 parts · anthropic")
    expect(thinking.locator(".reasoning-text")).to_be_hidden()  # collapsed
    thinking.locator("summary").click()
    expect(thinking.locator(".reasoning-text")).to_have_text("The user wants <b>Paris</b>.")  # escaped, as typed
    expect(thinking.locator("b")).to_have_count(0)
    notes = thinking.locator(".reasoning-note")
    expect(notes.nth(0)).to_have_text("signed")
    expect(notes.nth(1)).to_have_text("120 characters of opaque reasoning data")
    # The plain answer has no thinking block; the failed call shows what it had thought, marked as cut off.
    expect(page.locator(f"#m-{log[3].id} details.reasoning")).to_have_count(0)
    failed = page.locator(f"#m-{log[5].id} details.reasoning")
    failed.locator("summary").click()
    expect(failed.locator(".reasoning-text")).to_have_text("Rome is in Ita")
    expect(failed.locator(".reasoning-note")).to_have_text("cut off with the failed call; never sent back")


def test_the_export_keeps_the_thinking(sqlite_store, serve) -> None:
    conv = thinking_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    html = httpx.get(f"{served.url}/c/{conv.id}/export.html").text
    assert "The user wants &lt;b&gt;Paris&lt;/b&gt;." in html
    assert 'class="reasoning"' in html


def test_openrouter_entries_say_what_they_are_not_opaque_json(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Routed")
    text_entry = '{"type":"reasoning.text","signature":"c2ln","format":"anthropic-claude-v1","index":0}'
    encrypted = '{"type":"reasoning.encrypted","data":"' + "QUJD" * 25 + '","format":"google-gemini-v1","index":1}'
    sqlite_store.append(
        conv.id,
        [
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(
                content="22 C.",
                reasoning=[
                    Reasoning(text="Check it.", signature="c2ln", redacted=text_entry, provider="openrouter"),
                    Reasoning(redacted=encrypted, provider="openrouter", id="call_1"),
                ],
            ),
        ],
    )
    log = sqlite_store.load(conv.id)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    thinking = page.locator(f"#m-{log[1].id} details.reasoning")
    thinking.locator("summary").click()
    expect(thinking.locator(".reasoning-text").first).to_have_text("Check it.")
    notes = thinking.locator(".reasoning-note")
    expect(notes.nth(0)).to_have_text("signed · kept as OpenRouter sent it (reasoning.text anthropic-claude-v1)")
    expect(notes.nth(1)).to_have_text(
        "kept as OpenRouter sent it (reasoning.encrypted google-gemini-v1, 100 characters of encrypted data)"
    )
