"""A fake Anthropic Messages server that thinks: signed ``thinking`` blocks, ``redacted_thinking``, and the API's
thinking rules enforced with its real error texts, per model as the API's per-model table says.

Answers are `Thought` items: content blocks in the order the model produced them (`Think`, `Redact`, text as a
``str``, `ToolUse`, `Raw` for any other block), rendered as one message or as the documented stream
(``content_block_start`` of type thinking with empty ``thinking`` and ``signature``, ``thinking_delta`` pieces, one
``signature_delta`` just before ``content_block_stop``; a redacted block arrives whole in its start).

Every thinking block is signed: its signature is an HMAC of its text under a secret only this server knows, and
redacted data carries its own HMAC. With ``display: "omitted"`` (the default from Claude Opus 4.7 on, unless the
request sets ``"summarized"``) a block comes with an empty text ("Each thinking block streams a `thinking_delta`
with an empty `thinking` string, then its `signature_delta`") and a signature the server remembers, whatever text
is sent back with it. The server remembers the blocks of each answer it gave.

What each model accepts is a `Rules`, looked up by the request's model id in `MODELS` (Anthropic's "Troubleshooting
thinking" page, "Thinking support, defaults, and rejected configurations by model", and the "Limits and feature
compatibility" section of its Thinking page), or given to the server for every request; an id it does not know
gets the rules of Claude 4.5 and earlier (a thinking budget only). It refuses (HTTP 400, ``invalid_request_error``)
what the real API refuses, with the texts it sends:

- a ``thinking.type`` the model does not take: '"thinking.type.enabled" is not supported for this model. Use
  "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.', the same for ``disabled``,
  "adaptive thinking is not supported on this model";
- a forced ``tool_choice`` where the model refuses it on every request ('tool_choice: type "tool" and "any" are not
  supported for this model.'), a temperature other than 1 where sampling parameters were removed ("`temperature`
  is deprecated for this model."), a prefill where prefills were removed ("This model does not support assistant
  message prefill. The conversation must end with a user message.");
- manual thinking on (``enabled``): ``budget_tokens`` under 1,024; ``max_tokens`` not above the budget; a
  ``temperature`` other than 1; a ``tool_choice`` that forces a tool; an assistant message that holds thinking but
  does not start with it, or ends with it; a tool-use continuation whose assistant turn (from the last user message
  that is not tool results) does not start with a thinking block: "Expected `thinking` or `redacted_thinking`, but
  found …" (adaptive mode relaxes all of these: "no assistant turn needs to start with one");
- thinking on in either mode (asked for, or the model's default): a thinking block whose signature does not match
  its text (altered text or signature), redacted data that is not what the server sent, and the latest assistant
  message's thinking and tool-use blocks not exactly as answered (dropped, reordered, or moved relative to the tool
  calls): "… cannot be modified";
- thinking off, and an assistant message in the final position that holds thinking.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from ._base import Answer, Recorded, Status, ToolUse, chunks
from .anthropic import FakeAnthropic, tool_id

_KEY = secrets.token_bytes(32)
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def sign(text: str) -> str:
    """The fake's signature over a thinking text."""
    return base64.b64encode(hmac.new(_KEY, text.encode("utf-8"), hashlib.sha256).digest()).decode("ascii")


def redacted_data() -> str:
    """Fresh opaque data for a redacted_thinking block, which only this server can verify."""
    nonce = secrets.token_bytes(12)
    return base64.b64encode(nonce + hmac.new(_KEY, nonce, hashlib.sha256).digest()).decode("ascii")


def _valid_data(data: Any) -> bool:
    if not isinstance(data, str):
        return False
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        return False
    return hmac.compare_digest(raw[12:], hmac.new(_KEY, raw[:12], hashlib.sha256).digest())


@dataclass(frozen=True)
class Rules:
    """What one Claude model accepts.

    Attributes:
        modes: The ``thinking.type`` values that turn thinking on: ``"enabled"`` (a budget) and/or ``"adaptive"``.
        disabled: Whether ``thinking: {"type": "disabled"}`` is accepted.
        default: What a request without ``thinking`` does: ``"off"``, or ``"on"`` (adaptive thinking).
        display: The default ``display``: ``"summarized"`` (thinking text returned) or ``"omitted"`` (empty text).
        forced_tool: Whether a forced ``tool_choice`` is accepted at all.
        sampling: Whether a ``temperature`` other than 1 is accepted when thinking is off.
        prefill: Whether a request may end with an assistant message.
    """

    modes: frozenset[str] = frozenset({"enabled"})
    disabled: bool = True
    default: Literal["off", "on"] = "off"
    display: Literal["summarized", "omitted"] = "summarized"
    forced_tool: bool = True
    sampling: bool = True
    prefill: bool = True


