"""A search hit in the part of a long text the page cuts (past its first 20,000 characters): the page opens the
tool's group, says the match lies past the part shown, shows the words around it marked, and links to the part of
the whole text that holds it. Before, the group stayed closed with no mark though the find bar said "match 1 of 1"."""

from __future__ import annotations

from playwright.sync_api import expect

from threadline import AssistantMessage, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

OUTPUT = "filler text here " * 3000 + " the wombatneedle lies here " + "more " * 100  # the match at 51,001


def test_a_hit_past_the_cut_of_a_tool_output_opens_its_group_and_shows_where(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Deep")
    sqlite_store.append(
        conv.id,
        [
            UserMessage(content="read"),
            AssistantMessage(tool_calls=[ToolCall(id="d1", name="read_file", arguments={"path": "x"})], model="m"),
            ToolMessage(tool_call_id="d1", tool_name="read_file", content=OUTPUT, duration_ms=3.0),
            AssistantMessage(content="done", model="m"),
        ],
    )
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/?q=wombatneedle")
    page.locator("main a[href*='at=']").first.click()
    expect(page.locator("#find-status")).to_have_text("match 1 of 1")
    group = page.locator("#call-d1")
    expect(group).to_have_attribute("open", "")
    note = group.locator(".cut-match")
    expect(note).to_be_in_viewport()  # landed on, at the bottom of a long group
    expect(note).to_contain_text("The match lies past the part shown, at character 51,006 of 51,528")
    expect(note.locator("mark")).to_have_text("wombatneedle")
    assert page.locator("mark").count() == 1  # the viewer's own words in the notes are not marked
    expect(group.locator(".cut")).to_contain_text("Show all 51,528 characters")
    note.locator("a", has_text="Show the match").click()
    expect(page.locator("pre.full-text")).to_contain_text("the wombatneedle lies here")


def test_a_hit_past_the_cut_of_a_long_answer_shows_where(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Long answer")
    answer = AssistantMessage(content="word " * 50_000 + "zebracrossing at the end", model="m")
    sqlite_store.append(conv.id, [UserMessage(content="talk"), answer])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}?at={answer.id}&q=zebracrossing")
    note = page.locator(f"#m-{answer.id} .cut-match")
    expect(note).to_contain_text("The match lies past the part shown, at character 250,001 of 250,024")
    expect(note.locator("mark")).to_have_text("zebracrossing")
    href = note.locator("a", has_text="Show the match").get_attribute("href")
    assert href is not None and href.endswith("?part=1")  # the part of 200,000 characters that holds it
    note.locator("a", has_text="Show the match").click()
    expect(page.locator("pre.full-text")).to_contain_text("zebracrossing at the end")


def test_a_hit_in_the_shown_part_needs_no_note(sqlite_store, serve, page) -> None:
    conv = sqlite_store.create_conversation("Near the start")
    answer = AssistantMessage(content="zebracrossing first " + "word " * 10_000, model="m")
    sqlite_store.append(conv.id, [UserMessage(content="talk"), answer])
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}?at={answer.id}&q=zebracrossing")
    expect(page.locator(f"#m-{answer.id} .text mark")).to_have_text("zebracrossing")
    assert page.locator(".cut-match").count() == 0


def test_match_past_cut_follows_the_pages_marking_rule() -> None:
    from threadline.web.timeline import TEXT_LIMIT, match_past_cut

    short = "x" * 100 + " needle"
    assert match_past_cut(short, "needle", 200_000) is None  # not cut
    shown = "needle " + "x " * TEXT_LIMIT + " needle"
    assert match_past_cut(shown, "needle", 200_000) is None  # the shown part holds one: it is marked there
    # A word cut in the middle by the limit is not marked on the page: the note tells of it.
    across = "y" * (TEXT_LIMIT - 3) + " needles and more"
    found = match_past_cut(across, "NEEDLE", 200_000)
    assert found is not None and (found.position, found.part) == (TEXT_LIMIT - 2, 0)
    assert found.excerpt.startswith("…yyy") and found.excerpt.endswith("needles and more")
    assert match_past_cut("z" * TEXT_LIMIT + " aneedle", "needle", 200_000) is None  # not at a word's start
