"""The viewer's ASGI app: `create_app(store, model=None, tools=(), token=None)` and its routes.

Routes (docs/architecture.md#cli-and-viewer):

- ``GET /`` the conversations, newest first, paged (``?offset=``); ``?q=`` searches titles and message text; each
  row says whether a tool call of it waits (``?awaiting=1`` shows only those rows of the page).
- ``POST /c`` starts a new conversation (form fields ``text``, ``model``).
- ``GET /c/<id>`` the timeline: the newest part (``?before=SEQ`` an older part; ``?at=MSG`` the part around a
  message; ``?start=1`` the first part; ``?q=`` finds words in it, see `threadline.web.find`);
  ``GET /c/<id>/messages?before=SEQ|after=SEQ`` the next part as JSON (``html``, sequence numbers), for the
  page's script; ``GET /c/<id>/outline`` its turns and failures (see `threadline.web.outline`).
- ``GET /c/<id>/events?after=SEQ`` live updates (server-sent events, see `threadline.web.live`).
- ``POST /c/<id>/messages`` runs a turn (form fields ``text``, ``model``).
- ``POST /c/<id>/calls`` approves, denies or answers a tool call that waits (see `threadline.web.approvals`).
- ``POST /c/<id>/fork`` forks from a message, ``POST /c/<id>/title`` renames, ``GET /c/<id>/compare`` shows a fork
  beside its origin (see `threadline.web.branches`).
- ``GET /c/<id>/context?mode=`` the next request and the context report.
- ``GET /c/<id>/export.json`` and ``/c/<id>/export.html`` the exports; ``GET /p/<page_id>`` a generated page.
- ``GET /c/<id>/full/<message id>`` and ``/c/<id>/artifacts/<name>`` whole texts (see `threadline.web.reading`).

A store that ran durable turns (``threadline worker``) shows each conversation's turns under its messages, with
their states, and marks the list's conversations with a turn queued or running (see `threadline.web.durable_turns`).

Every store call runs in a worker thread, so a slow disk or database never stalls the event loop that streams the
other pages' events.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import __version__
from ..errors import StoreError
from ..message_types import (
    MODES,
    ApprovalMessage,
    AssistantMessage,
    Message,
    ToolMessage,
    UserMessage,
    content_for_model,
)
from ..models import DEFAULT_MODELS, Model, default_model_name
from ..store import MessagePage, Store, open_store, stored_awaiting, whole_tool_groups
from ..store.capabilities import ArtifactStore, BrowsableStore, ConversationStore, PageStore, require
from .approvals import decide_call
from .branches import ForkPoint, compare, fork, fork_point, rename
from .continuation import composer_choice, made_on
from .downloads import content_disposition
from .durable_turns import render_strip
from .find import Finding, find
from .live import Watch, event_stream
from .markdown import highlight_css
from .outline import outline_page
from .reading import PART_CHARS, artifact_text, full_text
from .render import markup, page_document, pager_query, render_items, stylesheet
from .security import PAGE_CSP, Guard
from .spending import spending_part
from .state import MAX_PARAM, Viewer, in_thread, int_param
from .timeline import Item, approval_line, build_items, fork_links, note_match_past_cut
from .turns import TurnBusy

__all__ = ["create_app"]

PAGE_SIZE = 40
LIST_SIZE = 50
MAX_TEXT = 100_000


def _forks_of(store: Store, cid: str) -> tuple[dict[str, Any], list[Any]]:
    forks = store.list_forks(cid)
    links = fork_links((str(f.metadata.get("forked_from", {}).get("message", "")), f.id, f.title or "") for f in forks)
    return links, forks


def _configured_models() -> dict[str, str | Model]:
    """The models the composer offers when ``-m`` was not given: the default one, then each configured provider's."""
    import importlib.util

    names = [default_model_name()]
    if importlib.util.find_spec("llama_cpp") is not None:
        names.append("local")
    saved = _saved_key_names()
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL") or "openai" in saved:
        names.append(DEFAULT_MODELS["openai"])
    if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_BASE_URL") or "anthropic" in saved:
        names.append(DEFAULT_MODELS["anthropic"])
    return {name: name for name in dict.fromkeys(names)}


def _saved_key_names() -> list[str]:
    """The names of the keys saved with ``threadline keys set`` (none when the key file cannot be used)."""
    from ..errors import UserError
    from ..models.keys import stored_key_names

    try:
        return stored_key_names()
    except UserError:
        return []


