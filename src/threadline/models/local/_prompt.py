"""How the embedded model is prompted: the log rendered as a ChatML prompt, with tools described in the system turn.

Pure text work, no llama.cpp: a prompt is a list of `Segment`s, each marked as template markup (tokenized with the
model's special tokens) or content (tokenized as plain text, so a message that contains ``<|im_end|>`` cannot break
out of its turn).

The renderings were chosen by measuring SmolLM2-135M-Instruct: a tool result sent as a ``tool`` turn holding the
bare result is answered in words, while the same result in a ``user`` turn ("Result of …") made the model call the
tool again in every trial. Earlier tool calls are written back as the text the model produces,
``<tool_call>{"name": …, "arguments": …}</tool_call>``, so the history shows the model its own convention.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...message_types import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_for_model,
)
from ..base import ToolSpec

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "LocalPrompt",
    "Segment",
    "chat_turns",
    "render_chatml",
    "render_template",
    "schema_text",
    "tool_call_text",
    "tools_section",
]

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of a prompt: ``special`` pieces are template markup, the others are message content."""

    text: str
    special: bool = False


@dataclass(slots=True)
class LocalPrompt:
    """What one request becomes for llama.cpp.

    Attributes:
        segments: The prompt text, split into template markup and message content.
        mode: ``"text"``, ``"json"``, ``"auto"``, ``"auto_json"`` or ``"call"`` (see the module docstring).
        grammar: The GBNF grammar of the first generation, if constrained.
        call_grammar: The tool-call grammar used once the model starts a call in ``"auto"`` mode.
        tool_names: The tools the model may call.
    """

    segments: list[Segment]
    mode: str
    grammar: str | None = None
    call_grammar: str | None = None
    tool_names: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The whole prompt as text."""
        return "".join(segment.text for segment in self.segments)


def tools_section(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section that describes the offered tools and how to call one."""
    lines = ["# Tools", "You can call these tools:"]
    for spec in tools:
        description = " ".join(spec.description.split()) or "(no description)"
        lines.append(f"- {spec.name}: {description}")
        lines.append(f"  arguments (JSON schema): {json.dumps(spec.parameters, separators=(',', ':'))}")
    lines.append(
        f'To call a tool, reply with {TOOL_CALL_OPEN}{{"name": <tool name>, "arguments": {{...}}}}{TOOL_CALL_CLOSE}. '
        "The result comes back in a tool message; then answer the user."
    )
    return "\n".join(lines)


def tool_call_text(call: ToolCall) -> str:
    """A tool call written the way the model writes one."""
    if call.raw_arguments is not None:
        arguments = call.raw_arguments
    else:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
    name = json.dumps(call.name, ensure_ascii=False)
    return f'{TOOL_CALL_OPEN}{{"name": {name}, "arguments": {arguments}}}{TOOL_CALL_CLOSE}'


def chat_turns(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    answer_schema: Mapping[str, Any] | None = None,
    tool_role: str = "tool",
) -> list[tuple[str, str]]:
    """The request as ``(role, text)`` turns: leading system messages merged (with the tools section), assistant
    tool calls written as text, tool results as ``tool_role`` turns.

    Args:
        messages: The messages of the request, system prefix included.
        tools: The offered tools (described in the system turn); empty when none are offered.
        answer_schema: The JSON schema the answer must match (structured output), described in the system turn.
        tool_role: The role tool results are sent with. ``"user"`` for chat templates that know no tool role; the
            result is then introduced as ``Result of <tool> (<call id>):``.
    """
    turns: list[tuple[str, str]] = []
    start = 0
    system_parts: list[str] = []
    while start < len(messages):
        first = messages[start]
        if not isinstance(first, SystemMessage):
            break
        system_parts.append(first.content)
        start += 1
    if tools:
        system_parts.append(tools_section(tools))
    if answer_schema is not None:
        system_parts.append(
            "# Answer format\nReply with only a JSON object that matches this JSON schema: "
            + schema_text(answer_schema)
        )
    if system_parts:
        turns.append(("system", "\n\n".join(part for part in system_parts if part)))
    calls_in_last_assistant = 0
    for message in messages[start:]:
        if isinstance(message, UserMessage):
            turns.append(("user", _user_text(message)))
        elif isinstance(message, AssistantMessage):
            turns.append(("assistant", _assistant_text(message)))
            calls_in_last_assistant = len(message.tool_calls)
        elif isinstance(message, ToolMessage):
            turns.append((tool_role, _tool_text(message, calls_in_last_assistant > 1, tool_role)))
        elif isinstance(message, SystemMessage):
            turns.append(("system", message.content))
        # an approval entry is the log's record of a wait: never sent to a model
    return turns


def render_chatml(turns: Sequence[tuple[str, str]], prefill: str = "") -> list[Segment]:
    """ChatML segments for ``turns``, ending with an open assistant turn that starts with ``prefill``."""
    segments: list[Segment] = []
    for role, text in turns:
        segments.append(Segment(f"{IM_START}{role}\n", special=True))
        segments.append(Segment(text))
        segments.append(Segment(f"{IM_END}\n", special=True))
    segments.append(Segment(f"{IM_START}assistant\n", special=True))
    if prefill:
        segments.append(Segment(prefill))
    return segments


def render_template(
    formatter: Callable[..., Any], turns: Sequence[tuple[str, str]], prefill: str = ""
) -> list[Segment]:
    """Segments for a model with its own (non-ChatML) chat template, applied by ``formatter(messages=…)``.

    Consecutive turns of one role are merged, since many templates insist that user and assistant alternate.
    """
    merged: list[dict[str, str]] = []
    for role, text in turns:
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"] += "\n\n" + text
        else:
            merged.append({"role": role, "content": text})
    rendered = formatter(messages=merged)
    prompt: str = rendered.prompt if hasattr(rendered, "prompt") else str(rendered)
    segments = [Segment(prompt, special=True)]
    if prefill:
        segments.append(Segment(prefill))
    return segments


def _user_text(message: UserMessage) -> str:
    text = message.content
    refs = [a.ref or a.name for a in message.attachments if a.kind != "image" and (a.ref or a.name)]
    if refs:
        text += "\n(attached: " + ", ".join(str(ref) for ref in refs) + ")"
    return text


def _assistant_text(message: AssistantMessage) -> str:
    parts: list[str] = []
    text = content_for_model(message)
    if text:
        parts.append(text)
    parts.extend(tool_call_text(call) for call in message.tool_calls)
    return "\n".join(parts)


def _tool_text(message: ToolMessage, several: bool, role: str) -> str:
    body = f"Error: {message.content}" if message.is_error else message.content
    if role != "tool":
        return f"Result of {message.tool_name} ({message.tool_call_id}): {body}"
    return f"{message.tool_name}: {body}" if several else body


def schema_text(schema: Mapping[str, Any]) -> str:
    """A JSON schema as compact text, for prompts."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
