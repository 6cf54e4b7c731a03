"""A fake of Gemini's OpenAI-compatible endpoint (``…/v1beta/openai/chat/completions``) with thought signatures.

From Gemini 3 on, a tool call comes with a thought signature, ``extra_content: {"google": {"thought_signature":
…}}`` on the call (in the stream, on the call's first fragment), on the first call of each step when several run
in parallel; a tool loop that sends a call back without its signature is refused, with Google's error (a JSON array
of one error object, as the compatible endpoint answers): "Function call is missing a thought_signature in
functionCall parts. …" (reported verbatim in openai/openai-agents-python#2137 and on Google's developer forum). A
signature that was altered is refused too ("Corrupted thought signature."). Signatures here are an HMAC of the
call, so the fake can tell its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from ._base import Answer, Recorded, Status
from .openai import FakeOpenAI

_KEY = b"fake-gemini-thought-signatures"


def thought_signature(name: str, arguments: str) -> str:
    """The signature the fake gives a call (and expects back with it): bound to the call's name and arguments (as
    JSON values, so a client may re-encode them), not to its id, which the compatible API makes up."""
    canonical = json.dumps(json.loads(arguments), sort_keys=True)
    mac = hmac.new(_KEY, f"{name}:{canonical}".encode(), hashlib.sha256).digest()
    return base64.b64encode(b"\x12\x0a" + mac).decode()


def _error(message: str) -> Status:
    return Status(400, [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}])


class FakeGemini(FakeOpenAI):
    """Gemini 3 behind its OpenAI-compatible API; point ``OpenAIModel(base_url=server.base_url)`` at it."""

    name = "gemini"

    def refuse(self, request: Recorded) -> Status | None:
        body = request.json or {}
        messages = body.get("messages") or []
        # The current turn: what follows the last user message. Its calls must carry their signatures.
        start = max((i for i, message in enumerate(messages) if message.get("role") == "user"), default=-1)
        for message in messages[start + 1 :]:
            if message.get("role") != "assistant":
                continue
            for position, call in enumerate(message.get("tool_calls") or ()):
                if position:
                    continue  # parallel calls: only the first of a step is signed
                function = call.get("function") or {}
                expected = thought_signature(str(function.get("name")), function.get("arguments") or "{}")
                sent = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
                if sent is None:
                    return _error(
                        "Function call is missing a thought_signature in functionCall parts. This is required for "
                        "tools to work correctly, and missing thought_signature may lead to degraded model "
                        f"performance. Additional data, function call `default_api:{function.get('name')}` , "
                        f"position {position + 1}. please refer to https://ai.google.dev/gemini-api/docs/"
                        "thought-signatures for more details."
                    )
                if sent != expected:
                    return _error("Corrupted thought signature.")
        return None

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = super().render_json(answer, request)
        calls = body["choices"][0]["message"].get("tool_calls") or []
        if calls:
            first = calls[0]
            signature = thought_signature(first["function"]["name"], first["function"]["arguments"])
            first["extra_content"] = {"google": {"thought_signature": signature}}
        return body

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        events = super().render_events(answer, request)
        if not answer.tool_calls:
            return events
        first = answer.tool_calls[0]
        signature = thought_signature(first.name, first.arguments)
        out: list[tuple[str | None, str]] = []
        signed = False
        for event, data in events:
            if not signed and data != "[DONE]":
                chunk = json.loads(data)
                for choice in chunk.get("choices") or ():
                    for fragment in (choice.get("delta") or {}).get("tool_calls") or ():
                        if fragment.get("id") and not signed:  # the call's first fragment
                            fragment["extra_content"] = {"google": {"thought_signature": signature}}
                            signed = True
                            data = json.dumps(chunk)
            out.append((event, data))
        return out
