"""The outline of a long conversation: its turns (each question and what answered it), its failed model calls, its
failed tool calls and the calls that waited for a decision or an outside result (and how each was decided), each
with its place in the log, so a reader jumps straight to any of them.

``GET /c/<id>/outline`` is a page of its own; the timeline's "Outline" panel loads the same outline as a fragment
(``Accept: application/json``). It reads the whole log, so it is built only when asked for, never when a
conversation opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..message_types import ApprovalMessage, AssistantMessage, Message, ToolMessage, UserMessage
from .state import Viewer, in_thread
from .timeline import approval_line, message_snippet

__all__ = ["Landmark", "Outline", "Turn", "build_outline", "outline_page"]

SNIPPET = 90


@dataclass(slots=True)
class Turn:
    """A user message and everything up to the next one.

    Attributes:
        number: Its number (1 for the first question; 0 for what comes before it, e.g. a system message).
        id: The id of its first message.
        position: Where that message stands in the log (1 for the first).
        snippet: The start of the question.
        messages: How many messages the turn holds.
        tool_calls: How many tool calls were made in it.
        tool_errors: How many of their results are errors.
        failures: How many model calls failed in it.
    """

    number: int
    id: str
    position: int
    snippet: str
    messages: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    failures: int = 0


@dataclass(frozen=True, slots=True)
class Landmark:
    """A message worth jumping to: a failed model call or a failed tool call."""

    id: str
    position: int
    turn: int
    label: str


@dataclass(slots=True)
class Outline:
    """The outline of one log (see `build_outline`)."""

    total: int = 0
    first_id: str | None = None
    turns: list[Turn] = field(default_factory=list)
    failures: list[Landmark] = field(default_factory=list)
    tool_errors: list[Landmark] = field(default_factory=list)
    decisions: list[Landmark] = field(default_factory=list)


def build_outline(messages: Sequence[Message]) -> Outline:
    """The turns, failures and tool errors of a whole log, in order."""
    outline = Outline(total=len(messages), first_id=messages[0].id if messages else None)
    turn: Turn | None = None
    for index, message in enumerate(messages):
        position = index + 1
        if isinstance(message, UserMessage) or turn is None:
            number = (turn.number if turn is not None else 0) + (1 if isinstance(message, UserMessage) else 0)
            snippet = (
                message_snippet(message, SNIPPET) if isinstance(message, UserMessage) else "(before the first question)"
            )
            turn = Turn(number, message.id, position, snippet)
            outline.turns.append(turn)
        turn.messages += 1
        if isinstance(message, AssistantMessage):
            turn.tool_calls += len(message.tool_calls)
            if message.error is not None:
                turn.failures += 1
                label = f"{message.error.type}: {message.error.message}"
                outline.failures.append(Landmark(message.id, position, turn.number, _short(label)))
        elif isinstance(message, ApprovalMessage):
            # Each wait (a call that needed a decision or an outside result) and each decision, where it was logged.
            outline.decisions.append(Landmark(message.id, position, turn.number, _short(approval_line(message))))
        elif isinstance(message, ToolMessage) and message.is_error:
            turn.tool_errors += 1
            label = f"{message.tool_name}: {' '.join(message.content.split())}"
            outline.tool_errors.append(Landmark(message.id, position, turn.number, _short(label)))
    return outline


def _short(text: str) -> str:
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


async def outline_page(viewer: Viewer, request: Request) -> Response:
    """The outline as a page, or as a fragment for the timeline's panel (``Accept: application/json``)."""
    cid = request.path_params["cid"]

    def read() -> tuple[object, Outline]:
        return viewer.store.get_conversation(cid), build_outline(list(viewer.store.load(cid)))

    info, outline = await in_thread(read)
    if "application/json" in request.headers.get("accept", ""):
        html = viewer.env.get_template("_outline.html").render(cid=cid, outline=outline)
        return JSONResponse({"html": html}, headers={"cache-control": "no-store"})
    return viewer.page("outline.html", cid=cid, info=info, outline=outline)
