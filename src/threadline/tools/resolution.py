"""Resolution: the tools of one request, flattened from functions, `Tool`s, `Toolset`s and dynamic providers
(callables evaluated per request with the conversation)."""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import msgspec

from ..models.base import ToolSpec
from .base_toolset import BaseToolset, ToolHost
from .tool import Tool, as_tool

__all__ = ["DynamicTools", "ResolvedTools", "ToolLike", "dynamic_tools", "is_dynamic_provider", "resolve_tools"]


class DynamicTools(msgspec.Struct, frozen=True):
    """Tools computed per request from the conversation (see `dynamic_tools`)."""

    provider: Callable[[Any], Any]  # called with the `Conversation` the request is for


def dynamic_tools(provider: Callable[[Any], Any]) -> DynamicTools:
    """Mark ``provider(conversation) -> tools`` to be evaluated before every model request.

    A callable whose only parameter is annotated ``Conversation`` is recognised without this marker.
    """
    return DynamicTools(provider)


ToolLike: TypeAlias = Callable[..., Any] | Tool | BaseToolset | DynamicTools


def is_dynamic_provider(item: Any) -> bool:
    """Whether ``item`` provides tools per request: a `DynamicTools`, or a callable taking one ``Conversation``."""
    if isinstance(item, DynamicTools):
        return True
    if not callable(item) or isinstance(item, (Tool, BaseToolset)):
        return False
    # Called before every request for each configured callable: remember the answer (reading a signature is slow),
    # keyed weakly as `schema.signature_of` does, so the cache keeps no provider (nor the object of a method) alive.
    cache, key = (_dynamic_methods, item.__func__) if inspect.ismethod(item) else (_dynamic_functions, item)
    try:
        known = cache.get(key)
    except TypeError:  # neither hashable nor weakly referable: not cached
        return _looks_dynamic(item)
    if known is None:
        known = _looks_dynamic(item)
        with contextlib.suppress(TypeError):
            cache[key] = known
    return known


_dynamic_functions: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_dynamic_methods: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _looks_dynamic(item: Any) -> bool:
    try:
        params = list(inspect.signature(item).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) != 1:
        return False
    annotation = params[0].annotation
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "Conversation"
    return getattr(annotation, "__name__", None) == "Conversation" and getattr(annotation, "__module__", "").startswith(
        "threadline"
    )


class ResolvedTools(msgspec.Struct):
    """The tools offered for one request, by real name, and the instructions of their toolsets."""

    tools: dict[str, Tool] = msgspec.field(default_factory=dict)
    instructions: list[str] = msgspec.field(default_factory=list)

    def add(self, item: Any, conversation: ToolHost | None) -> None:
        if isinstance(item, Tool):  # the usual case (the builder turns functions into Tools), checked first
            self.tools[item.name] = item
        elif isinstance(item, BaseToolset):
            if conversation is not None:
                item = item.bind(conversation)
            for member in item:
                self.tools[member.name] = member
            if item.instructions and item.instructions not in self.instructions:
                self.instructions.append(item.instructions)
        elif is_dynamic_provider(item):
            provider = item.provider if isinstance(item, DynamicTools) else item
            produced = provider(conversation)
            if produced is None:
                return
            if isinstance(produced, (BaseToolset, Tool)) or callable(produced):
                produced = [produced]
            for sub in produced:
                self.add(sub, conversation)
        else:
            resolved = as_tool(item)
            self.tools[resolved.name] = resolved

    def specs(self) -> list[ToolSpec]:
        return [item.spec() for item in self.tools.values()]


def resolve_tools(items: Iterable[Any], conversation: ToolHost | None = None) -> ResolvedTools:
    """Flatten functions, Tools, Toolsets and dynamic providers into the tools of one request (later names win)."""
    resolved = ResolvedTools()
    for item in items:
        resolved.add(item, conversation)
    return resolved