def create_app(
    store: Store | str,
    model: str | Model | None = None,
    tools: Iterable[Any] = (),
    token: str | None = None,
    *,
    allowed_hosts: Iterable[str] = (),
    dbos_url: str | None = None,
    store_url: str | None = None,
) -> Any:
    """The web viewer as an ASGI app, to serve with uvicorn or mount in another app.

    Args:
        store: The store to show (or its URL).
        model: The model turns run on; when None, the composer offers a menu of the configured models.
        tools: Tools offered in every turn run from the browser (functions, `Tool`s, `Toolset`s, objects).
        token: A secret every request must carry (see `threadline.web.security`); required for any bind that is
            not loopback.
        allowed_hosts: Host names, besides ``localhost`` and the loopback addresses, that requests may name.
        dbos_url: DBOS's own database, when the workers were started with ``--dbos URL`` (by default the durable
            turns' state is found beside the store, see `threadline.durable.config`).
        store_url: The URL an opened ``store`` was opened from, password included (``store.url`` hides it), so
            the durable turns' state in a PostgreSQL store's database can be read.

    Returns:
        The app (a Starlette application wrapped in the viewer's guard).
    """
    own_store = isinstance(store, str)
    opened: Store = open_store(store) if isinstance(store, str) else store
    require(opened, ConversationStore, BrowsableStore, ArtifactStore, PageStore, who="the viewer needs")
    if model is None:
        models = _configured_models()
    else:
        models = {model if isinstance(model, str) else model.name: model}
    opened_from = store if isinstance(store, str) else store_url
    viewer = Viewer(opened, models, list(tools), store_url=opened_from, dbos_url=dbos_url)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            viewer.closing.set()
            await viewer.turns.close()
            await in_thread(viewer.durable.close)
            if own_store:
                opened.close()

    routes = [
        Route("/", _handler(viewer, list_page)),
        Route("/c", _handler(viewer, new_conversation), methods=["POST"]),
        Route("/c/{cid}", _handler(viewer, timeline_page)),
        Route("/c/{cid}/messages", _handler(viewer, messages_part), methods=["GET"]),
        Route("/c/{cid}/messages", _handler(viewer, continue_conversation), methods=["POST"]),
        Route("/c/{cid}/events", _handler(viewer, events)),
        Route("/c/{cid}/calls", _handler(viewer, decide_call), methods=["POST"]),
        Route("/c/{cid}/fork", _handler(viewer, fork), methods=["POST"]),
        Route("/c/{cid}/title", _handler(viewer, rename), methods=["POST"]),
        Route("/c/{cid}/compare", _handler(viewer, compare)),
        Route("/c/{cid}/outline", _handler(viewer, outline_page)),
        Route("/c/{cid}/usage", _handler(viewer, spending_part)),
        Route("/c/{cid}/context", _handler(viewer, context_page)),
        Route("/c/{cid}/export.json", _handler(viewer, export_json)),
        Route("/c/{cid}/export.html", _handler(viewer, export_html)),
        Route("/c/{cid}/full/{mid}", _handler(viewer, full_text)),
        Route("/c/{cid}/artifacts/{name}", _handler(viewer, artifact_text)),
        Route("/p/{page_id}", _handler(viewer, generated_page)),
        Route("/highlight.css", highlight_stylesheet),
        Mount(
            "/static", StaticFiles(directory=str(resources.files("threadline.web").joinpath("static"))), name="static"
        ),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        if status == 405:
            return viewer.error(405, "Not allowed", f"{request.method} is not allowed here.")
        # A handler's own words say what was wrong; Starlette's ("Not Found") only that no route matched.
        detail = exc.detail if isinstance(exc, HTTPException) and exc.detail != HTTPStatus(status).phrase else None
        if status == 400:
            return viewer.error(400, "Bad request", detail or "The request was not understood.")
        return viewer.error(status, "Not found", detail or f"Nothing at {request.url.path}.")

    async def server_error(request: Request, exc: Exception) -> Response:
        return viewer.error(500, "Something went wrong", f"The viewer failed: {type(exc).__name__}.")

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found, 404: not_found, 500: server_error},
    )
    app.state.viewer = viewer
    return Guard(app, token=token, allowed_hosts=allowed_hosts)


Handler = Callable[[Viewer, Request], Any]


