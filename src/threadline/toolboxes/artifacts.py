"""The built-in ``read_artifact`` tool: lets the model read full tool outputs that were sent as previews.

It serves one conversation and reads only that conversation's artifacts: URIs of other conversations, ``..``,
absolute paths and anything that is not ``artifact://<this conversation>/<name>`` are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..context import ARTIFACT_SCHEME
from ..tools import Tool

if TYPE_CHECKING:
    from ..conversation import Conversation

__all__ = ["MAX_READ", "READ_ARTIFACT", "artifact_reader", "parse_artifact_uri"]

READ_ARTIFACT = "read_artifact"
MAX_READ = 20_000
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")


def parse_artifact_uri(uri: str, conversation_id: str) -> str:
    """The artifact name in ``artifact://<conversation_id>/<name>``.

    Raises:
        ValueError: for another conversation's URI, a path, ``..``, or anything malformed (the message says why).
    """
    if not isinstance(uri, str) or not uri.startswith(ARTIFACT_SCHEME):
        raise ValueError(f"refused: {uri!r} is not an artifact URI (expected {ARTIFACT_SCHEME}<conversation>/<name>)")
    rest = uri[len(ARTIFACT_SCHEME) :]
    owner, slash, name = rest.partition("/")
    if not slash or not owner or not name:
        raise ValueError(f"refused: {uri!r} is not of the form {ARTIFACT_SCHEME}<conversation>/<name>")
    if owner != conversation_id:
        raise ValueError("refused: that artifact belongs to another conversation")
    if ".." in name or name.startswith(("/", "\\", "~")) or "/" in name or "\\" in name or not _NAME.match(name):
        raise ValueError(f"refused: {name!r} is not an artifact name of this conversation")
    return name


def artifact_reader(conversation: Conversation) -> Tool:
    """The ``read_artifact`` tool bound to one conversation."""

    def read_artifact(uri: str, offset: int = 0, limit: int = 4000) -> str:
        """Read part of a full tool output that was shortened in the conversation.

        Args:
            uri: The artifact URI, exactly as written after 'Full output:'.
            offset: The character to start reading at.
            limit: How many characters to read (at most 20000).
        """
        name = parse_artifact_uri(uri, conversation.id)
        if offset < 0:
            raise ValueError("offset must not be negative")
        if limit < 1:
            raise ValueError("limit must be at least 1")
        limit = min(limit, MAX_READ)
        text = conversation.read_artifact(name, offset, limit + 1)
        if len(text) > limit:
            return f"{text[:limit]}\n[more follows: call read_artifact with offset={offset + limit}]"
        if not text:
            return f"[end of artifact: nothing at offset {offset}]"
        return text

    return Tool(read_artifact, name=READ_ARTIFACT)
