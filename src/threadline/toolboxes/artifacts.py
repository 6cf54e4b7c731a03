"""The built-in ``read_artifact`` tool: lets the model read full tool outputs that were sent as previews.

It serves one conversation and reads only that conversation's artifacts: URIs of other conversations, ``..``,
absolute paths and anything that is not ``artifact://<this conversation>/<name>`` are refused. It accepts exactly the
names the context window hands out (`threadline._artifact_names`), whatever the tool-call id behind them was.
"""

from __future__ import annotations

from typing import Protocol

from .._artifact_names import ARTIFACT_SCHEME, READ_ARTIFACT, is_artifact_name
from ..tools import Tool

__all__ = ["MAX_READ", "READ_ARTIFACT", "ArtifactHost", "artifact_reader", "parse_artifact_uri"]


class ArtifactHost(Protocol):
    """The conversation whose artifacts ``read_artifact`` reads; a `Conversation` is one."""

    @property
    def id(self) -> str: ...

    def read_artifact(self, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Up to ``limit`` characters of an artifact from ``offset``."""
        ...


MAX_READ = 20_000


def parse_artifact_uri(uri: str, conversation_id: str) -> str:
    """The artifact name in ``artifact://<conversation_id>/<name>``.

    Raises:
        ValueError: for another conversation's URI, a path, ``..``, or anything malformed (the message says why).
    """
    if not isinstance(uri, str) or not uri.startswith(ARTIFACT_SCHEME):
        raise ValueError(f"refused: {uri!r} is not an artifact URI (expected {ARTIFACT_SCHEME}<conversation>/<name>)")
    own = f"{ARTIFACT_SCHEME}{conversation_id}/"
    # The conversation is matched as a whole prefix, so an id holding '/' still reads its own artifacts.
    if not uri.startswith(own):
        owner, slash, name = uri[len(ARTIFACT_SCHEME) :].partition("/")
        if not slash or not owner or not name:
            raise ValueError(f"refused: {uri!r} is not of the form {ARTIFACT_SCHEME}<conversation>/<name>")
        raise ValueError("refused: that artifact belongs to another conversation")
    name = uri[len(own) :]
    if not name:
        raise ValueError(f"refused: {uri!r} is not of the form {ARTIFACT_SCHEME}<conversation>/<name>")
    if not is_artifact_name(name):
        raise ValueError(f"refused: {name!r} is not an artifact name of this conversation")
    return name


def artifact_reader(conversation: ArtifactHost) -> Tool:
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