def _handler(viewer: Viewer, fn: Handler) -> Callable[[Request], Any]:
    """A route endpoint: store errors that name something missing become 404 pages; others a one-line 503."""

    async def endpoint(request: Request) -> Response:
        try:
            response: Response = await fn(viewer, request)
        except StoreError as exc:
            text = str(exc)
            if text.startswith(("no conversation", "no message", "no page", "no artifact")):
                return viewer.error(404, "Not found", text)
            return viewer.error(503, "The store failed", text)
        return response

    endpoint.__name__ = fn.__name__
    return endpoint


# -- the list ----------------------------------------------------------------------------------------------------
async def list_page(viewer: Viewer, request: Request) -> Response:
    query = request.query_params.get("q", "").strip()[:500]
    offset = int_param(request, "offset", minimum=0) or 0
    store = viewer.store
    only_waiting = request.query_params.get("awaiting") == "1"
    if query:
        rows = await in_thread(store.search_conversations, query, LIST_SIZE + 1, offset)
    else:
        rows = await in_thread(store.list_summaries, LIST_SIZE + 1, offset)
    shown = rows[:LIST_SIZE]
    # What waits is read from the tail of each row of this page only (never whole logs, never other pages).
    waiting = await in_thread(_waiting_of, store, [row.info.id for row in shown])
    in_flight = await in_thread(viewer.durable.in_flight, [row.info.id for row in shown])
    return viewer.page(
        "list.html",
        rows=[row for row in shown if waiting.get(row.info.id)] if only_waiting else shown,
        waiting=waiting,
        in_flight=in_flight,
        only_waiting=only_waiting,
        more=len(rows) > LIST_SIZE,
        query=query,
        offset=offset,
        limit=LIST_SIZE,
        pager=lambda value, awaiting=only_waiting: pager_query(query, max(0, value), awaiting=awaiting),
        with_script=True,
    )


def _waiting_of(store: Store, ids: list[str]) -> dict[str, list[str]]:
    """For each conversation, what its calls that wait wait for (``"approval"``, ``"result"``), from its tail."""
    found: dict[str, list[str]] = {}
    for cid in ids:
        kinds = ["result" if call.kind == "external" else "approval" for call in stored_awaiting(store, cid)]
        if kinds:
            found[cid] = kinds
    return found


# -- the timeline ------------------------------------------------------------------------------------------------
def _read_part(
    store: Store, cid: str, before: int | None, at: str | None, query: str, start: bool
) -> tuple[Any, MessagePage, bool, int, Any, Finding | None, str | None, ForkPoint | None]:
    """Everything the timeline page needs, read in one worker thread: info, the part, whether it ends at the
    newest message, the newest message's sequence number, the forks, and the matches of ``query`` with the message
    to open at."""
    info = store.get_conversation(cid)
    finding = None
    if query:
        finding, at = find(store, cid, query, at)
    if start and at is None:
        page = store.read_after(cid, -1, PAGE_SIZE)
        at_end = not page.seqs or not store.read_after(cid, page.seqs[-1], 1).messages
    elif at is not None:
        seq = store.message_seq(cid, at)
        # The message and a few before it (for context), then the part after it.
        head = store.read_tail(cid, 5, before=seq)
        tail = store.read_after(cid, seq - 1, PAGE_SIZE)
        page = MessagePage(head.messages + tail.messages, head.seqs + tail.seqs, head.has_older)
        at_end = not tail.seqs or not store.read_after(cid, tail.seqs[-1], 1).messages
    else:
        page = store.read_tail(cid, PAGE_SIZE, before=before)
        at_end = before is None or not page.seqs or not store.read_after(cid, page.seqs[-1], 1).messages
    page = whole_tool_groups(store, cid, page)
    if at_end:
        end_seq = page.last_seq if page.last_seq is not None else -1
    else:
        newest = store.read_tail(cid, 1)
        end_seq = newest.last_seq if newest.last_seq is not None else -1
    return info, page, at_end, end_seq, _forks_of(store, cid), finding, at, fork_point(store, info)


