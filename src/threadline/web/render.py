"""Rendering: the Jinja environment (autoescaping everywhere), its helpers, and the small documents the viewer
builds itself (a generated page, the self-contained HTML export)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from markupsafe import Markup

from .._artifact_names import is_artifact_name
from ..store import PageInfo
from .markdown import highlight_css, render_markdown
from .timeline import Item

__all__ = ["environment", "markup", "page_document", "pager_query", "render_items", "stylesheet"]

_WORD = re.compile(r"[^\W_]+")
_ARTIFACT_URI = re.compile(r"artifact://([^\s/]+)/([A-Za-z0-9_][A-Za-z0-9_.:~-]*)")


def iso(value: datetime) -> str:
    """A timestamp for ``<time datetime=…>`` (the page's script shows it in the reader's time zone)."""
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def when(value: datetime) -> str:
    """A timestamp as shown before the script localizes it, with a four-digit year (not strftime: glibc's ``%Y``
    writes the year 5 as ``5``)."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="minutes") + " UTC"


def epoch_ms(value: datetime) -> str:
    """Milliseconds since the epoch (what the page's script measures a turn's time with)."""
    return f"{value.timestamp() * 1000:.0f}"


def exact(value: datetime) -> str:
    """A timestamp to the second, for the tooltip of a shown time (``2025-03-01 14:30:05 UTC``)."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="seconds") + " UTC"


def marks(text: str, query: str) -> Iterator[tuple[str, bool]]:
    """``text`` in parts, each flagged when it is a word the query's words start (to wrap in ``<mark>``)."""
    words = [w for w in _WORD.findall(query.lower()) if w]
    position = 0
    for match in _WORD.finditer(text):
        if any(match.group().lower().startswith(w) for w in words):
            if match.start() > position:
                yield text[position : match.start()], False
            yield match.group(), True
            position = match.end()
    if position < len(text):
        yield text[position:], False


def artifact_links(text: str, cid: str) -> Iterator[tuple[str, str | None]]:
    """``text`` in parts, each with the viewer's link when it is an ``artifact://`` URI of conversation ``cid``
    (URIs of other conversations, and names ``read_artifact`` would refuse, stay plain text)."""
    position = 0
    for match in _ARTIFACT_URI.finditer(text):
        conversation, name = match.groups()
        if conversation != cid or not is_artifact_name(name):
            continue
        if match.start() > position:
            yield text[position : match.start()], None
        yield match.group(), f"/c/{quote(cid, safe='')}/artifacts/{name}"
        position = match.end()
    if position < len(text):
        yield text[position:], None


@cache
def stylesheet() -> str:
    """The viewer's CSS with the highlighted code's (inlined in exports)."""
    own = resources.files("threadline.web").joinpath("static/viewer.css").read_text(encoding="utf-8")
    return own + "\n" + highlight_css()


def environment(version: str) -> jinja2.Environment:
    """The template environment: autoescaping on for every template, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("threadline.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )
    env.globals.update(
        iso=iso,
        when=when,
        exact=exact,
        epoch_ms=epoch_ms,
        marks=marks,
        artifact_links=artifact_links,
        md=render_markdown,
        asset=lambda name: f"/static/{name}?v={version}",
        highlight_url=f"/highlight.css?v={version}",
    )
    return env


def render_items(env: jinja2.Environment, items: Sequence[Item], cid: str, *, static: bool = False) -> str:
    """The HTML of timeline items (as a page fragment)."""
    return env.get_template("_fragment.html").render(rendered=items, cid=cid, static=static)


def render_tool_part(env: jinja2.Environment, part: str, tool: Any, cid: str) -> str:
    """One part (``body``, ``status``, ``page``) of a tool group, for a result that arrives after its call."""
    return env.get_template("_tool_result.html").render(part=part, tool=tool, cid=cid, static=False)


def pager_query(query: str, offset: int, *, awaiting: bool = False) -> str:
    """The query string of a list page (``awaiting``: only the rows whose calls wait)."""
    params: dict[str, Any] = {}
    if query:
        params["q"] = query
    if awaiting:
        params["awaiting"] = 1
    if offset > 0:
        params["offset"] = offset
    return urlencode(params)


def page_document(page: PageInfo) -> str:
    """A generated page as one HTML document: its title, CSS, HTML and script. It is served with
    `threadline.web.security.PAGE_CSP` (``sandbox allow-scripts``, inline code only, no network), so its script
    runs in an opaque origin, apart from the viewer, and reaches no server; the only escaping here keeps the parts
    from closing each other's elements."""
    from html import escape

    css = page.css.replace("</", "<\\/")
    js = page.js.replace("</", "<\\/")
    script = f"<script>{js}</script>" if js.strip() else ""
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(page.title)}</title><style>{css}</style></head>"
        f"<body>{page.html}{script}</body></html>"
    )


def markup(text: str) -> Markup:
    """Trusted HTML (the viewer's own CSS, already-rendered fragments), never message text."""
    return Markup(text)
