"""Summaries of the messages a context window drops (``ContextSettings(summarizer=...)``).

Summaries roll forward: when more messages fall out of the window, the summarizer is given the previous summary and
only the newly dropped messages, so a long conversation never needs its whole head summarized again. Each summary is
cached under the span it covers (``summary:<conversation>:<first id>:<last id>``) in the conversation's store (or in
memory without one), so rebuilding the same window costs no model call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._cache_keys import conversation_cache_prefix
from ..message_types import ApprovalMessage, AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ..models.base import ModelRequest, ModelResponse, ModelSettings, TextDelta

if TYPE_CHECKING:
    from ..message_list import MessageList
    from ..models.base import Model

__all__ = ["SUMMARY_INSTRUCTIONS", "summarize", "summary_of_span", "transcript"]

SUMMARY_INSTRUCTIONS = (
    "You summarize the earlier part of a conversation so it can continue without it. Write at most a short "
    "paragraph: keep facts, decisions, names, numbers, tool results that matter, and open tasks. No preamble."
)
TRANSCRIPT_CHARS = 12_000
RESULT_CHARS = 500


def transcript(messages: Sequence[Message], limit: int = TRANSCRIPT_CHARS) -> str:
    """A plain-text transcript of messages, newest kept when it is longer than ``limit`` characters."""
    lines: list[str] = []
    size = 0
    for message in reversed(messages):
        if not message.meta.include_in_context or isinstance(message, ApprovalMessage):
            continue  # an approval entry is the log's record of a wait, never shown to a model
        line = _line(message)
        if size + len(line) > limit and lines:
            lines.append("[… earlier messages omitted]")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(reversed(lines))


def _line(message: Message) -> str:
    if isinstance(message, UserMessage):
        return f"User: {message.content}"
    if isinstance(message, SystemMessage):
        return f"System: {message.content}"
    if isinstance(message, ToolMessage):
        text = message.content if len(message.content) <= RESULT_CHARS else message.content[:RESULT_CHARS] + "…"
        return f"Result of {message.tool_name}{' (error)' if message.is_error else ''}: {text}"
    assert isinstance(message, AssistantMessage)
    parts = []
    if message.content:
        parts.append(f"Assistant: {message.content}")
    for call in message.tool_calls:
        parts.append(f"Assistant called {call.name}({call.raw_arguments or call.arguments})")
    if message.error is not None:
        parts.append(f"[model call failed: {message.error.type}]")
    return "\n".join(parts) or "Assistant: (empty)"


async def summarize(model: Model, previous: str | None, messages: Sequence[Message], **settings: Any) -> str:
    """Ask ``model`` for a summary of ``messages``, continuing ``previous`` if given.

    Raises:
        ModelError: if the model call fails.
    """
    body = transcript(messages)
    if previous:
        body = f"Summary so far:\n{previous}\n\nMessages since:\n{body}"
    request = ModelRequest(
        messages=[SystemMessage(content=SUMMARY_INSTRUCTIONS), UserMessage(content=body)],
        settings=ModelSettings(stream=False, max_tokens=settings.get("max_tokens", 300), temperature=0),
    )
    model.check(request)
    parts: list[str] = []
    response: ModelResponse | None = None
    async for event in model.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, ModelResponse):
            response = event
    text = (response.content if response is not None and response.content is not None else "".join(parts)).strip()
    return text


async def summary_of_span(
    messages: MessageList,
    head: int,
    cut: int,
    conversation_id: str,
    summarizer: Model | str,
    cache_get: Callable[[str], Any],
    cache_put: Callable[[str, Any], None],
) -> str | None:
    """A summary of ``messages[head:cut]`` (what the window dropped), rolled forward from the last one and cached by
    span through ``cache_get``/``cache_put``; None when the summarizer fails (the window is then sent without it)."""
    from ..models import get_model

    first, last = messages[head].id, messages[cut - 1].id
    prefix = conversation_cache_prefix(conversation_id)  # deleted with the conversation
    span_key = f"{prefix}{first}:{last}"
    latest_key = f"{prefix}latest"
    cached = cache_get(span_key)
    if isinstance(cached, str):
        return cached
    previous: str | None = None
    start = head
    latest = cache_get(latest_key)
    if isinstance(latest, dict):
        index = latest.get("upto_index")
        if (
            isinstance(index, int)
            and head <= index < cut
            and messages[index].id == latest.get("upto_id")
            and isinstance(latest.get("text"), str)
        ):
            previous, start = latest["text"], index + 1
    try:
        text = await summarize(get_model(summarizer), previous, list(messages[start:cut]))
    except Exception as exc:  # a failed summary must not fail the turn: the window is sent without it
        import logging

        logging.getLogger("threadline").warning("summarizer failed, sending the window without a summary: %s", exc)
        return None
    if text:
        cache_put(span_key, text)
        cache_put(latest_key, {"upto_index": cut - 1, "upto_id": last, "text": text})
    return text or None
