"""What every route of the viewer shares: the `Viewer` (the store, the templates, the turn runner, live events and
the durable turns) and the small helpers its handlers use to read a request and reach the store off the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from anyio import to_thread
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from .. import __version__
from ..message_types import Message
from ..models import Model
from ..store import MessagePage, Store, whole_tool_groups
from .durable_turns import DurableTurns
from .live import TurnEvents
from .render import environment, epoch_ms, iso, render_items, render_tool_part
from .timeline import ToolView, build_items
from .turns import TurnRunner

__all__ = ["MAX_PARAM", "Viewer", "in_thread", "int_param"]


class Viewer:
    """The state behind the routes: the store, the templates, the turn runner, live events and durable turns.

    ``store_url`` (the URL the store was opened from) and ``dbos_url`` say where the durable turns' state is
    (`threadline.web.durable_turns`).
    """

    def __init__(
        self,
        store: Store,
        models: dict[str, str | Model],
        tools: Sequence[Any],
        *,
        store_url: str | None = None,
        dbos_url: str | None = None,
    ) -> None:
        self.store = store
        self.models = models
        self.tools = list(tools)
        self.env = environment(__version__)
        self.events = TurnEvents()
        self.turns = TurnRunner(store, self.tools, self.events)
        self.durable = DurableTurns(store, store_url, dbos_url)
        self.closing = asyncio.Event()

    # -- rendering ----------------------------------------------------------------------------------------------
    def page(self, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("with_script", False)
        context.setdefault("static", False)
        html = self.env.get_template(template).render(store_url=self.store.url, models=list(self.models), **context)
        return HTMLResponse(html, status_code=code, headers={"cache-control": "no-store"})

    def error(self, status: int, heading: str, detail: str) -> HTMLResponse:
        return self.page("error.html", status, status=status, heading=heading, detail=detail)

    def message_events(self, cid: str, page: MessagePage) -> list[dict[str, Any]]:
        """The ``message`` event payloads of newly appended messages (reads the store: call it in a worker
        thread).

        A result whose call was appended earlier is rendered with that call (read back from the store), so the
        group it completes on the page shows the same arguments, output and buttons as after a reload.
        """
        whole = whole_tool_groups(self.store, cid, page)
        fresh: dict[str | None, tuple[Message, int]] = {
            message.id: (message, seq) for message, seq in zip(page.messages, page.seqs, strict=True)
        }
        payloads: list[dict[str, Any]] = []
        for item in build_items(whole.messages, whole.seqs):
            if item.id not in fresh:
                # An earlier call: one payload per group of it that changed (a new result, an approval entry), in
                # the order they were appended.
                changed = [
                    (view, [fresh[i] for i in (*view.entry_ids, view.result_id) if i in fresh]) for view in item.tools
                ]
                done = sorted(((v, new) for v, new in changed if new), key=lambda pair: max(s for _, s in pair[1]))
                payloads.extend(self._result_payload(cid, new, view) for view, new in done)
                continue
            payload: dict[str, Any] = {"seq": item.seq, "id": item.id, "role": item.kind}
            payload["html"] = render_items(self.env, [item], cid)
            if item.standalone is not None:
                payload.update(self._tool_parts(cid, item.standalone))
            payloads.append(payload)
        if payloads and page.last_seq is not None:
            payloads[-1]["seq"] = page.last_seq  # results folded into their call's item count as read too
            info = self.store.get_conversation(cid)
            payloads[-1]["count"] = info.message_count
            payloads[-1]["updated"] = iso(info.updated_at)
        return payloads

    def _result_payload(self, cid: str, new: list[tuple[Message, int]], view: ToolView) -> dict[str, Any]:
        """The payload of new messages (a result, approval entries) of a call shown earlier: the group's parts
        rendered with the call, and (``html``) the new messages alone, for a page that does not show the call."""
        new = sorted(new, key=lambda pair: pair[1])
        alone = build_items([m for m, _ in new], [s for _, s in new])
        payload: dict[str, Any] = {"seq": new[-1][1], "id": alone[-1].id, "role": alone[-1].kind}
        payload["html"] = render_items(self.env, alone, cid)
        payload.update(self._tool_parts(cid, view))
        return payload

    def _tool_parts(self, cid: str, tool: ToolView) -> dict[str, Any]:
        """What completes a tool group on the page: its body, status and page frame, state, duration and end."""
        parts: dict[str, Any] = {"call_id": tool.call_id}
        for part in ("body", "status", "page"):
            parts[part] = render_tool_part(self.env, part, tool, cid)
        parts["state"] = tool.state
        parts["result_id"] = tool.result_id
        parts["ms"] = tool.duration_ms
        parts["at"] = epoch_ms(tool.finished_at) if tool.finished_at is not None else None
        return parts


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a (store) call in a worker thread, so a slow disk or database never stalls the event loop."""
    return await to_thread.run_sync(fn, *args)


# The largest number a query parameter may hold: the page's script handles sequence numbers as JavaScript numbers,
# exact up to here, and the stores' integers (64-bit) hold it with room for the arithmetic around it.
MAX_PARAM = 2**53 - 1


def int_param(request: Request, name: str, minimum: int = -1) -> int | None:
    """An integer query parameter (None when absent or empty); anything else, or a number below ``minimum`` or
    above `MAX_PARAM`, is a 400 that says what is allowed (never a store error: SQLite overflows past 64 bits)."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not minimum <= number <= MAX_PARAM:
        raise HTTPException(400, f"{name} must be an integer from {minimum} to {MAX_PARAM:,}")
    return number
