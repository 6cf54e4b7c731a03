"""Assistant text as the model meant it: Markdown rendered on the server (markdown-it-py: CommonMark, with tables and
strikethrough), fenced code highlighted by Pygments.

Safe by construction, whatever a message holds:

- raw HTML is off: ``<script>`` or ``<img onerror=…>`` in a message is shown as text;
- links go through markdown-it's ``validateLink`` (no ``javascript:``, ``vbscript:``, ``file:`` or ``data:`` links:
  such a link stays text), and open apart from the viewer (``rel="noopener noreferrer nofollow"``);
- an image becomes a link to it, so a message never makes the browser fetch anything by itself;
- a bare ``http://`` or ``https://`` address in the text becomes a link (`_autolink`; no other scheme does, and
  the address goes through the same ``validateLink``), with the same ``rel``.

Never hides a word of the message (a reviewer reads the log here): markdown-it drops what lies deeper than its nesting
limit (20 block quotes, about 10 list levels), a table row's cells past the header's, a code fence's info string past
its first word and every link reference definition. Definitions and info strings are shown as written; and each
rendering is checked against the text (`_shows_every_word`): when a word of the text is not on the rendered page (as
text, a link's address or title, or an ordered list's number), the whole message is shown as written instead, under a
note saying why.

Rendered HTML is cached by text (the same message renders once however often its part of the log is shown), so a
page of a 10,000-message conversation costs what its own few messages cost, once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from html import unescape
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference, unescapeAll
from markdown_it.rules_block import reference
from markdown_it.rules_block.state_block import StateBlock
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
AS_WRITTEN_NOTE = "Shown as written: rendered as Markdown, part of this text would not be shown."
_WORD = re.compile(r"[^\W_]+")
# The label of a full reference link, "[text][label]": the page shows the text, the definition shows the label.
_FULL_REFERENCE = re.compile(r"\]\[((?:[^\[\]\\]|\\.)+)\]")
# A character reference as markdown-it reads one; outside code it shows as the character it names.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


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
    """An image as a link to it (alt text as the label, its title on hover): nothing is fetched unless the reader
    follows it. An image no browser could fetch from here (a relative path) shows its source as text."""
    token = tokens[index]
    source = str(token.attrGet("src") or "")
    title = str(token.attrGet("title") or "")
    if not source.lower().startswith(("https://", "http://")):
        shown = [token.content or source]
        if token.content and source:
            shown.append(f"({source})")
        if title:
            shown.append(f"“{title}”")
        return f"[image: {escape(' '.join(shown))}]"
    hover = f' title="{escape(title)}"' if title else ""
    label = escape(token.content or source)
    return f'<a href="{escape(source)}" rel="{LINK_REL}" target="_blank"{hover}>image: {label}</a>'


def _fence(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    """A fenced block under its info string (markdown-it keeps only its first word, as a class no one sees)."""
    info = unescapeAll(tokens[index].info).strip()
    code = str(renderer.fence(tokens, index, options, env))
    return f'<div class="code-info">{escape(info)}</div>\n{code}' if info else code


def _reference(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A link reference definition, kept as a token to show (markdown-it drops it from the page once read)."""
    if not reference(state, start, end, silent):
        return False
    if not silent:
        token = state.push("link_definition", "", 0)
        token.content = state.getLines(start, state.line, state.blkIndent, False).strip()
        token.map = [start, state.line]
    return True


