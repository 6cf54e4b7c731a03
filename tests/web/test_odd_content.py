"""Content of odd shapes in a real browser: names and error types without a space in 140 characters, and a table of
40 columns, stay inside the page (before, the page grew sideways to 1,443 px at 1,280); right-to-left text runs
right to left."""

from __future__ import annotations

from playwright.sync_api import expect

from threadline import AssistantMessage, LLMError, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

LONG_NAME = "mcp__filesystem_server__" + "read_multiple_files_with_metadata_" * 4
LONG_TYPE = "openai.BadRequestError.context_length_exceeded_" * 3
WIDE_TABLE = (
    "| "
    + " | ".join(f"column{n}" for n in range(40))
    + " |\n|"
    + "---|" * 40
    + "\n| "
    + " | ".join(str(n) for n in range(40))
    + " |\n"
)


def test_long_names_error_types_and_wide_tables_stay_inside_the_page(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Odd shapes")
    sqlite_store.append(
        conv.id,
        [
            UserMessage(content="go"),
            AssistantMessage(tool_calls=[ToolCall(id="c1", name=LONG_NAME, arguments={"p": "/x"})], model="m"),
            ToolMessage(tool_call_id="c1", tool_name=LONG_NAME, content="ok", duration_ms=3.0),
            AssistantMessage(content=WIDE_TABLE, model="m"),
            AssistantMessage(content="", error=LLMError(type=LONG_TYPE, message="too long", retryable=False)),
        ],
    )
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator(".tool-name")).to_have_attribute("title", LONG_NAME)  # the whole name, on hover
    expect(page.locator(".tool-meta").first).to_be_in_viewport()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280
    # The wide table scrolls inside its message instead of squeezing each cell to a letter.
    cell = page.locator(".md table td").first
    assert cell.evaluate("el => el.getBoundingClientRect().height") < 40


def test_right_to_left_text_runs_right_to_left(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("RTL")
    sqlite_store.append(
        conv.id,
        [
            UserMessage(content="ما هو الطقس في باريس؟ (Paris)"),
            AssistantMessage(content="מזג האוויר בפריז:\n\n- שמשי\n- 22 מעלות", model="m"),
            UserMessage(content="And in English?"),
        ],
    )
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    texts = page.locator("#items .msg .text")
    expect(texts).to_have_count(3)
    directions = [texts.nth(n).evaluate("el => getComputedStyle(el).direction") for n in range(3)]
    assert directions == ["rtl", "rtl", "ltr"]
