"""Showing a log in the terminal with rich: tool calls grouped with their results, failures with their partial
output. Used by ``prompt``, ``demo`` and ``logs show``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from ..messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage

__all__ = ["format_arguments", "render_log", "render_message", "tool_group"]

PREVIEW_CHARS = 600


def format_arguments(call: ToolCall) -> str:
    """A call's arguments as compact JSON (or the raw text the model sent when it was not JSON)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def tool_group(call: ToolCall, result: ToolMessage | None) -> Panel:
    """One tool call and its result in one box."""
    body = Text()
    body.append("→ ", style="cyan")
    body.append(f"{call.name}", style="bold cyan")
    body.append(f"({format_arguments(call)})", style="cyan")
    if result is None:
        body.append("\n… no result", style="yellow")
    else:
        style = "red" if result.is_error else "green"
        duration = f"  [{result.duration_ms:.0f} ms]" if result.duration_ms is not None else ""
        body.append(f"\n← {_preview(result.content)}", style=style)
        body.append(duration, style="dim")
    return Panel(body, title="tool", title_align="left", border_style="red" if result and result.is_error else "cyan")


def render_message(message: Message, results: dict[str, ToolMessage] | None = None) -> Any:
    """A rich renderable for one message; an assistant message with calls shows each call with its result."""
    if isinstance(message, UserMessage):
        text = Text(message.content)
        for attachment in message.attachments:
            text.append(
                f"\n[{attachment.kind}: {attachment.ref or attachment.name or attachment.media_type or ''}]",
                style="dim",
            )
        return Panel(text, title="user", title_align="left", border_style="blue")
    if isinstance(message, SystemMessage):
        return Panel(
            Text(_preview(message.content), style="dim"), title="system", title_align="left", border_style="dim"
        )
    if isinstance(message, ToolMessage):
        style = "red" if message.is_error else "green"
        return Panel(
            Text(_preview(message.content), style=style),
            title=f"result of {message.tool_name}",
            title_align="left",
            border_style=style,
        )
    parts: list[Any] = []
    if message.content:
        parts.append(Text(message.content))
    if message.error is not None:
        parts.append(Text(f"failed: {message.error.type}: {message.error.message}", style="bold red"))
        if not message.content:
            parts.append(Text("(no partial output)", style="dim"))
    for call in message.tool_calls:
        parts.append(tool_group(call, (results or {}).get(call.id)))
    title = "assistant" + (f" · {message.model}" if message.model else "")
    border = "red" if message.error is not None else "magenta"
    return Panel(
        Group(*parts) if parts else Text("(empty)", style="dim"), title=title, title_align="left", border_style=border
    )


def render_log(console: Console, messages: Iterable[Message]) -> None:
    """Print a whole log; each tool result is shown inside the box of the call it answers."""
    items = list(messages)
    shown_inside: set[int] = set()
    for index, message in enumerate(items):
        if index in shown_inside:
            continue
        results: dict[str, ToolMessage] = {}
        if isinstance(message, AssistantMessage) and message.tool_calls:
            wanted = {call.id for call in message.tool_calls}
            for later in range(index + 1, len(items)):
                candidate = items[later]
                if isinstance(candidate, ToolMessage):
                    if candidate.tool_call_id in wanted and candidate.tool_call_id not in results:
                        results[candidate.tool_call_id] = candidate
                        shown_inside.add(later)
                elif isinstance(candidate, (AssistantMessage, UserMessage)):
                    break
        console.print(render_message(message, results))
