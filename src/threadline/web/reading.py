"""Whole texts the timeline cuts: a message's full text (a tool's 5 MB output, a long answer) and the artifacts the
context builder saved (``artifact://<conversation>/<name>``).

- ``GET /c/<id>/full/<message id>`` the text in parts of `PART_CHARS` characters (``?part=N``), so a huge output never
  becomes one huge page; ``?download=1`` the whole text as a file.
- ``GET /c/<id>/artifacts/<name>`` an artifact the same way (each part read as a slice, never the whole artifact).

Pages and downloads are streamed in chunks, each escaped on its own: the text is never held twice, once as text and
once as HTML. Only the conversation's own messages and artifacts are served; a name `is_artifact_name` refuses
(``..``, a path) is answered 404 like a missing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .._artifact_names import is_artifact_name
from ..message_types import ApprovalMessage, Message, ToolMessage
from ..store import Store
from .downloads import content_disposition
from .render import markup
from .state import Viewer, in_thread, int_param
from .timeline import approval_line

__all__ = ["PART_CHARS", "artifact_text", "full_text", "read_message", "text_of"]

PART_CHARS = 200_000
CHUNK = 16_384
_BODY = "<!--threadline:body-->"


def read_message(store: Store, conversation_id: str, message_id: str) -> Message:
    """One message of a conversation, read by itself.

    Raises:
        StoreError: if the conversation has no message with that id.
    """
    seq = store.message_seq(conversation_id, message_id)
    return store.read_after(conversation_id, seq - 1, 1).messages[0]


def text_of(message: Message) -> tuple[str, str, str]:
    """A message's whole text, a heading for it and a file name (without extension)."""
    if isinstance(message, ToolMessage):
        return message.content, f"Output of {message.tool_name}", f"{message.tool_name}-{message.tool_call_id}"
    if isinstance(message, ApprovalMessage):
        heading = f"Approval entry of {message.tool_name} ({message.tool_call_id})"
        return approval_line(message), heading, f"approval-{message.tool_name}-{message.tool_call_id}"
    content = getattr(message, "content", None) or ""
    article = "an" if message.role == "assistant" else "a"  # a user, a system, an assistant message
    return content, f"Text of {article} {message.role} message", f"{message.role}-{message.id}"


def _part(request: Request) -> int:
    return int_param(request, "part", minimum=0) or 0


def _chunks(text: str, escaped: bool) -> Iterator[str]:
    for start in range(0, len(text), CHUNK):
        piece = text[start : start + CHUNK]
        yield escape(piece, quote=False) if escaped else piece


def _download(text: str, name: str) -> Response:
    return StreamingResponse(
        _chunks(text, escaped=False),
        media_type="text/plain; charset=utf-8",
        headers={
            "content-disposition": content_disposition(name, "txt"),
            "cache-control": "no-store",
        },
    )


def _paged(viewer: Viewer, text: str, offset: int, total: int | None, more: bool, **context: Any) -> Response:
    """The page of one part: the template around a marker, the part's text streamed into it."""
    html = viewer.env.get_template("full_text.html").render(
        store_url=viewer.store.url,
        static=False,
        with_script=False,
        body=markup(_BODY),
        first=offset + 1,
        last=offset + len(text),
        total=total,
        more=more,
        **context,
    )
    head, tail = html.split(_BODY, 1)

    def stream() -> Iterator[str]:
        yield head
        yield from _chunks(text, escaped=True)
        yield tail

    return StreamingResponse(stream(), media_type="text/html; charset=utf-8", headers={"cache-control": "no-store"})


async def full_text(viewer: Viewer, request: Request) -> Response:
    """A message's whole text, in parts, or as a download."""
    cid = request.path_params["cid"]
    message_id = request.path_params["mid"]
    part = _part(request)
    message = await in_thread(read_message, viewer.store, cid, message_id)
    text, heading, name = text_of(message)
    if request.query_params.get("download"):
        return _download(text, name)
    offset = part * PART_CHARS
    if offset and offset >= len(text):
        raise HTTPException(404, f"The text has {len(text):,} characters; there is no part {part + 1}.")
    return _paged(
        viewer,
        text[offset : offset + PART_CHARS],
        offset,
        len(text),
        offset + PART_CHARS < len(text),
        heading=heading,
        cid=cid,
        part=part,
        message=message,
        artifact=None,
        download=f"/c/{quote(cid, safe='')}/full/{quote(message_id, safe='')}?download=1",
    )


async def artifact_text(viewer: Viewer, request: Request) -> Response:
    """An artifact of the conversation, in parts (each read as a slice), or as a download."""
    cid = request.path_params["cid"]
    name = request.path_params["name"]
    if not is_artifact_name(name):
        raise HTTPException(404, f"No artifact {name!r} in this conversation.")
    part = _part(request)
    if request.query_params.get("download"):
        text = await in_thread(viewer.store.read_artifact, cid, name)
        return _download(text, f"artifact-{name}")
    offset = part * PART_CHARS
    # One character more than the part shows: whether a next part exists, without reading the rest.
    text = await in_thread(viewer.store.read_artifact, cid, name, offset, PART_CHARS + 1)
    if offset and not text:
        raise HTTPException(404, f"The artifact has no part {part + 1}.")
    return _paged(
        viewer,
        text[:PART_CHARS],
        offset,
        None,
        len(text) > PART_CHARS,
        heading=f"Artifact {name}",
        cid=cid,
        part=part,
        message=None,
        artifact=f"artifact://{cid}/{name}",
        download=f"/c/{quote(cid, safe='')}/artifacts/{name}?download=1",
    )
