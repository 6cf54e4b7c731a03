"""Branches of a conversation: forks made from the timeline, renaming, where a fork left its origin, and two
branches side by side from their fork point.

- ``POST /c/<id>/fork`` (form field ``at``) forks from a message. The store names the fork after its origin with
  ``(fork)`` (``(fork 2)``, … when the origin has forks of that name already), so the list never shows two rows that
  look alike.
- ``POST /c/<id>/title`` (form field ``title``) renames a conversation (`Store.update_metadata`).
- ``GET /c/<id>/compare`` shows a fork and its origin side by side from the fork point (``?n=`` messages of each).

Both POSTs change the store, so they pass the guard's rules for changes (same-origin ``Origin``, and the token when
the viewer has one; see `threadline.web.security`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..errors import StoreError
from ..store import ConversationInfo, Store
from .reading import read_message
from .render import markup, render_items
from .state import Viewer, in_thread, int_param
from .timeline import build_items, message_snippet

__all__ = ["COMPARE_SIZE", "MAX_TITLE", "ForkPoint", "compare", "fork", "fork_point", "rename"]

MAX_TITLE = 200
COMPARE_SIZE = 40


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Where a fork left its origin.

    Attributes:
        conversation: The origin's id.
        message: The id of the message the fork was made from.
        title: The origin's title (None when it has none).
        exists: Whether the origin is still in the store.
        position: The message's place in the log (1 for the first), when known.
        total: How many messages the origin holds now, when it exists.
        snippet: The start of the message, on one line.
    """

    conversation: str
    message: str
    title: str | None
    exists: bool
    position: int | None
    total: int | None
    snippet: str


def fork_point(store: Store, info: ConversationInfo) -> ForkPoint | None:
    """Where the conversation ``info`` was forked from, or None when it is not a fork. The message is read from the
    fork's own copy of it, so the point is known even when the origin is gone."""
    forked = info.metadata.get("forked_from")
    if not isinstance(forked, dict) or not isinstance(forked.get("conversation"), str):
        return None
    origin_id, message_id = forked["conversation"], str(forked.get("message", ""))
    origin: ConversationInfo | None = None
    with contextlib.suppress(StoreError):
        origin = store.get_conversation(origin_id)
    position, snippet = None, ""
    with contextlib.suppress(StoreError):
        position = store.message_position(info.id, message_id)
        snippet = message_snippet(read_message(store, info.id, message_id))
    return ForkPoint(
        conversation=origin_id,
        message=message_id,
        title=origin.title if origin is not None else None,
        exists=origin is not None,
        position=position,
        total=origin.message_count if origin is not None else None,
        snippet=snippet,
    )


async def fork(viewer: Viewer, request: Request) -> Response:
    """Fork from the message named by the form field ``at``; the browser is sent to the fork."""
    cid = request.path_params["cid"]
    form = await request.form()
    at = str(form.get("at") or "")
    if not at:
        return viewer.error(400, "Nothing to fork", "Choose the message to fork from.")

    # The store names the fork after its origin ("… (fork)", numbered past the origin's other forks).
    info = await in_thread(lambda: viewer.store.fork_conversation(cid, at))
    return RedirectResponse(f"/c/{info.id}", status_code=303)


async def rename(viewer: Viewer, request: Request) -> Response:
    """Rename the conversation to the form field ``title`` (whitespace trimmed and collapsed)."""
    cid = request.path_params["cid"]
    form = await request.form()
    title = " ".join(str(form.get("title") or "").split())
    if not title:
        return viewer.error(400, "Not renamed", "A title cannot be empty: write one, or leave the old one.")
    if len(title) > MAX_TITLE:
        return viewer.error(
            400, "Not renamed", f"A title has at most {MAX_TITLE} characters; this one has {len(title):,}."
        )
    await in_thread(lambda: viewer.store.update_metadata(cid, title=title))
    return RedirectResponse(f"/c/{cid}", status_code=303)


def _branch(store: Store, cid: str, message_id: str, size: int) -> tuple[Any, list[Any], bool]:
    """A branch from the fork point: the point's item, the items after it, whether more follow."""
    seq = store.message_seq(cid, message_id)
    page = store.read_after(cid, seq - 1, size + 1)
    items = build_items(page.messages, page.seqs)
    return items[0], items[1:], len(page.messages) > size


def _read_branches(store: Store, cid: str, size: int) -> dict[str, Any]:
    info = store.get_conversation(cid)
    point = fork_point(store, info)
    if point is None:
        raise HTTPException(404, "This conversation is not a fork: there is nothing to compare it with.")
    if not point.exists:
        raise HTTPException(404, "The conversation this fork was made from is no longer in the store.")
    origin = store.get_conversation(point.conversation)
    start, forked, fork_more = _branch(store, cid, point.message, size)
    _, original, origin_more = _branch(store, origin.id, point.message, size)
    return {
        "info": info,
        "origin": origin,
        "point": point,
        "start": start,
        "branches": [(origin, original, origin_more), (info, forked, fork_more)],
    }


async def compare(viewer: Viewer, request: Request) -> Response:
    """A fork and its origin side by side, from the fork point."""
    cid = request.path_params["cid"]
    size = min(max(int_param(request, "n") or COMPARE_SIZE, 1), 2_000)
    found = await in_thread(_read_branches, viewer.store, cid, size)
    env = viewer.env
    return viewer.page(
        "compare.html",
        cid=cid,
        size=size,
        with_script=True,  # times in the reader's time zone, as on the timeline
        info=found["info"],
        point=found["point"],
        start=markup(render_items(env, [found["start"]], cid)),
        branches=[
            {"info": branch, "html": markup(render_items(env, items, branch.id)), "count": len(items), "more": more}
            for branch, items, more in found["branches"]
        ],
    )