BUDGET_ONLY = Rules()
_BOTH = Rules(modes=frozenset({"enabled", "adaptive"}), prefill=False)
_ADAPTIVE = Rules(modes=frozenset({"adaptive"}), display="omitted", sampling=False, prefill=False)
_ON = Rules(modes=frozenset({"adaptive"}), default="on", display="omitted", sampling=False, prefill=False)
_ALWAYS = Rules(
    modes=frozenset({"adaptive"}), disabled=False, default="on", display="omitted", sampling=False, prefill=False
)
_ALWAYS_UNFORCED = Rules(
    modes=frozenset({"adaptive"}),
    disabled=False,
    default="on",
    display="omitted",
    forced_tool=False,
    sampling=False,
    prefill=False,
)
MODELS: dict[str, Rules] = {
    "claude-sonnet-4-5": BUDGET_ONLY,
    "claude-opus-4-5": BUDGET_ONLY,
    "claude-haiku-4-5": BUDGET_ONLY,
    "claude-opus-4-6": _BOTH,
    "claude-sonnet-4-6": _BOTH,
    "claude-opus-4-7": _ADAPTIVE,
    "claude-opus-4-8": _ADAPTIVE,
    "claude-sonnet-5": _ON,
    "claude-opus-5": _ON,
    "claude-fable-5": _ALWAYS,
    "claude-mythos-5": _ALWAYS,
    "claude-fable-5-1": _ALWAYS_UNFORCED,
    "claude-opus-5-5": _ALWAYS_UNFORCED,
}
"""Rules by model id (a dated id such as ``claude-sonnet-4-5-20250929`` takes its family's)."""


def rules_for(model: Any) -> Rules:
    """The rules of a model id: its own, or the longest id it starts with, or Claude 4.5's."""
    name = str(model)
    best = max((key for key in MODELS if name.startswith(key)), key=len, default=None)
    return MODELS[best] if best is not None else BUDGET_ONLY


@dataclass(frozen=True)
class Think:
    """A thinking block; ``signature`` overrides the fake's own (e.g. None for a block without one)."""

    text: str
    signature: Any = "sign"


@dataclass(frozen=True)
class Redact:
    """A redacted_thinking block with fresh data."""


@dataclass(frozen=True)
class Raw:
    """Any content block, sent as given (e.g. a type the client does not know)."""

    block: dict[str, Any]


@dataclass(frozen=True)
class Thought(Answer):
    """An answer as content blocks in order: `Think`, `Redact`, ``str`` (text), `ToolUse`, `Raw`."""

    blocks: tuple[Any, ...] = ()
    thinking_tokens: int = 0


def _error(message: str) -> Status:
    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": "req_011" + secrets.token_hex(10),
    }
    return Status(400, body)


