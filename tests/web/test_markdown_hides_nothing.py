"""Markdown never hides a word of a message from the person reading the log, in the viewer and in the HTML export:
text nested past markdown-it's limit (20 block quotes, about 10 list levels), a table row's cells past the header's,
a code fence's info string, link reference definitions and an image's source and title all reach the page (before,
markdown-it dropped each of them without a trace). Checked on chosen cases, on random nested Markdown (hypothesis,
over real HTTP), and in Chromium for the deep case."""

from __future__ import annotations

import random

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import expect

from tests.web._nested_markdown import WORD, missing_words, nested_document
from threadline import AssistantMessage, UserMessage
from threadline.testing import ScriptedModel

DEEP_QUOTES = "\n".join(">" * level + f" quote{level}" for level in range(1, 31))
DEEP_LIST = "\n".join("  " * level + f"- item{level}" for level in range(16))
CASES = {
    "30 nested block quotes": DEEP_QUOTES,
    "16 nested list levels": DEEP_LIST,
    "list markers on one line": "- " * 15 + "innermost",
    "quotes in lists in quotes": "> - > 1. " * 8 + "bottom\n\nafter",
    "an unused reference definition": 'Visible.\n\n[note]: https://example.com/hidden "secret title words"',
    "a used reference definition": 'See [the docs][ref].\n\n[ref]: https://example.com/docs "docs title"',
    "a fence's info string": "```python extra info words\nprint(1)\n```",
    "a table row with extra cells": "| a | b |\n|---|---|\n| x | y | extra | cells |",
    "an image with a relative source and a title": '![chart](images/chart.png "quarterly figures")',
}


def answer_conversation(store, text: str):
    conv = store.create_conversation("Markdown")
    store.append(conv.id, [UserMessage(content="Show me"), AssistantMessage(content=text, model="m")])
    return conv


def pages_of(http: httpx.Client, cid: str) -> dict[str, str]:
    return {"viewer": http.get(f"/c/{cid}").text, "export": http.get(f"/c/{cid}/export.html").text}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_every_word_reaches_the_viewer_and_the_export(sqlite_store, serve, text: str) -> None:
    conv = answer_conversation(sqlite_store, text)
    served = serve(sqlite_store, model=ScriptedModel([]))
    words = WORD.findall(text)
    with httpx.Client(base_url=served.url, timeout=20) as http:
        for where, html in pages_of(http, conv.id).items():
            assert missing_words(words, html) == [], where


def test_random_nested_markdown_keeps_every_word(sqlite_store, serve) -> None:
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=20) as http:
        # A fence in a language Pygments does not know makes it load its plugins once; where IPython is installed
        # that imports jedi, which raises the recursion limit, and hypothesis fails a test that changes it.
        pages_of(http, answer_conversation(sqlite_store, "```no-such-language\nx\n```").id)

        @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.randoms(use_true_random=False))
        def every_word_shows(rng: random.Random) -> None:
            text, words = nested_document(rng)
            conv = answer_conversation(sqlite_store, text)
            for where, html in pages_of(http, conv.id).items():
                assert missing_words(words, html) == [], (where, text)

        every_word_shows()


def test_deep_nesting_is_visible_in_the_browser(sqlite_store, serve, page) -> None:
    conv = answer_conversation(sqlite_store, DEEP_QUOTES + "\n\n" + DEEP_LIST)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    answer = page.locator(f"#m-{sqlite_store.load(conv.id)[1].id} .md")
    for word in ("quote1", "quote25", "quote30", "item0", "item15"):
        expect(answer.get_by_text(word, exact=False).first).to_be_visible()
    shown = set(WORD.findall(answer.inner_text()))
    assert [word for word in WORD.findall(DEEP_QUOTES + DEEP_LIST) if word not in shown] == []
    expect(answer.locator(".as-written-note")).to_be_visible()  # the reader is told why it is not formatted

    page.set_content(httpx.get(f"{served.url}/c/{conv.id}/export.html", timeout=20).text)
    exported = page.locator(".md").last
    expect(exported.get_by_text("quote30", exact=False).first).to_be_visible()
    shown = set(WORD.findall(exported.inner_text()))
    assert [word for word in WORD.findall(DEEP_QUOTES + DEEP_LIST) if word not in shown] == []
