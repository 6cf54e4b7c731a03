"""Assistant text as the model meant it: Markdown rendered on the server (markdown-it-py: CommonMark, with tables and
strikethrough), fenced code highlighted by Pygments.

Safe by construction, whatever a message holds:

- raw HTML is off: ``<script>`` or ``<img onerror=…>`` in a message is shown as text;
- links go through markdown-it's ``validateLink`` (no ``javascript:``, ``vbscript:``, ``file:`` or ``data:`` links:
  such a link stays text), and open apart from the viewer (``rel="noopener noreferrer nofollow"``);
- an image becomes a link to it, so a message never makes the browser fetch anything by itself.

Rendered HTML is cached by text (the same message renders once however often its part of the log is shown), so a
page of a 10,000-message conversation costs what its own few messages cost, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["highlight_css", "render_markdown"]

# Code blocks are scoped under this selector, so the highlighter's short class names (.k, .s) touch nothing else.
SCOPE = ".md pre code"
LIGHT_STYLE = "default"
DARK_STYLE = "github-dark"
_FORMATTER = HtmlFormatter(nowrap=True)
LINK_REL = "noopener noreferrer nofollow"


def _highlight(code: str, language: str, attributes: str) -> str:
    """Highlighted HTML of a fenced block in a language Pygments knows; "" (markdown-it escapes it) otherwise.
    Never guessed: guessing is slow and often wrong, and a plain block reads fine."""
    if not language:
        return ""
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return ""
    return str(highlight(code, lexer, _FORMATTER))


def _link_open(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    token = tokens[index]
    token.attrSet("rel", LINK_REL)
    token.attrSet("target", "_blank")
    return str(renderer.renderToken(tokens, index, options, env))


def _image(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    """An image as a link to it (alt text as the label): nothing is fetched unless the reader follows it."""
    token = tokens[index]
    source = str(token.attrGet("src") or "")
    label = escape(token.content or source)
    if not source.lower().startswith(("https://", "http://")):
        return f"[image: {label}]"
    return f'<a href="{escape(source)}" rel="{LINK_REL}" target="_blank">image: {label}</a>'


_ALIGNMENTS = {"text-align:left": "align-left", "text-align:center": "align-center", "text-align:right": "align-right"}


def _cell_open(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    """A table cell aligned by a class, not by the inline style markdown-it writes (the viewer's content security
    policy allows no inline style, so ``|--:|`` came out left-aligned)."""
    token = tokens[index]
    style = token.attrGet("style")
    if style is not None:
        token.attrs.pop("style", None)
        kind = _ALIGNMENTS.get(str(style).replace(" ", ""))
        if kind is not None:
            token.attrSet("class", kind)
    return str(renderer.renderToken(tokens, index, options, env))


@cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight})
    parser.enable(["table", "strikethrough"])
    parser.add_render_rule("link_open", _link_open)
    parser.add_render_rule("image", _image)
    parser.add_render_rule("th_open", _cell_open)
    parser.add_render_rule("td_open", _cell_open)
    return parser


@lru_cache(maxsize=4_096)
def render_markdown(text: str) -> Markup:
    """The HTML of Markdown ``text`` (safe to put in a page as it is: see the module docstring)."""
    return Markup(_parser().render(text))


def _rules(style: str) -> list[str]:
    """The highlighter's rules for the tokens of one style, under `SCOPE` (not its rules for the block itself, line
    numbers or bare ``pre``: the viewer styles those)."""
    lines = HtmlFormatter(style=style).get_style_defs(SCOPE).splitlines()
    return [line for line in lines if line.startswith(f"{SCOPE} .")]


@cache
def highlight_css() -> str:
    """The CSS of highlighted code: a light style, and a dark one for readers who prefer dark (tokens the dark style
    leaves alone go back to the text colour rather than keep a light-mode colour)."""
    plain = "color: inherit; background: none; border: none; font-style: inherit; font-weight: inherit"
    reset = f"  {SCOPE} [class] {{ {plain} }}"
    dark = "\n".join(f"  {line}" for line in _rules(DARK_STYLE))
    return (
        "/* Highlighted code (Pygments "
        + LIGHT_STYLE
        + " and "
        + DARK_STYLE
        + "), made by threadline.web.markdown */\n"
        + "\n".join(_rules(LIGHT_STYLE))
        + "\n@media (prefers-color-scheme: dark) {\n"
        + reset
        + "\n"
        + dark
        + "\n}\n"
    )
