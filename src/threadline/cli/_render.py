"""Showing a log in the terminal with rich: tool calls grouped with their results, failures with their partial
output, and (when asked for) the model's thinking, dimmed. Used by ``prompt``, ``demo`` and ``logs show``.

Every text shown here came from a model, a tool or a file: it goes through `threadline.cli._terminal.visible`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from ..message_types import (
    ApprovalMessage,
    AssistantMessage,
    Message,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    answer_parts,
)
from ._spending import usage_title
from ._terminal import visible, visible_json

__all__ = [
    "Box",
    "format_arguments",
    "message_box",
    "panel",
    "render_message",
    "thinking_style",
    "thinking_text",
    "tool_box",
    "tool_group",
]

PREVIEW_CHARS = 600


def format_arguments(call: ToolCall) -> str:
    """A call's arguments as compact JSON (or the raw text the model sent when it was not JSON), safe to print."""
    if call.raw_arguments is not None:
        return visible(call.raw_arguments)
    return visible_json(json.dumps(call.arguments, ensure_ascii=False))


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The start of ``text`` (a model's, a tool's or a file's), safe to print."""
    return visible(text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)")


@dataclass(frozen=True, slots=True)
class Box:
    """What a message (or a tool call) is shown as: a titled border around parts shown one under the other, each a
    text or a box of its own. `panel` draws it with rich; `threadline.cli._plain_boxes` draws the same lines as plain
    text, faster, for output that carries no styles."""

    title: str | Text
    border_style: str
    parts: tuple[Text | Box, ...]


def panel(box: Box) -> Panel:
    """The rich panel of a box."""
    parts = [panel(part) if isinstance(part, Box) else part for part in box.parts]
    return Panel(
        parts[0] if len(parts) == 1 else Group(*parts),
        title=box.title,
        title_align="left",
        border_style=box.border_style,
    )


def tool_group(call: ToolCall, result: ToolMessage | None) -> Panel:
    """One tool call and its result in one box."""
    return panel(tool_box(call, result))


def tool_box(call: ToolCall, result: ToolMessage | None) -> Box:
    """One tool call and its result, as a box."""
    body = Text()
    body.append("→ ", style="cyan")
    body.append(visible(call.name), style="bold cyan")
    body.append(f"({format_arguments(call)})", style="cyan")
    if result is None:
        body.append("\n… no result", style="yellow")
    else:
        style = "red" if result.is_error else "green"
        duration = f"  [{result.duration_ms:.0f} ms]" if result.duration_ms is not None else ""
        body.append(f"\n← {_preview(result.content)}", style=style)
        body.append(duration, style="dim")
    return Box("tool", "red" if result and result.is_error else "cyan", (body,))


def thinking_style() -> str:
    """The style of the model's thinking: dim, or none when ``NO_COLOR`` is set (rich keeps dim under it, as it is
    not a colour, but a reader who asked for no colour asked for plain text)."""
    return "" if os.environ.get("NO_COLOR") else "dim"


def thinking_text(piece: Reasoning) -> Text:
    """One piece of reasoning as shown under ``--show-reasoning``: its text, or what it is when it shows none."""
    if piece.text:
        body = piece.text
    elif piece.redacted is not None:
        body = f"(encrypted or redacted reasoning, {len(piece.redacted):,} characters, not readable)"
    elif piece.signature is not None:
        # Gemini's thought signatures come with a tool call and no thinking to show.
        call = f" of call {piece.id}" if piece.id else ""
        body = f"(a signature{call}, {len(piece.signature):,} characters, no readable thinking)"
    else:
        body = "(no text)"
    source = f" · {piece.provider}" if piece.provider else ""
    return Text(visible(f"thinking{source}: {body}"), style=thinking_style())


def render_message(
    message: Message, results: dict[str, ToolMessage] | None = None, *, show_reasoning: bool = False
) -> Any:
    """A rich renderable for one message; an assistant message with calls shows each call with its result, and
    with ``show_reasoning`` its thinking, dimmed, where the model produced it (before its answer, as a rule)."""
    return panel(message_box(message, results, show_reasoning=show_reasoning))


_APPROVAL_STYLES = {"requested": "yellow", "approved": "green", "denied": "red", "started": "green"}


def approval_box(entry: ApprovalMessage) -> Box:
    """An approval entry: the call it is about, its state, who decided and why."""
    if entry.state == "requested":
        what = "waits for a result" if entry.kind == "external" else "waits for approval"
    elif entry.state == "started":
        what = "began to run (approved)"
    else:
        what = f"{entry.state} by {entry.by or 'someone'}"
        if entry.scope == "conversation":
            what += " (for the rest of the conversation)"
    lines = [Text(visible(f"{entry.tool_name} ({entry.tool_call_id}) {what}"))]
    if entry.reason:
        lines.append(Text(visible(entry.reason), style="dim"))
    if entry.arguments is not None:
        edited = visible_json(json.dumps(entry.arguments, ensure_ascii=False))
        lines.append(Text("with arguments " + edited, style="dim"))
    style = _APPROVAL_STYLES.get(entry.state, "yellow")
    return Box(Text(f"approval · {entry.state}"), style, tuple(lines))


def message_box(
    message: Message, results: dict[str, ToolMessage] | None = None, *, show_reasoning: bool = False
) -> Box:
    """One message as a box (see `render_message`)."""
    if isinstance(message, UserMessage):
        text = Text(visible(message.content))
        for attachment in message.attachments:
            text.append(
                visible(f"\n[{attachment.kind}: {attachment.ref or attachment.name or attachment.media_type or ''}]"),
                style="dim",
            )
        return Box("user", "blue", (text,))
    if isinstance(message, SystemMessage):
        return Box("system", "dim", (Text(_preview(message.content), style="dim"),))
    if isinstance(message, ToolMessage):
        style = "red" if message.is_error else "green"
        return Box(
            Text(visible(f"result of {message.tool_name}")), style, (Text(_preview(message.content), style=style),)
        )
    if isinstance(message, ApprovalMessage):
        return approval_box(message)
    ordered = answer_parts(message) if show_reasoning and message.reasoning else None
    answer: list[Text] = []
    if message.content:
        answer.append(Text(visible(message.content)))
    if message.error is not None:
        answer.append(Text(visible(f"failed: {message.error.type}: {message.error.message}"), style="bold red"))
        if not message.content:
            answer.append(Text(_nothing_partial(message, ordered), style="dim"))
    parts: list[Text | Box] = []
    if ordered is not None:
        # In the order the model produced them: its thinking, its text (and failure), its tool calls.
        for part in ordered:
            if isinstance(part, Reasoning):
                parts.append(thinking_text(part))
            elif isinstance(part, ToolCall):
                parts.append(tool_box(part, (results or {}).get(part.id)))
            else:
                parts.extend(answer)
    else:
        parts.extend(answer)
        for call in message.tool_calls:
            parts.append(tool_box(call, (results or {}).get(call.id)))
    # A Text title: rich would read "[...]" in a str title (the model's name, from the server) as markup.
    spent = usage_title(message)
    title = Text(
        visible("assistant" + (f" · {message.model}" if message.model else "") + (f" · {spent}" if spent else ""))
    )
    border = "red" if message.error is not None else "magenta"
    return Box(title, border, tuple(parts) if parts else (Text("(empty)", style="dim"),))


def _nothing_partial(message: AssistantMessage, ordered: list[Any] | None) -> str:
    """What a failed call that left no answer text says it kept: its thinking (shown above the failure, or kept in
    the log when not shown), its tool calls, or nothing."""
    if message.reasoning:
        if ordered is None:
            return "(no partial answer; its thinking is kept: --show-reasoning shows it)"
        text_at = next((index for index, part in enumerate(ordered) if isinstance(part, str)), len(ordered))
        if any(isinstance(part, Reasoning) for part in ordered[:text_at]):
            return "(no partial answer; its thinking is above)"
    return "(no partial answer)" if message.reasoning or message.tool_calls else "(no partial output)"
