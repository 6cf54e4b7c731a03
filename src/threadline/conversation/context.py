"""Deprecated module, kept for one release (issue 32, one word per idea): the mixin is now
`threadline.conversation.requests.RequestAssembly`."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name == "ConversationContext":
        from ..errors import warn_renamed
        from .requests import RequestAssembly

        warn_renamed(
            "threadline.conversation.context.ConversationContext", "threadline.conversation.requests.RequestAssembly"
        )
        return RequestAssembly
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
