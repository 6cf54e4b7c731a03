"""A fake of OpenRouter's chat completions with reasoning models behind it: ``reasoning`` and ``reasoning_details``.

OpenRouter answers a reasoning model with its thinking twice: as text in ``message.reasoning`` (streamed as
``delta.reasoning``) and as ``reasoning_details``, typed entries that must be sent back unmodified, in order, on the
assistant message (its reasoning-tokens guide, "Preserving Reasoning Blocks"). The shapes here are those of its
guide and of recorded OpenRouter streams (e.g. charmbracelet/fantasy's provider test data):

- a Claude model (``anthropic/…``): ``{"type": "reasoning.text", "text": …, "signature": …, "format":
  "anthropic-claude-v1", "index": 0}``; streamed, the text comes in fragments of index 0 with an empty signature
  and the signature in a last fragment with empty text. With ``redacted=True`` a ``{"type": "reasoning.encrypted",
  "data": …, "format": "anthropic-claude-v1", "index": 1}`` entry follows (Claude's redacted thinking).
- a Gemini 3 model (``google/…``): a ``reasoning.text`` entry without signature (format ``google-gemini-v1``), and
  the thought signature of each step's first tool call as ``{"type": "reasoning.encrypted", "data": …, "id": <the
  call's id>, "format": "google-gemini-v1", "index": 1}``, streamed whole on one chunk.

The rules it enforces, with the upstream provider's error inside OpenRouter's error envelope (``{"error":
{"message": "Provider returned error", "code": 400, "metadata": {"raw": …, "provider_name": …}}}``): Claude with
thinking refuses a tool-calling assistant turn of the current turn that does not start with its exact signed thinking
(Anthropic's text: "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`…"),
and an altered signature ("Invalid `signature` in `thinking` block"); Gemini refuses a tool call sent back without
its signature ("Function call is missing a thought_signature in functionCall parts…"). Signatures are HMACs, so the
fake knows its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from ._base import Answer, Recorded, Status, chunks
from .openai import FakeOpenAI

_KEY = b"fake-openrouter-reasoning"
CLAUDE = "anthropic-claude-v1"
GEMINI = "google-gemini-v1"


def sign(text: str) -> str:
    """The signature the fake gives a piece of text (and expects back with it)."""
    return base64.b64encode(hmac.new(_KEY, text.encode(), hashlib.sha256).digest()).decode()


def call_signature(name: str, arguments: str) -> str:
    """A Gemini call's thought signature: bound to its name and arguments (as JSON values, so a client may
    re-encode them), not to its id."""
    return sign(f"{name}:{json.dumps(json.loads(arguments or '{}'), sort_keys=True)}")


@dataclass(frozen=True)
class Reasoned(Answer):
    """An answer that thinks first; ``redacted`` adds a Claude redacted-thinking entry after the thinking;
    ``late_details`` streams the plain ``reasoning`` text alone first and the ``reasoning_details`` entries after
    it, whole (as a gateway that passes the text through as it comes and the entries once complete may)."""

    reasoning: str = "Let me think about which tool fits."
    redacted: bool = False
    late_details: bool = False


def _error(provider: str, raw: Any) -> Status:
    error = {
        "message": "Provider returned error",
        "code": 400,
        "metadata": {"raw": json.dumps(raw), "provider_name": provider},
    }
    return Status(400, {"error": error})


class FakeOpenRouter(FakeOpenAI):
    """OpenRouter's ``/api/v1/chat/completions``; point ``OpenAIModel(base_url=server.base_url)`` at it."""

    path = "/api/v1/chat/completions"
    name = "openrouter"

    @property
    def base_url(self) -> str:
        return f"{self.root}/api/v1"

    # -- what the model says ---------------------------------------------------------------------------------------
    def details(self, answer: Answer, model: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The whole ``reasoning_details`` of an answer (``calls`` are its wire tool calls, ids included)."""
        if not isinstance(answer, Reasoned):
            return []
        if model.startswith("google/"):
            entries: list[dict[str, Any]] = [
                {"type": "reasoning.text", "text": answer.reasoning, "format": GEMINI, "index": 0}
            ]
            if calls:
                first = calls[0]
                data = call_signature(first["function"]["name"], first["function"]["arguments"])
                entries.append(
                    {"type": "reasoning.encrypted", "data": data, "id": first["id"], "format": GEMINI, "index": 1}
                )
            return entries
        entries = [
            {
                "type": "reasoning.text",
                "text": answer.reasoning,
                "signature": sign(answer.reasoning),
                "format": CLAUDE,
                "index": 0,
            }
        ]
        if answer.redacted:
            data = base64.b64encode(b"redacted:" + answer.reasoning.encode()).decode()
            entries.append({"type": "reasoning.encrypted", "data": data, "format": CLAUDE, "index": 1})
        return entries

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = super().render_json(answer, request)
        if isinstance(answer, Reasoned):
            message = body["choices"][0]["message"]
            message["reasoning"] = answer.reasoning
            message["reasoning_details"] = self.details(answer, body["model"], message.get("tool_calls") or [])
        return body

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        events = super().render_events(answer, request)
        if not isinstance(answer, Reasoned):
            return events
        head = {key: value for key, value in json.loads(events[0][1]).items() if key != "choices"}
        model = head["model"]

        def chunk(delta: dict[str, Any]) -> tuple[None, str]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
            return None, json.dumps({**head, "choices": [choice]})

        # The calls' ids, from the stream itself: the encrypted entry of a Gemini call names it.
        calls: list[dict[str, Any]] = []
        for _, data in events:
            if data == "[DONE]":
                continue
            for choice in json.loads(data).get("choices") or ():
                for fragment in (choice.get("delta") or {}).get("tool_calls") or ():
                    if fragment.get("id"):
                        calls.append({"id": fragment["id"], "function": {"name": fragment["function"]["name"]}})
        for call, tool in zip(calls, answer.tool_calls, strict=True):
            call["function"]["arguments"] = tool.arguments
        entries = self.details(answer, model, calls)
        text_entry = entries[0]
        thinking: list[tuple[None, str]] = []
        if answer.late_details:
            thinking = [chunk({"reasoning": piece}) for piece in chunks(answer.reasoning, 6)]
            thinking.extend(chunk({"reasoning": None, "reasoning_details": [entry]}) for entry in entries)
            return [events[0], *thinking, *events[1:]]
        for piece in chunks(answer.reasoning, 6):
            fragment = {key: value for key, value in text_entry.items() if key != "signature"}
            fragment["text"] = piece
            if "signature" in text_entry:
                fragment["signature"] = ""
            thinking.append(chunk({"reasoning": piece, "reasoning_details": [fragment]}))
        if "signature" in text_entry:
            closing = {**text_entry, "text": ""}
            thinking.append(chunk({"reasoning": "", "reasoning_details": [closing]}))
        for extra in entries[1:]:
            thinking.append(chunk({"reasoning": None, "reasoning_details": [extra]}))
        return [events[0], *thinking, *events[1:]]

    # -- the rules -------------------------------------------------------------------------------------------------
    def refuse(self, request: Recorded) -> Status | None:
        body = request.json or {}
        model = str(body.get("model", ""))
        reasoning = body.get("reasoning")
        if isinstance(reasoning, dict) and "effort" in reasoning and "max_tokens" in reasoning:
            # The guide: "One of the following (not both)".
            message = "Only one of reasoning.effort and reasoning.max_tokens may be specified"
            return Status(400, {"error": {"message": message, "code": 400}})
        messages = body.get("messages") or []
        start = max((i for i, message in enumerate(messages) if message.get("role") == "user"), default=-1)
        for number, message in enumerate(messages):
            if message.get("role") != "assistant" or not message.get("tool_calls") or number <= start:
                continue
            sent = message.get("reasoning_details") or []
            if model.startswith("google/"):
                refusal = self._gemini(message, sent)
            elif model.startswith("anthropic/"):
                refusal = self._claude(number, sent)
            else:
                refusal = None
            if refusal is not None:
                return refusal
        return super().refuse(request)

    def _claude(self, number: int, sent: list[Any]) -> Status | None:
        first = sent[0] if sent else None
        if not (isinstance(first, dict) and first.get("type") == "reasoning.text" and first.get("signature")):
            text = (
                f"messages.{number - 1}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking "
                "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
            )
            return _error("Anthropic", {"type": "error", "error": {"type": "invalid_request_error", "message": text}})
        if first["signature"] != sign(first.get("text") or ""):
            text = f"messages.{number - 1}.content.0: Invalid `signature` in `thinking` block"
            return _error("Anthropic", {"type": "error", "error": {"type": "invalid_request_error", "message": text}})
        return None

    def _gemini(self, message: dict[str, Any], sent: list[Any]) -> Status | None:
        call = message["tool_calls"][0]
        function = call.get("function") or {}
        expected = call_signature(str(function.get("name")), function.get("arguments") or "{}")
        signed = [
            entry
            for entry in sent
            if isinstance(entry, dict) and entry.get("type") == "reasoning.encrypted" and entry.get("id") == call["id"]
        ]
        if not signed or signed[0].get("data") != expected:
            text = (
                "Function call is missing a thought_signature in functionCall parts. This is required for tools to "
                "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
                f"data, function call `default_api:{function.get('name')}` , position 1. please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )
            raw = [{"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}]
            return _error("Google AI Studio", raw)
        return None
