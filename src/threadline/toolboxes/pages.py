"""The ``Pages`` toolset: ``Pages.generate_ui`` publishes an HTML page and answers with the code it saved.

Returning the code is the point (docs/architecture.md#toolboxes): a model asked to "review what it wrote" from memory
repeats the mistake it made while writing (a ``showTab`` function defined and never wired to the tabs); given the code
back in the tool result, it reviews concrete text in a second pass and calls again with fixes before it shares the URL.
The toolset's instructions, added to the system prompt while it is offered, ask for exactly that review.

Pages are saved in a store, under the conversation that made them (`Pages` is bound to each conversation through
`Toolset.bind`), and served by the web viewer at ``<base URL>/p/<page_id>``. `page_id_of` reads the page id back
from an answer in a log (the viewer shows the page beside its call; a fork shares the pages its log shows).
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from .._page_ids import page_id_of
from ..store.capabilities import PageStore, require
from ..tools import Tool, Toolset

if TYPE_CHECKING:
    from ..tools import ToolHost

__all__ = [
    "DEFAULT_PAGES_URL",
    "PAGES_INSTRUCTIONS",
    "PAGES_URL_ENV",
    "PAGE_LIMITS",
    "Pages",
    "page_id_of",
    "page_url",
]

PAGES_URL_ENV = "THREADLINE_PAGES_URL"
DEFAULT_PAGES_URL = "http://127.0.0.1:8765"  # the address `threadline serve` binds by default
# Characters allowed in each part of a page (docs/architecture.md#toolboxes); the stores refuse anything larger too.
PAGE_LIMITS = {"html": 50_000, "css": 20_000, "js": 30_000}

PAGES_INSTRUCTIONS = """\
PAGES
You can publish an interactive page with Pages.generate_ui(title, html, css, js). Its answer contains \
generated_code: the exact html, css and js that were saved. Before you share the URL, review generated_code:
- Is every button, tab, link and interactive element wired to an event handler?
- Is every function you defined actually called (by a handler or at load)?
- Is the HTML structure valid (tags closed, every id the script uses present)?
If you find a problem, call Pages.generate_ui again with the fixed code, and review that answer too. Share the URL \
only once the code passes the review. Limits: html 50,000, css 20,000, js 30,000 characters."""


def page_url(page_id: str, base_url: str | None = None) -> str:
    """Where the web viewer shows a page: ``<base>/p/<page_id>``.

    Args:
        page_id: The page's id.
        base_url: The viewer's address (default: ``THREADLINE_PAGES_URL``, else ``http://127.0.0.1:8765``).
    """
    base = base_url or os.environ.get(PAGES_URL_ENV) or DEFAULT_PAGES_URL
    return f"{base.rstrip('/')}/p/{page_id}"


class Pages(Toolset):
    """A `Toolset` named ``Pages`` with one tool, ``Pages.generate_ui(title, html, css="", js="")``.

    Offered to a conversation, the tool saves each page under that conversation (``store.list_pages(id)`` lists
    them; ``threadline logs show ID`` prints them) and answers ``{"success": true, "url", "page_id",
    "generated_code": {"html", "css", "js"}}``; a part over its limit (`PAGE_LIMITS`) is answered with
    ``{"success": false, "error": "…"}`` and nothing is saved. Used outside a conversation, pages are saved
    without one.

    Args:
        store: Where pages are saved (usually the conversations' store).
        base_url: The web viewer's address for the URLs (default: ``THREADLINE_PAGES_URL``, else
            ``http://127.0.0.1:8765``, where ``threadline serve`` listens).

    Example:
        >>> from threadline import llm, open_store
        >>> from threadline.toolboxes import Pages
        >>> store = open_store()
        >>> llm.store(store).tools(Pages(store)).request("Make me a tabbed recipe page").prompt()  # doctest: +SKIP
    """

    __slots__ = ("_bound", "base_url", "store")

    def __init__(self, store: PageStore, *, base_url: str | None = None) -> None:
        require(store, PageStore, who="Pages needs")
        self.store = store
        self.base_url = base_url or os.environ.get(PAGES_URL_ENV) or DEFAULT_PAGES_URL
        # One bound toolset per conversation, made once and dropped with the conversation.
        self._bound: weakref.WeakKeyDictionary[ToolHost, Toolset] = weakref.WeakKeyDictionary()
        super().__init__([self._generate_ui_tool(None)], name="Pages", instructions=PAGES_INSTRUCTIONS)

    def bind(self, conversation: ToolHost) -> Toolset:
        """The toolset for one conversation: its pages are saved under ``conversation.id``."""
        bound = self._bound.get(conversation)
        if bound is None:
            bound = Toolset([self._generate_ui_tool(conversation.id)], name=self.name, instructions=self.instructions)
            self._bound[conversation] = bound
        return bound

    def generate_ui(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> dict[str, Any]:
        """Save a page and answer as the tool does (see the class docstring).

        Args:
            title: The page's title.
            html: The body's HTML.
            css: Styles for the page.
            js: Script for the page.
            conversation_id: The conversation the page belongs to.
        """
        parts = {"html": html, "css": css, "js": js}
        for part, text in parts.items():
            limit = PAGE_LIMITS[part]
            if len(text) > limit:
                return {
                    "success": False,
                    "error": f"{part} is {len(text):,} characters; the limit is {limit:,}. Nothing was saved: "
                    f"shorten the {part} and call generate_ui again.",
                }
        page = self.store.save_page(title, html, css, js, conversation_id=conversation_id)
        return {
            "success": True,
            "url": page_url(page.id, self.base_url),
            "page_id": page.id,
            "generated_code": {"html": html, "css": css, "js": js},
        }

    def _generate_ui_tool(self, conversation_id: str | None) -> Tool:
        save = self.generate_ui

        def generate_ui(title: str, html: str, css: str = "", js: str = "") -> dict[str, Any]:
            """Publish an interactive web page and get its URL. The answer repeats the saved code as
            generated_code: review it, and call again with fixes before sharing the URL.

            Args:
                title: A short title for the page.
                html: The page body's HTML (at most 50,000 characters).
                css: Styles (at most 20,000 characters).
                js: JavaScript (at most 30,000 characters); wire every handler you define.
            """
            return save(title, html, css, js, conversation_id=conversation_id)

        return Tool(generate_ui, name="Pages.generate_ui")

    def __repr__(self) -> str:
        return f"Pages({self.store.url!r})"
