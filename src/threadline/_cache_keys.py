"""The keys of a store's request cache that belong to one conversation. A leaf: the context builder makes these keys
(its summaries) and the stores delete them with their conversation, and neither side should load the other for it."""

from __future__ import annotations

__all__ = ["conversation_cache_prefix"]


def conversation_cache_prefix(conversation_id: str) -> str:
    """What the request-cache keys of one conversation start with (its context summaries): `Store.delete_conversation`
    deletes those entries with it. Every other cache entry (``generate_text`` results) belongs to no conversation."""
    return f"summary:{conversation_id}:"