class FakeAnthropicThinking(FakeAnthropic):
    """The fake Anthropic server with extended thinking; point ``AnthropicModel(base_url=server.base_url)`` at it.

    Args:
        rules: What every request's model accepts; default: the rules of the request's model id (`rules_for`).

    Attributes:
        answered: The blocks of every answer given, in order (thinking with signatures, tool_use with ids).
    """

    name = "anthropic-thinking"

    def __init__(self, rules: Rules | None = None) -> None:
        super().__init__()
        self.rules = rules
        self.answered: list[list[dict[str, Any]]] = []
        self._omitted: set[str] = set()  # signatures of blocks sent with their text omitted

    def _rules(self, body: dict[str, Any]) -> Rules:
        return self.rules if self.rules is not None else rules_for(body.get("model"))

    def _display(self, body: dict[str, Any]) -> str:
        config = body.get("thinking")
        asked = config.get("display") if isinstance(config, dict) else None
        return asked if isinstance(asked, str) else self._rules(body).display

    # -- answers ------------------------------------------------------------------------------------------------
    def _content(self, answer: Answer, request: Recorded) -> list[dict[str, Any]]:
        if not isinstance(answer, Thought):
            return self._blocks(answer)
        omitted = self._display(request.json or {}) == "omitted"
        blocks: list[dict[str, Any]] = []
        for item in answer.blocks:
            if isinstance(item, Think):
                signature = sign(item.text) if item.signature == "sign" else item.signature
                block: dict[str, Any] = {"type": "thinking", "thinking": "" if omitted else item.text}
                if signature is not None:
                    block["signature"] = signature
                    if omitted:
                        self._omitted.add(signature)
                blocks.append(block)
            elif isinstance(item, Redact):
                blocks.append({"type": "redacted_thinking", "data": redacted_data()})
            elif isinstance(item, str):
                blocks.append({"type": "text", "text": item})
            elif isinstance(item, ToolUse):
                blocks.append(
                    {"type": "tool_use", "id": tool_id(item), "name": item.name, "input": json.loads(item.arguments)}
                )
            else:
                assert isinstance(item, Raw), item
                blocks.append(dict(item.block))
        self.answered.append(blocks)
        return blocks

    def _usage(self, answer: Answer) -> dict[str, Any]:
        usage: dict[str, Any] = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens}
        if isinstance(answer, Thought) and answer.thinking_tokens:
            usage["output_tokens_details"] = {"thinking_tokens": answer.thinking_tokens}
        return usage

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        content = self._content(answer, request)
        body = request.json or {}
        return {
            "id": "msg_01" + secrets.token_hex(11),
            "type": "message",
            "role": "assistant",
            "model": self.snapshot or body.get("model", "claude-sonnet-4-5"),
            "content": content,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
            "stop_sequence": None,
            "usage": self._usage(answer),
        }

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        content = self._content(answer, request)
        body = request.json or {}

        def event(kind: str, data: dict[str, Any]) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, **data})

        start = {
            "id": "msg_01" + secrets.token_hex(11),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.snapshot or body.get("model", "claude-sonnet-4-5"),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": 1},
        }
        events = [event("message_start", {"message": start})]
        for index, block in enumerate(content):
            kind = block["type"]
            deltas: list[dict[str, Any]] = []
            if kind == "thinking":
                opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
                pieces = chunks(block["thinking"], 9) or [""]  # omitted: one empty thinking_delta
                deltas = [{"type": "thinking_delta", "thinking": piece} for piece in pieces]
                if "signature" in block:
                    deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif kind == "text":
                opening = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in chunks(block["text"])]
            elif kind == "tool_use":
                opening = {**block, "input": {}}
                arguments = json.dumps(block["input"])
                deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in chunks(arguments, 7)]
            else:  # redacted_thinking and any other block arrive whole
                opening = block
            events.append(event("content_block_start", {"index": index, "content_block": opening}))
            if index == 0:
                events.append(event("ping", {}))
            for delta in deltas:
                events.append(event("content_block_delta", {"index": index, "delta": delta}))
            events.append(event("content_block_stop", {"index": index}))
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        usage = self._usage(answer)
        del usage["input_tokens"]
        events.append(event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}))
        events.append(event("message_stop", {}))
        return events

    # -- the API's thinking rules ---------------------------------------------------------------------------------
    def refuse(self, request: Recorded) -> Status | None:
        refused = super().refuse(request)  # JSON outputs' rules
        if refused is not None:
            return refused
        body = request.json or {}
        rules = self._rules(body)
        config = body.get("thinking") or {}
        kind = config.get("type")
        problem = _config_rules(body, rules, kind)
        if problem is None:
            if kind in ("enabled", "adaptive"):
                mode = kind
            else:
                mode = "adaptive" if kind is None and rules.default == "on" else "off"
            if mode == "enabled":
                problem = self._request_rules(body, config)
            problem = problem or self._message_rules(body, mode)
        return _error(problem) if problem else None

    @staticmethod
    def _request_rules(body: dict[str, Any], config: dict[str, Any]) -> str | None:
        budget = config.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if body.get("max_tokens", 0) <= budget:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
        if "temperature" in body and body["temperature"] != 1:
            return "`temperature` may only be set to 1 when thinking is enabled"
        if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
        return None

    def _message_rules(self, body: dict[str, Any], mode: str) -> str | None:
        thinking = mode != "off"
        manual = mode == "enabled"
        messages = body.get("messages") or []
        for number, message in enumerate(messages):
            if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
                continue
            content = message["content"]
            kinds = [block.get("type") for block in content]
            if manual and any(kind in ("thinking", "redacted_thinking") for kind in kinds):
                if kinds[0] not in ("thinking", "redacted_thinking"):
                    return (
                        f"messages.{number}.content.0: If an assistant message contains any thinking blocks, the "
                        f"first block must be thinking or redacted_thinking. Found {kinds[0]}."
                    )
                if kinds[-1] in ("thinking", "redacted_thinking"):
                    return f"messages.{number}: The final block in an assistant message cannot be `thinking`."
            for place, block in enumerate(content):
                if block.get("type") == "thinking":
                    text, signature = block.get("thinking"), block.get("signature")
                    # An omitted block's text is ignored: its signature alone carries the thinking.
                    if not (
                        isinstance(text, str)
                        and isinstance(signature, str)
                        and (signature in self._omitted or signature == sign(text))
                    ):
                        return f"messages.{number}.content.{place}: Invalid `signature` in `thinking` block"
                elif block.get("type") == "redacted_thinking" and not _valid_data(block.get("data")):
                    return _modified(number, place)
        if not messages:
            return None
        last = len(messages) - 1
        final = messages[last]
        if final.get("role") == "assistant":
            if not thinking and isinstance(final.get("content"), list):
                for place, block in enumerate(final["content"]):
                    if block.get("type") in ("thinking", "redacted_thinking"):
                        return (
                            f"messages.{last}.content.{place}: When thinking is disabled, an `assistant` message in "
                            "the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` "
                            "in your request."
                        )
            return None
        if not thinking:
            return None
        if manual and _tool_results(final):
            start = last
            while start >= 0 and (messages[start].get("role") != "user" or _tool_results(messages[start])):
                start -= 1
            first = start + 1
            if first < last:
                content = messages[first].get("content")
                kind = content[0].get("type") if isinstance(content, list) and content else "text"
                if kind not in ("thinking", "redacted_thinking"):
                    return (
                        f"messages.{first}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                        f"`{kind}`. When `thinking` is enabled, a final `assistant` message must start with a "
                        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                        "recommend you include thinking blocks from previous turns. To avoid this requirement, "
                        f"disable `thinking`. Please consult our documentation at {_DOCS}"
                    )
        return self._unmodified(messages)

    def _unmodified(self, messages: list[Any]) -> str | None:
        """The latest assistant message's thinking and tool-use blocks, in order, must be those answered."""
        for number in range(len(messages) - 1, -1, -1):
            if messages[number].get("role") == "assistant":
                break
        else:
            return None
        content = messages[number].get("content")
        if not isinstance(content, list):
            return None
        sent = [(place, _key(block)) for place, block in enumerate(content) if block.get("type") != "text"]
        ids = [key[1] for _, key in sent if key[0] == "tool_use"]
        expected: list[tuple[str, Any]] = []
        for answer in self.answered:
            answered_ids = {block["id"] for block in answer if block["type"] == "tool_use"}
            if answered_ids & set(ids):
                expected += [_key(block) for block in answer if block["type"] != "text"]
        if not ids or any(not any(i == b.get("id") for a in self.answered for b in a) for i in ids):
            return None  # tool calls this server never made (a log begun elsewhere): nothing to compare
        for offset, (place, key) in enumerate(sent):
            if offset >= len(expected) or expected[offset] != key:
                return _modified(number, place)
        if len(expected) > len(sent):
            return _modified(number, len(content))
        return None


