"""Summaries of the messages a context window drops (``ContextSettings(summarizer=...)``).

Summaries roll forward: when more messages fall out of the window, the summarizer is given the previous summary and
only the newly dropped messages, so a long conversation never needs its whole head summarized again. Each summary is
cached under the span it covers (``summary:<conversation>:<first id>:<last id>``) in the conversation's store (or in
memory without one), so rebuilding the same window costs no model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from .models.base import ModelRequest, ModelResponse, ModelSettings, TextDelta

if TYPE_CHECKING:
    from .models.base import Model

__all__ = ["SUMMARY_INSTRUCTIONS", "summarize", "transcript"]

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
        if not message.meta.include_in_context:
            continue
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
        else:
            response = event
    text = (response.content if response is not None and response.content is not None else "".join(parts)).strip()
    return text
