"""`BaseToolset`: what every toolset is to the rest of the library — a named group of tools, with optional
instructions for the system prompt, offered per request (`bind`). `Toolset` (a fixed list) and
`threadline.tools.mcp.toolset.MCPToolset` (a server's tools, listed on first use) are its two kinds; both are accepted
wherever tools are.

The two kinds share this base rather than one deriving from the other: an MCP toolset is made by
`Toolset.from_mcp` but is not built like a `Toolset` (no list of functions, no ``from_object``), and with a
common base the factory can point down at the MCP module without that module pointing back up at `Toolset`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Protocol

from .tool import Tool

__all__ = ["BaseToolset", "ToolHost"]


class ToolHost(Protocol):
    """What a toolset may know of the conversation it is offered to (`BaseToolset.bind`); a `Conversation` is one."""

    @property
    def id(self) -> str:
        """The conversation's id (what a toolset keeps its own records under)."""
        ...


class BaseToolset(ABC):
    """A named group of tools: iterable over its `Tool`s, with ``name`` and ``instructions``.

    Subclass it for a toolset whose tools come from somewhere other than a list given up front; a subclass
    defines ``__iter__`` and the ``name`` and ``instructions`` attributes (``None`` when it has none).
    """

    __slots__ = ()

    name: str | None
    """The group's name (for the tools of `Toolset.from_object` and MCP servers, the prefix of their names)."""
    instructions: str | None
    """Text the context builder adds to the system prompt while these tools are offered."""

    @abstractmethod
    def __iter__(self) -> Iterator[Tool]:
        """The tools, in order."""

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __getitem__(self, name: str) -> Tool:
        for item in self:
            if item.name == name:
                return item
        raise KeyError(name)

    def names(self) -> list[str]:
        """The real names of the tools, in order."""
        return [item.name for item in self]

    def bind(self, conversation: ToolHost) -> BaseToolset:
        """The toolset as offered to one conversation (called each time its tools are resolved for a request).

        The default is the toolset itself. A toolset whose tools act on behalf of the conversation they serve
        (`threadline.toolboxes.Pages` keeps pages per conversation) returns a copy bound to it.
        """
        return self
