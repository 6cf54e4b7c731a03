"""Every document the code cites is one a reader of the repository can open: no citation of a document outside it,
and every ``docs/<file>.md#<anchor>`` names a file in ``docs/`` with a heading of that anchor (GitHub's rule)
(docs/contributing.md#writing)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# Documents that live outside the repository: the design notes and the style notes the project began from, and the
# notes they grew from. The words are split so that this file does not cite them itself.
OUTSIDE = re.compile(
    "|".join(
        [
            r"\b" + "DES" + r"IGN\b",  # the design document, by section or file name (a name like X_NAMES is fine)
            r"\b" + "STY" + r"LE\b",  # the style notes, by file name or as "(S...: parity test)"
            r"\b" + "see" + r"ds?/",  # a design note by its path
            r"\b" + "see" + r"d-\d",  # a design note by its number
            r"\bthe " + "see" + r"ds\b",  # the design notes as a whole
        ]
    )
)
CITATION = re.compile(r"\bdocs/([\w.-]+\.md)(?:#([\w-]+))?")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
LINK = re.compile(r"\]\((?!https?:|mailto:)([\w.-]*\.md)?(?:#([\w-]+))?\)")


def cited_files() -> list[Path]:
    """The text files of src/, tests/, bench/, and the README."""
    files = [ROOT / "README.md"]
    for folder in ("src", "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and b"\0" not in path.read_bytes():
                files.append(path)
    return files


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lowercase, punctuation dropped (``-`` and ``_`` kept), spaces become
    ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading counts by its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading in a Markdown file (outside code blocks); a repeated heading gets ``-1``,
    ``-2``… as on GitHub."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            base = anchor(match.group(2))
            seen = counts.get(base, 0)
            counts[base] = seen + 1
            found.add(base if seen == 0 else f"{base}-{seen}")
    return found


def citations_in(text: str) -> list[tuple[int, str, str | None]]:
    """``(line, file, anchor)`` of every ``docs/<file>.md[#<anchor>]`` in a text."""
    return [
        (text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2)) for match in CITATION.finditer(text)
    ]


def problem(file: str, anchor_: str | None) -> str | None:
    """What is wrong with a citation of ``docs/<file>#<anchor>``, or None."""
    path = DOCS / file
    if not path.is_file():
        return f"docs/{file} does not exist"
    if anchor_ is not None and anchor_ not in anchors(path):
        return f"docs/{file} has no heading whose anchor is #{anchor_}"
    return None


def test_nothing_cites_a_document_outside_the_repository() -> None:
    found = []
    for path in cited_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_every_cited_doc_and_anchor_exists() -> None:
    found = []
    cited = 0
    for path in cited_files():
        for number, file, anchor_ in citations_in(path.read_text(encoding="utf-8", errors="replace")):
            cited += 1
            wrong = problem(file, anchor_)
            if wrong is not None:
                found.append(f"{path.relative_to(ROOT)}:{number}: {wrong}")
    assert found == []
    assert cited >= 50  # the code does cite the docs: a pattern that matched nothing would pass everything above


def test_links_between_docs_resolve() -> None:
    found = []
    for path in sorted(DOCS.glob("*.md")):
        for match in LINK.finditer(path.read_text(encoding="utf-8")):
            file, anchor_ = match.group(1) or path.name, match.group(2)
            wrong = problem(file, anchor_)
            if wrong is not None:
                found.append(f"{path.relative_to(ROOT)}: {wrong}")
    assert found == []


def test_anchor_follows_github() -> None:
    assert anchor("Version 2.1") == "version-21"
    assert anchor("fluent_llm 1.0") == "fluent_llm-10"
    assert anchor("generate_text and reactivity") == "generate_text-and-reactivity"
    assert anchor("Ctrl-C") == "ctrl-c"
    assert anchor("`Store`: the interface") == "store-the-interface"
    assert problem("file-format.md", "version-21") is None
    assert problem("file-format.md", "version-22") is None
    assert problem("file-format.md", "version-23") is not None
    assert problem("no-such-file.md", None) is not None


def test_the_patterns_catch_what_they_are_for() -> None:
    design, style, seeds = "DES" + "IGN", "STY" + "LE", "see" + "ds"
    for cited in [f"({design} §11)", f"{design}.md", f"the {design}'s floor", f"{style}.md", f"({style}: parity)",
                  f"``{seeds}/001``", f"{seeds[:-1]}-001 layout", f"the {seeds}' callers"]:  # fmt: skip
        assert OUTSIDE.search(cited), cited
    for fine in ["DESIGN_NAMES = [", "LIGHT_STYLE = 'default'", "random.Random(seed)", "openai_seed"]:
        assert not OUTSIDE.search(fine), fine
    assert citations_in("see docs/failure-rules.md#secrets.\n(docs/file-format.md)") == [
        (1, "failure-rules.md", "secrets"),
        (2, "file-format.md", None),
    ]
