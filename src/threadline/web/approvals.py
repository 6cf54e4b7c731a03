"""Tool calls that wait, from the viewer (docs/architecture.md#tool-calls-that-wait): deciding them, and finding the
conversations where one waits.

``POST /c/<id>/calls`` (form fields ``call``, ``action`` = ``approve`` | ``deny`` | ``result``; ``sha256``, the hash
of the arguments the page showed; ``reason``; ``scope=conversation``; ``content`` and ``is_error`` for a result) goes
through the same guard as every change (the token, a same-origin ``Origin``). It loads the conversation, decides
through `Conversation.approve` / ``deny`` / ``submit_result`` (which hold the conversation and catch up with the
store first, so a call decided meanwhile by anyone else is refused, nothing written), and when no call waits any
more, resumes the conversation as a turn of this server, whose results and answer stream into the open pages.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from .._exception_text import readable_message
from ..conversation import Conversation, ConversationConfig
from ..errors import ConversationBusy, UserError
from ..message_types import AssistantMessage
from ..models import Model
from .state import Viewer, in_thread
from .turns import TurnBusy

__all__ = ["DECIDED_BY", "MAX_RESULT", "decide_call"]

DECIDED_BY = "viewer"
"""Who a decision made in the viewer is logged as (the viewer has no accounts)."""

MAX_RESULT = 1_000_000
MAX_REASON = 2_000


def _resume_model(viewer: Viewer, conversation: Conversation) -> str | Model:
    """The model a resumed turn runs on: the one that made the calls, when the viewer offers it; else its first."""
    for message in reversed(conversation.messages):
        if isinstance(message, AssistantMessage):
            if message.model in viewer.models:
                return viewer.models[message.model]
            break
    return next(iter(viewer.models.values()))


def _decide(viewer: Viewer, cid: str, form: dict[str, str]) -> tuple[str, bool, str | Model]:
    """Record one decision (in a worker thread); returns what was done, whether no call waits any more, and the
    model to resume with."""
    conversation = Conversation.load(cid, viewer.store, ConversationConfig(tools=list(viewer.tools)))
    call, action = form["call"], form["action"]
    sha = form.get("sha256") or None
    reason = form.get("reason", "").strip() or None
    if action == "approve":
        scope = "conversation" if form.get("scope") == "conversation" else "call"
        conversation.approve(call, by=DECIDED_BY, reason=reason, scope=scope, arguments_sha256=sha)
        done = f"Approved {call}"
    elif action == "deny":
        conversation.deny(call, by=DECIDED_BY, reason=reason, arguments_sha256=sha)
        done = f"Denied {call}"
    else:
        conversation.submit_result(call, form.get("content", ""), is_error=form.get("is_error") == "1")
        done = f"Recorded the result of {call}"
    return done, not conversation.awaiting, _resume_model(viewer, conversation)


def _checked(form: Any) -> dict[str, str]:
    """The form's fields, or a UserError saying what is wrong with them."""
    fields = {key: str(value) for key, value in form.items() if isinstance(value, str)}
    if not fields.get("call"):
        raise UserError("Which call? The form names none.")
    if fields.get("action") not in ("approve", "deny", "result"):
        raise UserError("action must be approve, deny or result.")
    if len(fields.get("reason", "")) > MAX_REASON:
        raise UserError(f"The reason is longer than {MAX_REASON:,} characters.")
    if fields["action"] == "result" and not fields.get("content", "").strip():
        raise UserError("Write the result first.")
    if len(fields.get("content", "")) > MAX_RESULT:
        raise UserError(f"The result is longer than {MAX_RESULT:,} characters.")
    return fields


async def decide_call(viewer: Viewer, request: Request) -> Response:
    """``POST /c/<id>/calls``: approve, deny or answer a call that waits, then go on when nothing waits any more."""
    cid = request.path_params["cid"]
    wants_json = "application/json" in request.headers.get("accept", "")

    def refused(status: int, detail: str) -> Response:
        if wants_json:
            return JSONResponse({"error": detail}, status_code=status)
        return viewer.error(status, "Not recorded", detail)

    await in_thread(viewer.store.get_conversation, cid)
    if viewer.turns.is_running(cid):
        return refused(409, "A turn of this conversation is running: wait for it to end, then decide.")
    try:
        fields = _checked(await request.form())
    except UserError as exc:
        return refused(400, "Nothing was recorded: " + readable_message(exc))
    try:
        done, settled, model = await in_thread(_decide, viewer, cid, fields)
    except ConversationBusy as exc:
        return refused(409, "Nothing was recorded: " + readable_message(exc))
    except UserError as exc:  # AwaitingDecision too: decided or answered already, by someone else
        return refused(409, "Nothing was recorded: " + readable_message(exc))
    resumed = False
    if settled:
        try:
            viewer.turns.start(cid, None, model)
            resumed = True
        except TurnBusy:
            pass
    if wants_json:
        note = "; the conversation goes on." if resumed else "; other calls still wait." if not settled else "."
        return JSONResponse({"done": done + note, "resumed": resumed}, status_code=202)
    return RedirectResponse(f"/c/{cid}", status_code=303)
