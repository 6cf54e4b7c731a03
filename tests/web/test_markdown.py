"""What models write, rendered (in a real browser): Markdown in assistant text becomes formatted text with highlighted
code, markup and ``javascript:`` links stay inert, a per-message toggle shows the source, and the exported HTML file
renders it the same way."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from threadline import AssistantMessage, LLMError, UserMessage
from threadline.testing import ScriptedModel

ANSWER = """It is **22 C** and *sunny* in Paris. See [the forecast](https://weather.example/paris).

```python
def feels_like(celsius):
    return celsius + 2  # a warm day
```

| city | temp |
| --- | --- |
| Paris | 22 |
"""

HOSTILE = """Try <script>alert("script")</script> and <img src=x onerror="alert('img')">.

[click me](javascript:alert('link')) and <javascript:alert('auto')> and ![pic](https://tracker.example/p.png)
"""


def markdown_conversation(store):
    conv = store.create_conversation("Markdown")
    store.append(
        conv.id,
        [
            UserMessage(content="Weather in **Paris**?"),
            AssistantMessage(content=ANSWER, model="m"),
            UserMessage(content="And this?"),
            AssistantMessage(content=HOSTILE, model="m"),
            AssistantMessage(content="Half of a **bold", error=LLMError(type="timeout", message="slow")),
        ],
    )
    return conv


def test_assistant_markdown_renders_with_highlighted_code(sqlite_store, serve, page) -> None:
    conv = markdown_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    answer = page.locator(f"#m-{sqlite_store.load(conv.id)[1].id}")
    expect(answer.locator(".md strong")).to_have_text("22 C")
    expect(answer.locator(".md em")).to_have_text("sunny")
    expect(answer.locator(".md")).not_to_contain_text("**")
    link = answer.locator(".md a", has_text="the forecast")
    expect(link).to_have_attribute("href", "https://weather.example/paris")
    expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(answer.locator(".md table td").first).to_have_text("Paris")

    code = answer.locator(".md pre code")
    expect(code).to_contain_text("def feels_like(celsius):")
    keyword = code.locator("span", has_text="def").first
    expect(keyword).to_be_visible()
    plain = code.evaluate("el => getComputedStyle(el).color")
    assert keyword.evaluate("el => getComputedStyle(el).color") != plain  # highlighted
    comment = code.locator("span", has_text="# a warm day")
    assert comment.evaluate("el => getComputedStyle(el).fontStyle") == "italic"

    # The user's own text is shown as typed.
    expect(page.locator(".role-user").first.locator(".text")).to_have_text("Weather in **Paris**?")


def test_markup_and_script_links_in_markdown_stay_inert(sqlite_store, serve, page) -> None:
    conv = markdown_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    hostile = page.locator(f"#m-{sqlite_store.load(conv.id)[3].id} .md")
    expect(hostile).to_contain_text('Try <script>alert("script")</script> and <img src=x onerror="alert(\'img\')">.')
    expect(hostile).to_contain_text("[click me](javascript:alert('link'))")
    assert hostile.locator("script, img").count() == 0
    assert page.locator("a[href^='javascript' i]").count() == 0
    expect(hostile.locator("a", has_text="pic")).to_have_attribute("href", "https://tracker.example/p.png")
    page.wait_for_timeout(300)
    assert page.dialogs == []
    # A failed call's partial output is Markdown too, even cut in the middle of it.
    expect(page.locator(".role-failure .text.partial")).to_contain_text("Half of a **bold")


def test_the_raw_toggle_shows_the_source(sqlite_store, serve, page) -> None:
    conv = markdown_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    answer = page.locator(f"#m-{sqlite_store.load(conv.id)[1].id}")
    raw = answer.locator("pre.raw")
    expect(raw).to_be_hidden()
    answer.locator(".raw-toggle").click()
    expect(raw).to_be_visible()
    assert raw.inner_text() == ANSWER
    expect(answer.locator(".md")).to_be_hidden()
    expect(answer.locator(".raw-toggle")).to_have_attribute("aria-pressed", "true")
    answer.locator(".raw-toggle").click()
    expect(raw).to_be_hidden()
    expect(answer.locator(".md strong")).to_be_visible()


def test_the_export_renders_markdown_the_same_way(sqlite_store, serve, page) -> None:
    conv = markdown_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    exported = httpx.get(f"{served.url}/c/{conv.id}/export.html").text
    page.set_content(exported)
    expect(page.locator(".md strong").first).to_have_text("22 C")
    keyword = page.locator(".md pre code span", has_text="def").first
    plain = page.locator(".md pre code").first.evaluate("el => getComputedStyle(el).color")
    assert keyword.evaluate("el => getComputedStyle(el).color") != plain
    assert page.locator("script").count() == 0
    assert page.locator(".raw-toggle").count() == 0  # nothing interactive in the file
    assert page.locator("a[href^='javascript' i]").count() == 0
    assert page.dialogs == []


def test_table_columns_keep_their_alignment_under_the_pages_security_policy(sqlite_store, serve, page) -> None:
    """markdown-it aligns cells with inline styles, which the viewer's content security policy refuses (Chromium
    logged one violation per cell and every column was left-aligned); the alignment is a class now."""
    conv = sqlite_store.create_conversation("Aligned")
    table = "| name | amount | mark |\n|:--|--:|:-:|\n| tea | 3.50 | x |\n"
    sqlite_store.append(conv.id, [UserMessage(content="Prices?"), AssistantMessage(content=table, model="m")])
    served = serve(sqlite_store, model=ScriptedModel([]))
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.goto(f"{served.url}/c/{conv.id}")
    cells = page.locator(".md table tbody td")
    expect(cells).to_have_count(3)
    aligned = [cells.nth(n).evaluate("el => getComputedStyle(el).textAlign") for n in range(3)]
    assert aligned == ["left", "right", "center"]
    assert refused == []