def _config_rules(body: dict[str, Any], rules: Rules, kind: Any) -> str | None:
    """What the model refuses whatever the conversation: a thinking type, a forced tool, sampling, a prefill."""
    if (kind == "enabled" and "enabled" not in rules.modes) or (kind == "disabled" and not rules.disabled):
        return (
            f'"thinking.type.{kind}" is not supported for this model. Use "thinking.type.adaptive" and '
            '"output_config.effort" to control thinking behavior.'
        )
    if kind == "adaptive" and "adaptive" not in rules.modes:
        return "adaptive thinking is not supported on this model"
    if not rules.forced_tool and (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        return 'tool_choice: type "tool" and "any" are not supported for this model.'
    if not rules.sampling and "temperature" in body and body["temperature"] != 1:
        return "`temperature` is deprecated for this model."
    messages = body.get("messages") or []
    if not rules.prefill and messages and messages[-1].get("role") == "assistant":
        return "This model does not support assistant message prefill. The conversation must end with a user message."
    return None


def _key(block: dict[str, Any]) -> tuple[str, Any]:
    kind = block.get("type")
    if kind == "thinking":
        return ("thinking", (block.get("thinking"), block.get("signature")))
    if kind == "redacted_thinking":
        return ("redacted_thinking", block.get("data"))
    return (str(kind), block.get("id"))


def _tool_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(block.get("type") == "tool_result" for block in content)


def _modified(number: int, place: int) -> str:
    return (
        f"messages.{number}.content.{place}: `thinking` or `redacted_thinking` blocks in the latest assistant message "
        "cannot be modified. These blocks must remain as they were in the original response."
    )
