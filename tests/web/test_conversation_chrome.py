"""The conversation page's own controls, in a real browser: a long conversation opens at its end with its title,
Rename, Context and Export still in view; Rename looks like a button; bare web addresses in answers are links (http
and https only); the composer says when it would continue on another model than the one that made the
conversation; and two imported copies of one conversation can be told apart in the list."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import expect

from threadline import AssistantMessage, UserMessage
from threadline.store.jsonfiles import read_log_file
from threadline.testing import ScriptedModel
from threadline.web.markdown import LINK_REL


def long_conversation(store, title: str = "Planning the archive move", turns: int = 60):
    conv = store.create_conversation(title)
    log = []
    for turn in range(1, turns + 1):
        log.append(UserMessage(content=f"Question {turn}"))
        log.append(AssistantMessage(content=f"Answer {turn}\n\n" + "A long paragraph. " * 20, model="openai:gpt-4o"))
    store.append(conv.id, log)
    return conv


def test_a_long_conversation_opens_at_its_end_with_title_rename_context_and_export_at_hand(
    sqlite_store, serve, page
) -> None:
    conv = long_conversation(sqlite_store)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("#items .msg").last).to_contain_text("Answer 60")
    expect(page.locator("#items .msg").last).to_be_in_viewport()  # it opens at the end, as before
    expect(page.locator("h1#conv-title")).not_to_be_in_viewport()

    expect(page.locator("#toolbar .bar-title")).to_be_in_viewport()
    expect(page.locator("#toolbar .bar-title")).to_have_text("Planning the archive move")
    for control in (".rename summary", "nav.conv-actions >> text=Context", "nav.conv-actions >> text=Export JSON"):
        expect(page.locator(control)).to_be_in_viewport()

    page.click(".rename summary")  # without scrolling: the box opens where the reader is, ready to type
    expect(page.locator(".rename input[name=title]")).to_be_focused()
    page.fill(".rename input[name=title]", "The archive move")
    page.click(".rename button[type=submit]")
    expect(page.locator("h1#conv-title")).to_have_text("The archive move")

    page.click("nav.conv-actions >> text=Context")
    expect(page).to_have_url(f"{served.url}/c/{conv.id}/context")


def test_the_title_shows_once_in_a_short_conversation(sqlite_store, serve, page) -> None:
    conv = long_conversation(sqlite_store, "Short one", turns=1)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator("h1#conv-title")).to_be_in_viewport()
    expect(page.locator("#toolbar .bar-title")).to_be_hidden()  # the header's title is in sight: no second one


def test_rename_looks_like_a_button(sqlite_store, serve, page) -> None:
    conv = long_conversation(sqlite_store, turns=1)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    summary = page.locator(".rename summary")
    style = summary.evaluate(
        "el => { const s = getComputedStyle(el); return {cursor: s.cursor, border: s.borderTopWidth, "
        "borderStyle: s.borderTopStyle, color: s.color, muted: getComputedStyle(document.querySelector("
        "'.conv-facts')).color}; }"
    )
    assert style["cursor"] == "pointer"
    assert style["borderStyle"] == "solid" and style["border"] != "0px"  # a framed control, not a grey label
    assert style["color"] != style["muted"]


def test_bare_web_addresses_in_answers_are_links_and_nothing_else_is(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Links")
    answer = AssistantMessage(
        content=(
            "Docs at https://docs.example.com/guide?page=2. Mirror (http://mirror.example.org/a_(b)) too.\n\n"
            "Not these: javascript:alert('x') ftp://files.example.com/f `https://in.code.example/x` "
            "and [named](https://named.example/) stays one link."
        ),
        model="m",
    )
    sqlite_store.append(conv.id, [UserMessage(content="Where are the docs?"), answer])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    links = page.locator(f"#m-{answer.id} .md a")
    expect(links).to_have_count(3)
    hrefs = [links.nth(i).get_attribute("href") for i in range(3)]
    assert hrefs == [
        "https://docs.example.com/guide?page=2",
        "http://mirror.example.org/a_(b)",
        "https://named.example/",
    ]
    for i in range(3):
        expect(links.nth(i)).to_have_attribute("rel", LINK_REL)
    expect(links.first).to_have_text("https://docs.example.com/guide?page=2")  # the full stop is the sentence's
    text = page.locator(f"#m-{answer.id} .md")
    expect(text).to_contain_text("javascript:alert('x') ftp://files.example.com/f")
    expect(text.locator("code")).to_have_text("https://in.code.example/x")


def test_the_composer_says_when_the_conversation_continues_on_another_model(sqlite_store, serve, page) -> None:
    made_elsewhere = long_conversation(sqlite_store, "Made on gpt-4o", turns=1)
    made_here = sqlite_store.create_conversation("Made here")
    sqlite_store.append(made_here.id, [UserMessage(content="hi"), AssistantMessage(content="hello", model="scripted")])
    served = serve(sqlite_store, model=ScriptedModel([]))

    page.goto(f"{served.url}/c/{made_elsewhere.id}")
    note = page.locator("#composer .model-fixed")
    expect(note).to_have_text("continues on scripted; this conversation was made on openai:gpt-4o")
    expect(note).to_be_in_viewport()

    page.goto(f"{served.url}/c/{made_here.id}")
    expect(page.locator("#composer .model-fixed")).to_have_text("on scripted")


def test_the_model_menu_preselects_the_conversations_own_model(sqlite_store, serve, page, monkeypatch) -> None:
    monkeypatch.setenv("THREADLINE_MODEL", "openai:gpt-4o")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # offered in the menu; never called here
    conv = sqlite_store.create_conversation("On mini")
    sqlite_store.append(
        conv.id, [UserMessage(content="hi"), AssistantMessage(content="hello", model="openai:gpt-4o-mini")]
    )
    served = serve(sqlite_store)
    page.goto(f"{served.url}/c/{conv.id}")
    menu = page.locator("#composer select[name=model]")
    expect(menu).to_have_value("openai:gpt-4o-mini")
    expect(page.locator("#composer .model-change")).to_have_count(0)


def test_two_imported_copies_of_one_conversation_are_told_apart_in_the_list(
    sqlite_store, serve, page, tmp_path: Path
) -> None:
    source = tmp_path / "chat.json"
    source.write_text(
        json.dumps([{"role": "user", "content": "Plan a trip"}, {"role": "assistant", "content": "To Lisbon."}])
    )
    first, second = sqlite_store.import_conversations([read_log_file(source), read_log_file(source)])
    other = sqlite_store.create_conversation("Something else")
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(served.url)
    rows = page.locator("li.conv-row", has_text="Plan a trip")
    expect(rows).to_have_count(2)
    shown = sorted(rows.nth(i).locator(".conv-id").inner_text() for i in range(2))
    assert shown == sorted(f"id …{info.id[-8:]}" for info in (first, second))
    assert shown[0] != shown[1]
    expect(page.locator("li.conv-row", has_text="Something else").locator(".conv-id")).to_have_count(0)
    assert other.id
