"""Random Markdown nested past markdown-it's limits, with the words it must show; and the text a reader sees of the
rendered messages of a page. Shared by the viewer tests and the fault campaign (``tests/faults/hostile_web.py``).

A document is a chain of containers (block quotes, bullet and ordered list items, 1 to 200 deep) with blocks at
random levels of it: paragraphs whose words sit under random inline nesting (emphasis, strong, strikethrough, link
text, up to 60 deep), fenced code with an info string, tables whose rows have more cells than the header, headings,
and link reference definitions (used, or not). Every word is unique (``w17k``, ``é17k``, ``工17k``...), so finding it
in the page proves that this occurrence reached it.
"""

from __future__ import annotations

import itertools
import random
import re
from html.parser import HTMLParser

WORD = re.compile(r"[^\W_]+")
URL = "https://example.com/x"
MAX_CHARS = 19_000  # under the timeline's cut (TEXT_LIMIT), so the page shows the whole text


class Words:
    """Unique words, remembered as they are handed out."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counter = itertools.count()
        self.given: list[str] = []

    def __call__(self, count: int = 1) -> str:
        made = [f"{self.rng.choice('wéж工q')}{next(self.counter)}k" for _ in range(count)]
        self.given.extend(made)
        return " ".join(made)


def _inline(words: Words, rng: random.Random) -> str:
    """A few words, one of them under random inline nesting."""
    text = words()
    for _ in range(rng.choice([0, 1, 3, rng.randint(0, 60)])):
        text = rng.choice(["*{}*", "**{}**", "~~{}~~", "_{}_", "[{}](" + URL + ")", "[{} x]"]).format(text)
    code = f" `{words()}`" if rng.random() < 0.2 else ""
    return f"{words(rng.randint(0, 3))} {text}{code} {words(rng.randint(0, 2))}".strip()


def _leaf(words: Words, rng: random.Random) -> list[str]:
    """One block's lines."""
    kind = rng.choice(["paragraph"] * 5 + ["fence", "table", "heading", "reference", "html"])
    if kind == "fence":
        return [f"```{words(rng.randint(1, 3))}", words(rng.randint(1, 4)), "```"]
    if kind == "table":
        columns = rng.randint(1, 4)
        rows = ["| " + " | ".join(words() for _ in range(columns)) + " |", "|" + "---|" * columns]
        for _ in range(rng.randint(1, 3)):
            rows.append("| " + " | ".join(words() for _ in range(rng.randint(1, columns + 3))) + " |")
        return rows
    if kind == "heading":
        return [f"{'#' * rng.randint(1, 6)} {_inline(words, rng)}"]
    if kind == "reference":
        label = words()
        lines = [f'[{label}]: {URL} "{words(rng.randint(0, 3))}"']
        return lines + ([f"see [{label}]"] if rng.random() < 0.5 else [])
    if kind == "html":
        return [f"<div>{words()}", f"</div> {words()}"]
    return [_inline(words, rng) for _ in range(rng.randint(1, 2))]


def _contain(lines: list[str], kind: str) -> list[str]:
    if kind == "quote":
        return [">" + (" " + line if line else "") for line in lines]
    marker = "- " if kind == "bullet" else "1. "
    indent = " " * len(marker)
    return [marker + lines[0]] + [indent + line if line else "" for line in lines[1:]]


def nested_document(rng: random.Random, depth: int | None = None) -> tuple[str, list[str]]:
    """A random nested document (``depth`` containers deep, 1 to 200 when None) and the words it holds."""
    while True:
        words = Words(rng)
        levels = depth if depth is not None else rng.choice([rng.randint(1, 30), rng.randint(1, 200)])
        kinds = [rng.choice(["quote", "quote", "bullet", "ordered"]) for _ in range(levels)]
        # Blocks at a few random levels (every level would make a 200-deep document megabytes long), and the deepest.
        crowded = set(rng.sample(range(levels), min(levels, rng.randint(1, 6)))) | {levels - 1}
        lines = _leaf(words, rng)
        for level in reversed(range(levels)):
            lines = _contain(lines, kinds[level])
            if level in crowded and level:
                after = ["", *_leaf(words, rng)] if rng.random() < 0.5 else []
                lines = [*_leaf(words, rng), "", *lines, *after]
        text = "\n".join([*_leaf(words, rng), "", *lines])
        if len(text) <= MAX_CHARS:
            return text, words.given


class _MarkdownText(HTMLParser):
    """The text inside the page's rendered messages (``<div class="… md">``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if self.depth:
            self.depth += 1
        elif tag == "div" and "md" in classes:
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def rendered_text(html: str) -> str:
    """The text of every rendered message of a page (what a reader sees of them; not the hidden source)."""
    parser = _MarkdownText()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def missing_words(words: list[str], html: str) -> list[str]:
    """The ``words`` the rendered messages of ``html`` do not show."""
    shown = set(WORD.findall(rendered_text(html)))
    return [word for word in words if word not in shown]