def _link_definition(renderer: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    return f'<p class="link-definition">{escape(tokens[index].content)}</p>\n'


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


# A bare web address in running text: http or https only, up to a space or a character no address holds unquoted.
_BARE_URL = re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?*_~"  # sentence punctuation after an address is not part of it


def _url_end(url: str) -> str:
    """``url`` without the punctuation that ends the sentence it stands in (a ``)`` only when it closes nothing
    opened inside the address, as in "(see https://example.com/a)")."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last == ")" and url.count(")") > url.count("(")):
            url = url[:-1]
        else:
            break
    return url


def _autolink(state: Any) -> None:
    """Make the bare ``http(s)://`` addresses of text tokens links, as ``<https://…>`` would (markdown-it's own
    linkify needs another package). Text inside a link stays as it is."""
    parser = state.md
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
            if token.type != "text" or depth > 0 or "://" not in token.content:
                children.append(token)
                continue
            children.extend(_linked(parser, token))
        block.children = children


def _linked(parser: MarkdownIt, token: Token) -> list[Token]:
    """A text token split into text and links at its bare web addresses."""
    text = token.content
    pieces: list[Token] = []
    position = 0
    for match in _BARE_URL.finditer(text):
        url = _url_end(match.group())
        href = parser.normalizeLink(url)
        if len(url) <= len(match.group().split("://", 1)[0]) + 3 or not parser.validateLink(href):
            continue
        if match.start() > position:
            pieces.append(_text_token(text[position : match.start()], token.level))
        opening = Token("link_open", "a", 1)
        opening.attrs = {"href": href}
        opening.markup = "linkify"
        opening.info = "auto"
        opening.level = token.level
        pieces.append(opening)
        pieces.append(_text_token(parser.normalizeLinkText(url), token.level + 1))
        closing = Token("link_close", "a", -1)
        closing.markup = "linkify"
        closing.info = "auto"
        closing.level = token.level
        pieces.append(closing)
        position = match.start() + len(url)
    if not pieces:
        return [token]
    if position < len(text):
        pieces.append(_text_token(text[position:], token.level))
    return pieces


def _text_token(content: str, level: int) -> Token:
    token = Token("text", "", 0)
    token.content = content
    token.level = level
    return token


@cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _highlight})
    parser.enable(["table", "strikethrough"])
    parser.add_render_rule("link_open", _link_open)
    parser.add_render_rule("image", _image)
    parser.add_render_rule("th_open", _cell_open)
    parser.add_render_rule("td_open", _cell_open)
    parser.add_render_rule("fence", _fence)
    parser.block.ruler.at("reference", _reference)
    parser.add_render_rule("link_definition", _link_definition)
    parser.core.ruler.push("autolink_bare", _autolink)
    return parser


class _Shown(HTMLParser):
    """What rendered HTML puts before a reader: its text, and each link's address and title (shown on hover)."""

    def __init__(self, parser: MarkdownIt) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = parser
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if tag == "a" and name in ("href", "title") and value:
                self.attributes.append(value)
                if name == "href":  # and as written: markdown-it percent-encodes it and punycodes its host
                    self.attributes.append(self.markdown.normalizeLinkText(value))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text))


def _shows_every_word(text: str, html: str, tokens: Sequence[Token], references: Mapping[str, Any]) -> bool:
    """Whether each word of Markdown ``text`` (each occurrence) is shown by ``html``, its rendering: in its text, a
    link's address or title; or, from its parse, the number an ordered list item was written with (``tokens``) or the
    label of a link to a defined reference (``references``: the parse's ``env["references"]``; the definition shows
    it)."""
    shown = _Shown(_parser())
    shown.feed(html)
    shown.close()
    # Text as the browser runs it together ("a<em>b</em>" reads "ab") and piece by piece (a highlighted "% o" + "f").
    words = _words("".join(shown.text)) | _words(" ".join(shown.text))
    words += _words(" ".join(shown.attributes))
    words += _words(" ".join(token.info for token in tokens if token.type == "list_item_open"))
    labels = (label for label in _FULL_REFERENCE.findall(text) if normalizeReference(label) in references)
    words += _words(" ".join(labels))
    # A character reference shows as its character outside code and as written inside it: either reading may hold.
    decoded = _ENTITY.sub(lambda match: unescape(match.group()), text)
    return not _words(text) - words or not _words(decoded) - words


@lru_cache(maxsize=4_096)
def render_markdown(text: str) -> Markup:
    """The HTML of Markdown ``text`` (safe to put in a page as it is: see the module docstring); the text as written,
    under a note, when its rendering would not show every word of it."""
    parser = _parser()
    env: dict[str, Any] = {}
    tokens = parser.parse(text, env)
    html = parser.renderer.render(tokens, parser.options, env)
    if _shows_every_word(text, html, tokens, env.get("references", {})):
        return Markup(html)
    return Markup(f'<p class="as-written-note">{AS_WRITTEN_NOTE}</p>\n<div class="as-written">{escape(text)}</div>')


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
