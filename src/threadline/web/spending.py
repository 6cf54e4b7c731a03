"""What a conversation's model calls spent, for the line in its header: ``GET /c/<id>/usage`` (JSON: calls,
tokens, cached tokens, cost in USD as an exact string, its unknown parts, and the line as shown).

It reads the whole log (a page at a time, in a worker thread), so the header asks for it after the page has
opened: a long conversation opens as fast as before, and its total follows.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..pricing.prices import stored_spending
from ..store import Store
from .state import Viewer, in_thread

__all__ = ["conversation_spending", "spending_part"]


def conversation_spending(store: Store, cid: str) -> dict[str, Any]:
    """What the stored conversation's model calls spent, as JSON values (see `Spending.to_dict`), with ``text``:
    the line the header shows."""
    spending = stored_spending(store, cid)  # a conversation not in the store is a 404, not an empty sum
    return {**spending.to_dict(), "text": spending.text() if spending.calls else ""}


async def spending_part(viewer: Viewer, request: Request) -> Response:
    data = await in_thread(conversation_spending, viewer.store, request.path_params["cid"])
    return JSONResponse(data, headers={"cache-control": "no-store"})
