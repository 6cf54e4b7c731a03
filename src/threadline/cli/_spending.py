"""The usage shown on an assistant message's box (``logs show``); a log's sums are `threadline.pricing.Spending`."""

from __future__ import annotations

from ..message_types import AssistantMessage
from ..pricing.prices import cost_text

__all__ = ["usage_title"]


def usage_title(message: AssistantMessage) -> str:
    """The usage part of an assistant message's title: ``"1,234 tokens (800 cached) · $0.0021"`` ("" without
    usage: the total under the log names it among the unknown parts)."""
    usage = message.usage
    if usage is None:
        return ""
    cached = f" ({usage.cache_read_tokens:,} cached)" if usage.cache_read_tokens else ""
    return f"{usage.total_tokens:,} tokens{cached} · {cost_text(usage.cost)}"
