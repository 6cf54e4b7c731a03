"""Claude's extended thinking on the Messages API: the request rules and the replay of signed blocks (no I/O).

`_anthropic_convert` translates the log; this module holds what thinking adds to it, each rule from Anthropic's
extended-thinking documentation (docs.claude.com/en/docs/build-with-claude/extended-thinking) or from the API's own
error texts:

- Request: ``thinking: {"type": "enabled", "budget_tokens": N}`` with N at least 1,024 and ``max_tokens`` above N
  ("`max_tokens` must be greater than `thinking.budget_tokens`"); when the caller sets no ``max_tokens``, or one that
  leaves no room, the budget plus the profile's default is sent, within the family's output limit. ``temperature``
  is left out ("Thinking isn't compatible with `temperature` or `top_k` modifications"). Only ``tool_choice`` auto or
  none may go with thinking ("Thinking may not be enabled when tool_choice forces tool use."): a forced tool, and so
  structured output (a forced final-result tool), is refused with `CapabilityError` before anything is sent.
- Replay: every ``thinking`` (text + ``signature``) and ``redacted_thinking`` (``data``) block of a Claude answer
  goes back exactly as received and in its place (`answer_parts`). Thinking without a signature (the partial thinking
  of a failed call) and reasoning of other providers are never sent. `settle_turns` then makes the turn list obey the
  API's shape rules:

  * an assistant message that holds thinking must start with it ("If an assistant message contains any thinking
    blocks, the first block must be thinking or redacted_thinking"): when a failed call's ``[LLM_ERROR …]`` text
    and its retry are merged into one turn, the retry's leading thinking run moves to the front, unchanged;
  * "The final block in an assistant message cannot be `thinking`": trailing thinking (an answer cut off by
    ``max_tokens`` after it) is not sent;
  * a tool-use continuation with thinking on must have its assistant turn (from the last user message that is not
    tool results) start with a thinking block ("Expected `thinking` or `redacted_thinking`, but found `tool_use`.
    When `thinking` is enabled, a final `assistant` message must start with a thinking block … To avoid this
    requirement, disable `thinking`."). A turn that cannot (begun on another provider, or with thinking off) is
    sent *without* ``thinking`` for that request, and without thinking blocks in that turn ("If thinking is
    disabled, the final assistant turn shouldn't contain any thinking blocks"). The same holds for a request that
    ends with an assistant turn, since "You can't pre-fill responses when thinking is enabled". Thinking comes back
    on by itself once the turn is complete (the next user message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CapabilityError, UserError
from ..messages import AssistantMessage, Reasoning, ToolCall, answer_parts
from .base import ModelRequest, ReasoningSettings
from .profiles import ModelProfile

__all__ = [
    "MIN_BUDGET",
    "PROVIDER",
    "THINKING_TYPES",
    "ReasoningOrder",
    "answer_blocks",
    "check_thinking",
    "max_tokens_for",
    "settle_turns",
]

PROVIDER = "anthropic"
MIN_BUDGET = 1_024  # "The minimum budget is 1,024 tokens."
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def check_thinking(request: ModelRequest, profile: ModelProfile, name: str) -> None:
    """Refuse, before anything is sent, reasoning settings the Messages API would refuse.

    Raises:
        CapabilityError: for a forced tool (``tool_choice`` ``"required"`` or a tool's name, or structured output,
            which goes through a forced tool) together with thinking.
        UserError: for a budget under 1,024 tokens, or one that leaves no room for an answer under the family's
            output limit.
    """
    reasoning = request.settings.reasoning
    if reasoning is None:
        return
    if request.response_format is not None:
        raise CapabilityError(
            f"model {name!r} cannot think (.reasoning(...)) and give structured output in one call: on Anthropic, "
            "structured output is a forced tool call and thinking allows only tool_choice auto or none; leave the "
            "reasoning settings out of this call"
        )
    choice = request.tool_choice
    if request.tools and choice not in (None, "auto", "none"):
        raise CapabilityError(
            f"model {name!r} cannot think (.reasoning(...)) while forced to call a tool (tool_choice={choice!r}): "
            "Anthropic allows only tool_choice auto or none with thinking; drop the tool_choice or the reasoning"
        )
    budget = reasoning.budget()
    if budget < MIN_BUDGET:
        raise UserError(
            f"Anthropic's thinking budget is at least {MIN_BUDGET:,} tokens, got budget_tokens={budget:,}: "
            f"pass budget_tokens >= {MIN_BUDGET:,} (or an effort)"
        )
    limit = profile.output_limit
    if limit is not None and budget >= limit:
        raise UserError(
            f"a thinking budget of {budget:,} tokens leaves no room for an answer: model {name!r} writes at most "
            f"{limit:,} tokens per answer, thinking included; pass a smaller budget_tokens"
        )


def max_tokens_for(reasoning: ReasoningSettings, asked: int | None, profile: ModelProfile, default: int) -> int:
    """The ``max_tokens`` of a request that thinks: the caller's, when it leaves room above the budget; else the
    budget plus the profile's default answer length, within the family's output limit."""
    budget = reasoning.budget()
    if asked is not None and asked > budget:
        return asked
    wanted = budget + (profile.max_output_tokens or default)
    limit = profile.output_limit
    return wanted if limit is None else min(wanted, limit)


def _replay(piece: Reasoning) -> dict[str, Any] | None:
    """The block a reasoning piece goes back as, or None when it must not be sent (another provider's, unsigned)."""
    if piece.provider != PROVIDER:
        return None
    if piece.redacted is not None:
        return {"type": "redacted_thinking", "data": piece.redacted}
    if piece.signature is not None:
        return {"type": "thinking", "thinking": piece.text, "signature": piece.signature}
    return None


def answer_blocks(message: AssistantMessage, tool_use: Callable[[ToolCall], dict[str, Any]]) -> list[dict[str, Any]]:
    """An assistant message that has reasoning as content blocks, in the order the model produced them.

    Args:
        message: The message (its ``reasoning`` is not empty).
        tool_use: Makes the ``tool_use`` block of a call.
    """
    blocks: list[dict[str, Any]] = []
    for part in answer_parts(message):
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif isinstance(part, ToolCall):
            blocks.append(tool_use(part))
        else:
            block = _replay(part)
            if block is not None:
                blocks.append(block)
    while blocks and blocks[-1]["type"] in THINKING_TYPES:
        blocks.pop()  # "The final block in an assistant message cannot be `thinking`."
    return blocks


def settle_turns(turns: list[dict[str, Any]], results: list[int], thinking_turns: set[int], thinking: bool) -> bool:
    """Make the turn list obey the API's thinking rules (see the module docstring); return whether the request may
    carry ``thinking`` (``thinking``: the caller asked for it).

    Args:
        turns: The alternating turns, changed in place.
        results: Per turn, how many ``tool_result`` blocks it holds.
        thinking_turns: The indices of the assistant turns that hold thinking blocks.
        thinking: Whether the request asks for thinking.
    """
    for index in thinking_turns:
        content = turns[index]["content"]
        if content[0]["type"] not in THINKING_TYPES:
            start = next(i for i, block in enumerate(content) if block["type"] in THINKING_TYPES)
            end = start
            while end < len(content) and content[end]["type"] in THINKING_TYPES:
                end += 1
            content[:] = content[start:end] + content[:start] + content[end:]
    if not turns:
        return thinking
    last = len(turns) - 1
    if turns[last]["role"] == "assistant":
        # A prefill: refused with thinking on, and with thinking off its message may hold none.
        if last in thinking_turns:
            _strip(turns[last])
        return False
    if not results[last]:
        return thinking  # a new user message: the assistant turn before it is complete
    # A tool-use continuation: its assistant turn began after the last user message that is not tool results.
    start = last
    while start >= 0 and (turns[start]["role"] != "user" or results[start]):
        start -= 1
    first = start + 1
    keep = thinking and first < last and first in thinking_turns
    if not keep:
        for index in range(first, last):
            if index in thinking_turns:
                _strip(turns[index])
    return keep


def _strip(turn: dict[str, Any]) -> None:
    turn["content"] = [block for block in turn["content"] if block["type"] not in THINKING_TYPES]


class ReasoningOrder:
    """Where each reasoning piece of one answer stood, so that `answer_parts` puts it back in place.

    The log keeps an answer as reasoning pieces, one text and tool calls; `answer_parts` rebuilds the order as the
    leading reasoning, the text, then the tool calls with each piece that has a ``position`` put back at that index.
    A piece that came after a text or a tool call (interleaved thinking) gets the index that keeps it after the tool
    calls it followed and before those it preceded. Call `text` and `tool` as those parts arrive, `add` for each
    reasoning piece, and `place` once the answer is whole.
    """

    __slots__ = ("_spots", "_text", "_tools")

    def __init__(self) -> None:
        self._spots: list[int | None] = []  # per piece: how many tool calls came before it (None: it leads)
        self._tools = 0
        self._text = False

    def text(self) -> None:
        """A non-empty text came."""
        self._text = True

    def tool(self) -> None:
        """A tool call came."""
        self._tools += 1

    def add(self) -> int:
        """A reasoning piece came; returns its index among the answer's reasoning pieces."""
        self._spots.append(self._tools if self._text or self._tools else None)
        return len(self._spots) - 1

    def place(self, pieces: list[Reasoning], has_text: bool) -> list[Reasoning]:
        """Set the ``position`` of each piece that did not lead the answer (``has_text``: the answer has text)."""
        for index, (piece, tools) in enumerate(zip(pieces, self._spots, strict=True)):
            if tools is not None:
                # Before it, in answer_parts' order: the earlier reasoning, the text (always before the tool calls),
                # and the tool calls it followed.
                piece.position = index + (1 if has_text else 0) + tools
        return pieces
