"""Claude's thinking on the Messages API: the request rules and the replay of signed blocks (no I/O).

`_request` translates the log; this module holds what thinking adds to it. Each rule comes from
Anthropic's thinking documentation (docs.claude.com/en/docs/build-with-claude/thinking, with its "Troubleshooting
thinking" and "Extended thinking" pages, mirrored as Amazon Bedrock's "Adaptive thinking" page) or from the API's
own error texts. A family's profile says which of two modes it takes (``ModelProfile.thinking``); the code never
tests model names.

- Budget families (Claude 3.7 to 4.5, whose only mode is extended thinking): ``thinking: {"type": "enabled",
  "budget_tokens": N}`` with N at least 1,024 and ``max_tokens`` above N ("`max_tokens` must be greater than
  `thinking.budget_tokens`"); when the caller sets no ``max_tokens``, or one that leaves no room, the budget plus
  the profile's default is sent, within the family's output limit. Only ``tool_choice`` auto or none may go with
  it ("Thinking may not be enabled when tool_choice forces tool use."): a forced tool, and so structured output where
  it goes through the forced final-result tool (a schema Claude's JSON outputs cannot express, see
  `_schema`), is refused with `CapabilityError` before anything is sent.
- Adaptive families (Claude Opus 4.6 and Sonnet 4.6, which deprecate the budget, and every later Claude, which
  answers 400 to it: '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and
  "output_config.effort" to control thinking behavior.'): ``thinking: {"type": "adaptive", "display":
  "summarized"}`` and ``output_config: {"effort": level}``. The effort is `ReasoningSettings.level` (low, medium
  or high, all documented on every adaptive family; a ``budget_tokens`` maps to the nearest effort at or above
  it). ``display: "summarized"`` because "omitted" is the default from Opus 4.7 on, which returns thinking blocks
  with an empty text. ``max_tokens`` is a hard limit on thinking plus answer and the API sets no other rule on it:
  the caller's value is sent as it is, and without one the effort's budget (`ReasoningSettings.budget`) plus the
  profile's default answer, within the output limit. A forced tool is accepted ("Adaptive thinking ... supports
  forced tool use"; Claude then skips thinking), except on the families that refuse it on every request
  (``ModelProfile.forced_tool``: 'tool_choice: type "tool" and "any" are not supported for this model.').
- Either mode: ``temperature`` is left out ("temperature and top_k are incompatible with thinking"; from Opus 4.7
  on the profile leaves it out of every request, as "`temperature` is deprecated for this model."). A request that
  ends with an assistant turn cannot think ("You can't prefill the assistant response while thinking is on"), and
  Claude 4.6 and later refuse it outright ("This model does not support assistant message prefill. The
  conversation must end with a user message."): `CapabilityError` before anything is sent (``ModelProfile.prefill``).

Replay: every ``thinking`` (text + ``signature``) and ``redacted_thinking`` (``data``) block of a Claude answer
goes back exactly as received and in its place (`answer_parts`). Thinking without a signature (the partial
thinking of a failed call) and reasoning of other providers are never sent. `settle_turns` then makes the turn list
obey the API's shape rules, which differ by mode:

- Budget mode ("In extended (manual) mode, the API additionally enforces that the final assistant turn of a
  thinking-enabled request begins with a thinking block"):

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
    ends with an assistant turn. Thinking comes back on by itself once the turn is complete (the next user message).

- Adaptive mode ("Adaptive mode relaxes this: no assistant turn needs to start with one"; adaptive thinking may
  skip thinking, so a turn without it is legitimate): the request keeps ``thinking`` and every turn goes back
  exactly as the model produced it, trailing thinking included ("pass the assistant turn back unchanged"; a
  progress-update block can end an answer cut off by ``max_tokens``), nothing reordered or stripped. Sending the
  request without ``thinking`` instead would be refused by the families that cannot turn thinking off
  ('"thinking.type.disabled" is not supported for this model'), and a turn whose thinking mode changed mid-way
  "degrades gracefully": the API itself disables or strips what does not fit, without an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import CapabilityError, UserError
from ...message_types import AssistantMessage, Reasoning, ToolCall, answer_parts
from ..base import ModelRequest, ReasoningSettings
from ..profiles import ModelProfile
from ._schema import uses_final_tool

__all__ = [
    "MIN_BUDGET",
    "PROVIDER",
    "THINKING_TYPES",
    "ReasoningOrder",
    "answer_blocks",
    "check_thinking",
    "settle_turns",
    "thinking_fields",
]

PROVIDER = "anthropic"
MIN_BUDGET = 1_024  # "The minimum budget is 1,024 tokens."
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


def check_thinking(request: ModelRequest, profile: ModelProfile, name: str) -> None:
    """Refuse, before anything is sent, what the Messages API would refuse about thinking (see the module docstring).

    Raises:
        CapabilityError: for a forced tool (``tool_choice`` ``"required"`` or a tool's name, or structured output,
            which goes through a forced tool) on a family that refuses it, or together with a thinking budget; for
            a request that ends with an assistant turn (a prefill) on a family that refuses prefills.
        UserError: for a thinking budget under 1,024 tokens, or one that leaves no room for an answer under the
            family's output limit (budget families; adaptive ones take an effort instead).
    """
    final_tool = uses_final_tool(request, profile)  # the schema is walked once per check
    forced = _forced_tool(request, profile, final_tool)
    if forced is not None and not profile.forced_tool:
        raise CapabilityError(
            f"model {name!r} cannot be made to call a tool ({forced}): Anthropic answers it with "
            """'tool_choice: type "tool" and "any" are not supported for this model.'; leave tool_choice to auto """
            "(and ask for the tool in the prompt)"
        )
    if not profile.prefill and request.messages and isinstance(request.messages[-1], AssistantMessage):
        raise CapabilityError(
            f"model {name!r} cannot continue an assistant message (a prefill): Anthropic answers 'This model does "
            "not support assistant message prefill. The conversation must end with a user message.'; add a user "
            "message first"
        )
    reasoning = request.settings.reasoning
    if reasoning is None or profile.thinking == "adaptive":
        return
    if final_tool:
        raise CapabilityError(
            f"model {name!r} cannot think (.reasoning(...)) and give this structured output in one call: it is "
            f"{forced}, and a thinking budget allows only tool_choice auto or none; leave the reasoning settings out "
            "of this call"
        )
    if forced is not None:
        raise CapabilityError(
            f"model {name!r} cannot think (.reasoning(...)) while forced to call a tool ({forced}): Anthropic "
            "allows only tool_choice auto or none with a thinking budget; drop the tool_choice or the reasoning"
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


def _forced_tool(request: ModelRequest, profile: ModelProfile, final_tool: bool) -> str | None:
    """What forces a tool call in this request, said as the caller set it, or None (``final_tool``: structured
    output goes through the final-result tool, see `uses_final_tool`)."""
    if final_tool:
        if profile.capabilities.structured_output:
            why = "the schema allows extra properties or is recursive"
        else:
            why = "this model has no JSON outputs"
        return f"structured output through the final-result tool: {why}"
    choice = request.tool_choice
    if request.tools and choice not in (None, "auto", "none"):
        return f"tool_choice={choice!r}"
    return None


def thinking_fields(
    reasoning: ReasoningSettings, asked: int | None, profile: ModelProfile, default: int
) -> dict[str, Any]:
    """The fields a request that thinks carries: ``thinking``, ``max_tokens`` and, in adaptive mode,
    ``output_config`` with the effort (see the module docstring).

    Args:
        reasoning: The caller's reasoning settings.
        asked: The caller's ``max_tokens``, if any.
        profile: The family's profile (its mode, default answer length and output limit).
        default: The answer length when the profile has no default.
    """
    budget = reasoning.budget()
    if profile.thinking == "adaptive":
        return {
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": reasoning.level()},
            "max_tokens": asked if asked is not None else _room(budget, profile, default),
        }
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": asked if asked is not None and asked > budget else _room(budget, profile, default),
    }


def _room(thinking: int, profile: ModelProfile, default: int) -> int:
    """Room for ``thinking`` tokens plus the profile's default answer, within the family's output limit."""
    wanted = thinking + (profile.max_output_tokens or default)
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


def answer_blocks(
    message: AssistantMessage, tool_use: Callable[[ToolCall], dict[str, Any]], *, adaptive: bool = False
) -> list[dict[str, Any]]:
    """An assistant message that has reasoning as content blocks, in the order the model produced them.

    Args:
        message: The message (its ``reasoning`` is not empty).
        tool_use: Makes the ``tool_use`` block of a call.
        adaptive: The family thinks adaptively: trailing thinking goes back too (budget mode drops it).
    """
    blocks: list[dict[str, Any]] = []
    for part in answer_parts(message):
        if isinstance(part, str):
            if not part.isspace():  # "text content blocks must contain non-whitespace text"; the log keeps it
                blocks.append({"type": "text", "text": part})
        elif isinstance(part, ToolCall):
            blocks.append(tool_use(part))
        else:
            block = _replay(part)
            if block is not None:
                blocks.append(block)
    while not adaptive and blocks and blocks[-1]["type"] in THINKING_TYPES:
        blocks.pop()  # "The final block in an assistant message cannot be `thinking`." (budget mode)
    return blocks


def settle_turns(
    turns: list[dict[str, Any]], results: list[int], thinking_turns: set[int], thinking: bool, *, adaptive: bool = False
) -> bool:
    """Make the turn list obey the API's thinking rules (see the module docstring); return whether the request may
    carry ``thinking`` (``thinking``: the caller asked for it).

    Args:
        turns: The alternating turns, changed in place (budget mode only).
        results: Per turn, how many ``tool_result`` blocks it holds.
        thinking_turns: The indices of the assistant turns that hold thinking blocks.
        thinking: Whether the request asks for thinking.
        adaptive: The family thinks adaptively: every turn goes back as it is, and only a prefill (which the
            adaptive families refuse anyway) keeps ``thinking`` off.
    """
    if adaptive:
        return thinking and not (turns and turns[-1]["role"] == "assistant")
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
