"""Forks in a real browser, on SQLite and PostgreSQL: a fork is named apart from its origin and can be renamed, it
says where it left its origin by position and text, the fork action is in plain sight, and the two branches are
compared side by side from the fork point."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from tests.store._backends import store, store_url  # noqa: F401 - fixtures (SQLite and PostgreSQL)
from tests.web._data import simple_conversation, weather_conversation
from tests.web.conftest import screenshot
from threadline.testing import ScriptedModel

TOKEN = "fork-t0ken"


def fork_from_answer(page, served, conv):
    """Fork from the first answer (the 5th message) in the browser; returns the fork's id."""
    page.goto(f"{served.url}/c/{conv.id}")
    page.locator(f"#m-{conv.messages[4].id} .fork-button").click()
    expect(page.locator(".origin")).to_contain_text("Forked from")
    return page.url.rsplit("/", 1)[1]


def test_a_fork_is_named_apart_and_can_be_renamed(store, serve, page) -> None:  # noqa: F811
    conv = weather_conversation(store)
    served = serve(store, model=ScriptedModel([]))
    fork_id = fork_from_answer(page, served, conv)
    expect(page.locator("h1")).to_have_text("Weather in Paris and Rome? (fork)")
    second = fork_from_answer(page, served, conv)
    expect(page.locator("h1")).to_have_text("Weather in Paris and Rome? (fork 2)")
    assert second != fork_id

    page.goto(f"{served.url}/c/{fork_id}")
    page.click(".rename summary")
    page.fill(".rename input[name=title]", "  Paris only <i>please</i>  ")
    page.click(".rename button[type=submit]")
    expect(page.locator("h1")).to_have_text("Paris only <i>please</i>")
    assert store.get_conversation(fork_id).title == "Paris only <i>please</i>"
    assert store.get_conversation(conv.id).title == "Weather in Paris and Rome?"  # the origin keeps its name

    page.goto(f"{served.url}/")
    titles = page.locator(".conv-title").all_inner_texts()
    assert sorted(titles) == sorted(
        ["Paris only <i>please</i>", "Weather in Paris and Rome? (fork 2)", "Weather in Paris and Rome?"]
    )

    # A title that is empty after trimming is refused with a clear message, and nothing changes.
    page.goto(f"{served.url}/c/{fork_id}")
    page.click(".rename summary")
    page.fill(".rename input[name=title]", "   ")
    page.click(".rename button[type=submit]")
    expect(page.locator(".error-page")).to_contain_text("A title cannot be empty")
    assert store.get_conversation(fork_id).title == "Paris only <i>please</i>"


def test_a_fork_names_its_point_by_position_and_text_and_the_action_is_in_sight(store, serve, page) -> None:  # noqa: F811
    conv = weather_conversation(store)
    served = serve(store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    actions = page.locator(f"#m-{conv.messages[4].id} .msg-actions")
    page.mouse.move(0, 0)  # not hovering any message
    assert actions.evaluate("el => getComputedStyle(el).opacity") == "1"
    expect(actions.locator(".fork-button")).to_be_visible()

    fork_from_answer(page, served, conv)
    origin = page.locator(".origin").first
    expect(origin).to_contain_text("Forked from Weather in Paris and Rome? at message 5 of 7")
    expect(origin).to_contain_text("“Sunny in both Paris and Rome today.”")
    assert conv.messages[4].id not in origin.inner_text()  # no raw id


def test_two_branches_compare_side_by_side_from_the_fork_point(store, serve, page) -> None:  # noqa: F811
    conv = weather_conversation(store)
    served = serve(store, model=ScriptedModel(["Cloudy in Oslo."]))
    fork_id = fork_from_answer(page, served, conv)
    page.fill("#composer textarea", "And in Oslo?")
    page.click("#composer button[type=submit]")
    expect(page.locator("#items .msg.role-assistant").last).to_contain_text("Cloudy in Oslo.")

    page.click("text=Compare with the origin")
    expect(page).to_have_url(f"{served.url}/c/{fork_id}/compare")
    point = page.locator(".fork-point")
    expect(point).to_contain_text("message 5")
    expect(point).to_contain_text("Sunny in both Paris and Rome today.")
    origin_side, fork_side = page.locator(".branch").all()
    expect(origin_side.locator(".branch-head")).to_contain_text("Weather in Paris and Rome?")
    expect(origin_side).to_contain_text("And the history of Rome?")
    expect(origin_side.locator(".role-failure")).to_contain_text("Rome was founded in 753 BC and")
    expect(origin_side).not_to_contain_text("Oslo")
    expect(fork_side.locator(".branch-head")).to_contain_text("(fork)")
    expect(fork_side).to_contain_text("And in Oslo?")
    expect(fork_side).to_contain_text("Cloudy in Oslo.")
    expect(fork_side).not_to_contain_text("history of Rome")
    assert origin_side.bounding_box()["x"] < fork_side.bounding_box()["x"]  # side by side
    screenshot(page, "compare")

    page.goto(f"{served.url}/c/{conv.id}")
    expect(page.locator(".origin a", has_text="compare")).to_have_attribute("href", f"/c/{fork_id}/compare")
    with httpx.Client(base_url=served.url, timeout=20) as http:
        not_fork = http.get(f"/c/{conv.id}/compare")
        assert not_fork.status_code == 404 and "not a fork" in not_fork.text


def test_rename_and_fork_need_the_token_and_the_viewers_origin(store, serve) -> None:  # noqa: F811
    conv = simple_conversation(store, "Hello?", "Hi.")
    served = serve(store, model=ScriptedModel([]), token=TOKEN)
    auth = {"authorization": f"Bearer {TOKEN}"}
    ours = {**auth, "origin": served.url}
    with httpx.Client(base_url=served.url, timeout=20) as http:
        for origin in (None, "null", "http://evil.example"):
            headers = {**auth, **({"origin": origin} if origin else {})}
            assert http.post(f"/c/{conv.id}/title", data={"title": "owned"}, headers=headers).status_code == 403
        no_token = http.post(f"/c/{conv.id}/title", data={"title": "owned"}, headers={"origin": served.url})
        assert no_token.status_code == 401
        assert store.get_conversation(conv.id).title == "Hello?"

        renamed = http.post(f"/c/{conv.id}/title", data={"title": "Greetings"}, headers=ours)
        assert renamed.status_code == 303 and renamed.headers["location"] == f"/c/{conv.id}"
        assert store.get_conversation(conv.id).title == "Greetings"
        too_long = http.post(f"/c/{conv.id}/title", data={"title": "x" * 201}, headers=ours)
        assert too_long.status_code == 400 and re.search("at most 200 characters", too_long.text)
        missing = http.post("/c/no-such-conversation/title", data={"title": "x"}, headers=ours)
        assert missing.status_code == 404
    assert store.get_conversation(conv.id).title == "Greetings"
