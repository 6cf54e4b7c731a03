"""OpenAI's rules for file attachments, shared by the Chat Completions and Responses translations (pure: no I/O).

OpenAI's file-inputs guide: "Chat Completions accepts only PDF files as file content parts", as base64 ``file_data``
(a data: URL) with a ``filename``; the Responses API takes PDFs, text and code, and office documents and
spreadsheets as ``input_file`` items, by ``file_data`` or ``file_url``.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Iterable
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

from ...errors import UserError
from ...message_types import Message, UserMessage

if TYPE_CHECKING:
    from ...attachments import Attachment

__all__ = ["CHAT_FILES", "RESPONSES_FILES", "FileInputs", "check_files", "file_part", "file_problem"]


_DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/json",
        "application/xml",
        "application/rtf",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/javascript",
        "application/typescript",
        "application/x-sh",
        "application/x-python",
        "application/x-tex",
        "application/yaml",
        "application/x-yaml",
    }
)
_DOCUMENT_PREFIXES = ("text/", "application/vnd.openxmlformats-officedocument.", "application/vnd.oasis.opendocument.")


class FileInputs(NamedTuple):
    """What one API takes as a file attachment."""

    api: str
    """The API, as named in messages."""
    accepts: frozenset[str]
    """Media types taken (besides those starting with one of ``prefixes``)."""
    prefixes: tuple[str, ...]
    described: str
    """What it takes, in words, for the error about another type."""
    urls: bool
    """Whether a file may be given by its ``url`` instead of its bytes."""


CHAT_FILES = FileInputs(
    "OpenAI's Chat Completions API",
    frozenset({"application/pdf"}),
    (),
    "only PDF files (media_type='application/pdf'); the Responses API (openai-responses:) also takes text, code and "
    "office documents",
    urls=False,
)
RESPONSES_FILES = FileInputs(
    "OpenAI's Responses API",
    _DOCUMENT_TYPES,
    _DOCUMENT_PREFIXES,
    "PDF, text and code, and office documents and spreadsheets (e.g. application/pdf, text/plain, text/csv, "
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document)",
    urls=True,
)


def file_part(attachment: Attachment, inputs: FileInputs) -> tuple[str, str]:
    """A file attachment as ``(filename, data)``: ``data`` is a ``data:`` URL of its bytes, or its own ``url`` where
    the API takes one (the caller tells them apart by the ``data:`` prefix).

    Raises:
        UserError: for a file without data, without a media type, or of a type the API does not take.
    """
    problem = file_problem(attachment, inputs)
    if problem is not None:
        raise UserError(problem)
    media_type = attachment.media_type or ""
    filename = attachment.name or (PurePath(attachment.path).name if attachment.path else "")
    if not filename:
        filename = "attachment" + (mimetypes.guess_extension(media_type) or "")
    if attachment.data is None:
        return filename, attachment.url or ""
    return filename, f"data:{media_type};base64,{base64.b64encode(attachment.data).decode('ascii')}"


def file_problem(attachment: Attachment, inputs: FileInputs) -> str | None:
    """Why a file attachment cannot be sent to ``inputs.api``, or None when it can."""
    label = repr(attachment.name or attachment.path or "without a name")
    if attachment.data is None and not (inputs.urls and attachment.url):
        if attachment.path is not None:
            return (
                f"file attachment {label} has no data, only the path it once came from; a path read back from a log "
                "(loaded or imported) is never read, so that a log cannot upload local files: attach the file again "
                "with Attachment('file', path=...)"
            )
        if attachment.url is not None:
            return f"file attachment {label} has only a url, which {inputs.api} does not take: attach its bytes"
        return f"file attachment {label} has neither data nor a url"
    media_type = (attachment.media_type or "").lower()
    if not media_type:
        return f"file attachment {label} has no media type; pass media_type= (e.g. 'application/pdf')"
    if media_type in inputs.accepts or media_type.startswith(inputs.prefixes):
        return None
    hint = "; attach an image as Attachment.image(...)" if media_type.startswith("image/") else ""
    return (
        f"file attachment {label} is {media_type}, which {inputs.api} does not take: it takes {inputs.described}{hint}"
    )


def check_files(messages: Iterable[Message], inputs: FileInputs) -> None:
    """Refuse, before anything is sent, file attachments ``inputs.api`` cannot be given.

    Raises:
        UserError: naming the first such attachment and why.
    """
    for message in messages:
        if isinstance(message, UserMessage):
            for attachment in message.attachments:
                if attachment.kind == "file":
                    problem = file_problem(attachment, inputs)
                    if problem is not None:
                        raise UserError(problem)
