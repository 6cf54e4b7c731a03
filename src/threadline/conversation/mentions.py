"""The objects a conversation's user messages mention (docs/architecture.md#tools), and the tools made from them.

A `UserMessage` may carry ``Attachment(kind="mention", ref=…, object=…)``; the tools of every object mentioned so
far are offered from then on. The log keeps only the ``ref``: after a reload, `Conversation.attach` binds the live
object again. `Mentions` is what a conversation keeps of them.
"""

from __future__ import annotations

import logging
from typing import Any

from ..message_types import Message, UserMessage
from ..tools import BaseToolset, ResolvedTools, Tool, ToolHost, Toolset, describe_exception
from ..tools.toolset import describable_toolset

__all__ = ["Mentions"]

logger = logging.getLogger("threadline.mentions")


class Mentions:
    """The mentions of one conversation: every ref mentioned (in order), the live object bound to each, and the
    toolset made from each object (made once, anew when another object is bound to the ref).

    Attributes:
        objects: The live object bound to each ref.
    """

    __slots__ = ("_refs", "_toolsets", "objects")

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self._refs: dict[str, None] = {}  # an ordered set
        self._toolsets: dict[str, tuple[Any, Toolset]] = {}

    def note(self, message: Message) -> None:
        """Take the mentions of a message of the log (only user messages carry them)."""
        if type(message) is UserMessage and message.attachments:
            for attachment in message.attachments:
                if attachment.kind == "mention" and attachment.ref:
                    self._refs.setdefault(attachment.ref, None)
                    if attachment.object is not None:
                        self.objects[attachment.ref] = attachment.object

    def attach(self, ref: str, obj: Any) -> None:
        """Bind a live object to ``ref`` (mentioned from now on)."""
        self.objects[ref] = obj
        self._refs.setdefault(ref, None)
        self._toolsets.pop(ref, None)  # the tools made for the object it replaces would keep that object alive

    def add_tools(self, resolved: ResolvedTools, host: ToolHost) -> None:
        """Add the tools of every mentioned object that is bound to ``resolved``.

        An object whose tool names would collide with tools already offered is named by its ref instead. A
        mentioned `Tool` or toolset (a `Toolset`, an MCP toolset) offers its own tools, not its methods. Of any other
        object, only the methods that can be described to a model are offered (see `describable_toolset`); each
        one left out is named once, with why, in a warning of the ``threadline.mentions`` logger. A mention never
        fails the turn: an object that offers nothing (or a toolset that cannot list its tools now) adds no tools.
        """
        for ref in self._refs:
            obj = self.objects.get(ref)
            if obj is None:
                continue
            if isinstance(obj, (Tool, BaseToolset)):
                try:
                    resolved.add(obj, host)
                except Exception as exc:  # e.g. an MCP server that cannot be started: tried again next request
                    logger.warning("mention %r: its tools cannot be offered: %s", ref, describe_exception(exc))
                continue
            cached = self._toolsets.get(ref)
            if cached is None or cached[0] is not obj:
                toolset, left_out = describable_toolset(obj)
                if any(name in resolved.tools for name in toolset.names()):
                    toolset, left_out = describable_toolset(obj, name=ref)
                for tool_name, why in left_out:
                    logger.warning("mention %r: %s is not offered to the model: %s", ref, tool_name, why)
                cached = (obj, toolset)
                self._toolsets[ref] = cached
            resolved.add(cached[1], host)