async def timeline_page(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    before = int_param(request, "before")
    at = request.query_params.get("at") or None
    query = " ".join(request.query_params.get("q", "").split())[:500]
    start = bool(request.query_params.get("start"))
    info, page, at_end, end_seq, (links, forks), finding, at, point = await in_thread(
        _read_part, viewer.store, cid, before, at, query, start
    )
    items = build_items(page.messages, page.seqs, links)
    if at is not None and query:
        note_match_past_cut(items, page.messages, at, query, PART_CHARS)
    requests = [m.id for m in page.messages if isinstance(m, UserMessage) and m.id]
    turns = await in_thread(viewer.durable.of_conversation, cid, requests)
    selected_model, other_model = composer_choice(list(viewer.models), made_on(page.messages))
    return viewer.page(
        "conversation.html",
        selected_model=selected_model,
        made_on=other_model,
        cid=cid,
        info=info,
        rendered=items,
        first_seq=page.first_seq,
        last_seq=page.last_seq if page.last_seq is not None else -1,
        has_older=page.has_older,
        at_end=at_end,
        end_seq=end_seq,
        point=point,
        fork_count=len(forks),
        fork_list=forks[:10],
        running=viewer.turns.is_running(cid),
        durable=markup(render_strip(viewer.env, cid, turns)),
        hit_id=at,
        start=start and at is None,
        finding=finding,
        query=query,
        with_script=True,
    )


def _read_more(store: Store, cid: str, before: int | None, after: int | None) -> tuple[MessagePage, bool, Any]:
    if after is not None:
        page = store.read_after(cid, after, PAGE_SIZE)
        at_end = not page.seqs or not store.read_after(cid, page.seqs[-1], 1).messages
        return page, at_end, _forks_of(store, cid)[0]
    page = whole_tool_groups(store, cid, store.read_tail(cid, PAGE_SIZE, before=before))
    return page, False, _forks_of(store, cid)[0]


async def messages_part(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    before = int_param(request, "before")
    after = int_param(request, "after")
    if (before is None) == (after is None):
        raise HTTPException(400, "give exactly one of before= and after=")
    page, at_end, links = await in_thread(_read_more, viewer.store, cid, before, after)
    items = build_items(page.messages, page.seqs, links)
    return JSONResponse(
        {
            "html": render_items(viewer.env, items, cid),
            "first_seq": page.first_seq,
            "last_seq": page.last_seq,
            "has_older": page.has_older,
            "at_end": at_end,
        },
        headers={"cache-control": "no-store"},
    )


async def events(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    after = int_param(request, "after")
    resume = request.headers.get("last-event-id")
    if resume is not None and resume.isascii() and resume.isdigit() and int(resume) <= MAX_PARAM:
        after = int(resume)
    await in_thread(viewer.store.get_conversation, cid)  # a 404 now rather than a stream that fails
    stream = event_stream(
        viewer.store,
        cid,
        -1 if after is None else after,
        viewer.events,
        lambda page: viewer.message_events(cid, page),
        viewer.closing,
        _durable_watch(viewer, cid) if viewer.durable.possible() else None,
    )
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def _durable_watch(viewer: Viewer, cid: str) -> Watch:
    """What a page's stream sends of the conversation's durable turns: their strip, each time it changes."""
    sent: list[str] = []

    def watch() -> tuple[str, Any] | None:
        turns = viewer.durable.of_conversation(cid)
        if turns is None:
            return None
        html = render_strip(viewer.env, cid, turns)
        if sent and sent[-1] == html:
            return None
        sent[:] = [html]
        return "durable", {"html": html}

    return watch


# -- changes: continue, start, fork ------------------------------------------------------------------------------
def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


async def _turn_form(viewer: Viewer, request: Request) -> tuple[str, str | Model]:
    form = await request.form()
    text = str(form.get("text") or "").strip()
    if not text:
        raise HTTPException(400, "Write a message first.")
    if len(text) > MAX_TEXT:
        raise HTTPException(400, f"The message is {len(text):,} characters; the limit is {MAX_TEXT:,}.")
    name = str(form.get("model") or next(iter(viewer.models)))
    if name not in viewer.models:
        raise HTTPException(400, f"Unknown model {name!r}: choose one of {', '.join(viewer.models)}.")
    return text, viewer.models[name]


def _refusal(viewer: Viewer, request: Request, status: int, detail: str) -> Response:
    if _wants_json(request):
        return JSONResponse({"error": detail}, status_code=status)
    return viewer.error(status, "Not started", detail)


async def continue_conversation(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    try:
        text, model = await _turn_form(viewer, request)
    except HTTPException as exc:
        return _refusal(viewer, request, exc.status_code, exc.detail)
    await in_thread(viewer.store.get_conversation, cid)
    try:
        viewer.turns.start(cid, text, model)
    except TurnBusy:
        return _refusal(
            viewer, request, 409, "This conversation is busy: a turn is running. Wait for it to finish, then send."
        )
    if _wants_json(request):
        return JSONResponse({"started": True}, status_code=202)
    return RedirectResponse(f"/c/{cid}", status_code=303)


async def new_conversation(viewer: Viewer, request: Request) -> Response:
    try:
        text, model = await _turn_form(viewer, request)
    except HTTPException as exc:
        return _refusal(viewer, request, exc.status_code, exc.detail)
    title = " ".join(text.split())
    info = await in_thread(viewer.store.create_conversation, title if len(title) <= 80 else title[:79] + "…")
    viewer.turns.start(info.id, text, model)
    return RedirectResponse(f"/c/{info.id}", status_code=303)


# -- context, exports, pages -------------------------------------------------------------------------------------
def _build_context(viewer: Viewer, cid: str, mode: str | None) -> tuple[Any, Any, int]:
    from ..conversation import Conversation, ConversationConfig

    info = viewer.store.get_conversation(cid)
    conversation = Conversation.load(cid, viewer.store, ConversationConfig(tools=list(viewer.tools)))
    return info, conversation.build_context(mode=mode), len(conversation.messages)


def _request_rows(messages: Sequence[Message], prefix: int) -> list[dict[str, Any]]:
    import json

    rows = []
    for index, message in enumerate(messages):
        row: dict[str, Any] = {"role": message.role, "made": index < prefix, "calls": [], "label": message.role}
        if isinstance(message, ApprovalMessage):  # never sent to a model: shown only if a request ever held one
            row["label"] = f"approval entry for {message.tool_name} ({message.tool_call_id})"
            row["text"] = approval_line(message)
        elif isinstance(message, ToolMessage):
            row["label"] = f"tool result for {message.tool_name} ({message.tool_call_id})"
            row["label"] += " · error" if message.is_error else ""
            row["text"] = message.content
        elif isinstance(message, AssistantMessage):
            row["text"] = content_for_model(message)
            for call in message.tool_calls:
                arguments = (
                    call.raw_arguments
                    if call.raw_arguments is not None
                    else json.dumps(call.arguments, ensure_ascii=False)
                )
                row["calls"].append(f"{call.name}({arguments})  id={call.id}")
        else:
            row["text"] = getattr(message, "content", "")
        rows.append(row)
    return rows


async def context_page(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    mode = request.query_params.get("mode") or None
    if mode is not None and mode not in MODES:
        return viewer.error(400, "Unknown mode", f"mode must be one of {', '.join(MODES)}.")
    info, built, total = await in_thread(_build_context, viewer, cid, mode)
    return viewer.page(
        "context.html",
        cid=cid,
        info=info,
        mode=mode or info.active_mode or "chat",
        modes=MODES,
        tools=bool(viewer.tools),
        report=built.report,
        total=total,
        drops=built.report.dropped_runs(),
        request=_request_rows(built.messages, built.report.prefix_messages),
    )


async def export_json(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    messages = await in_thread(viewer.store.load, cid)
    return Response(
        messages.to_json(),
        media_type="application/json",
        headers={"content-disposition": content_disposition(cid, "json"), "cache-control": "no-store"},
    )


def _export_items(viewer: Viewer, cid: str) -> tuple[Any, list[Item]]:
    info = viewer.store.get_conversation(cid)
    messages = list(viewer.store.load(cid))
    # Whole texts: the file is read away from the viewer, where nothing could fetch what a cut left out.
    return info, build_items(messages, list(range(len(messages))), _forks_of(viewer.store, cid)[0], limit=None)


async def export_html(viewer: Viewer, request: Request) -> Response:
    cid = request.path_params["cid"]
    info, items = await in_thread(_export_items, viewer, cid)
    forked = info.metadata.get("forked_from")
    html = viewer.env.get_template("export.html").render(
        info=info,
        rendered=items,
        cid=cid,
        static=True,
        css=markup(stylesheet()),
        exported=datetime.now(UTC),
        version=__version__,
        origin=forked if isinstance(forked, dict) else None,
    )
    return HTMLResponse(
        html,
        headers={
            "content-disposition": content_disposition(cid, "html"),
            "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
            "cache-control": "no-store",
        },
    )


async def highlight_stylesheet(request: Request) -> Response:
    """The CSS of highlighted code (made from Pygments' styles, so it always matches the installed version)."""
    return Response(
        highlight_css(), media_type="text/css", headers={"cache-control": "public, max-age=86400, immutable"}
    )


async def generated_page(viewer: Viewer, request: Request) -> Response:
    page = await in_thread(viewer.store.get_page, request.path_params["page_id"])
    return HTMLResponse(
        page_document(page),
        headers={
            "content-security-policy": PAGE_CSP,
            "x-frame-options": "SAMEORIGIN",
            "cache-control": "no-store",
        },
    )
