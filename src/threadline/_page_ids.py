"""Which page a tool result reports having made: ``Pages.generate_ui`` answers JSON holding the ``page_id`` it saved.

Shared by the viewer (it shows a page beside the call that made it) and the stores (a fork shares the pages its copied
log shows, see `threadline.store.Store.fork_conversation`). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from .message_types import Message, ToolMessage

__all__ = ["page_id_of", "page_ids"]

_PAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def page_id_of(result: ToolMessage) -> str | None:
    """The page a tool result reports having made: ``Pages.generate_ui`` answers JSON holding ``page_id``."""
    content = result.content
    if result.is_error or '"page_id"' not in content:
        return None
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("success") is False:
        return None
    page_id = data.get("page_id")
    return page_id if isinstance(page_id, str) and _PAGE_ID.match(page_id) else None


def page_ids(messages: Iterable[Message]) -> list[str]:
    """The pages the tool results among ``messages`` report having made, in log order, each once."""
    found: dict[str, None] = {}
    for message in messages:
        if type(message) is ToolMessage:
            page_id = page_id_of(message)
            if page_id is not None:
                found.setdefault(page_id, None)
    return list(found)
