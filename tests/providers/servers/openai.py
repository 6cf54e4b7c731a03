"""A fake OpenAI Chat Completions server: ``POST /v1/chat/completions``, JSON or a ``chat.completion.chunk`` stream.

The shapes follow the API reference: a ``chat.completion`` object with ``choices[0].message`` (``content``,
``tool_calls`` with ``function.arguments`` as a JSON string), ``finish_reason`` and ``usage``; streamed, a first
chunk with the role, content pieces, tool-call deltas (``index``, then ``id``, ``type``, ``function.name`` and empty
``arguments``, then argument fragments), a chunk with the ``finish_reason``, a usage chunk with empty ``choices``
when ``stream_options.include_usage`` is set, and ``data: [DONE]``.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from ._base import Answer, FakeServer, Recorded, chunks

CREATED = 1_727_000_000


def call_id(tool: Any) -> str:
    return tool.id or "call_" + secrets.token_hex(12)


class FakeOpenAI(FakeServer):
    """The fake OpenAI server; point ``OpenAIModel(base_url=server.base_url)`` at it."""

    path = "/v1/chat/completions"
    name = "openai"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def error_body(self, status: int) -> Any:
        kinds = {401: "invalid_request_error", 429: "requests", 500: "server_error", 503: "server_error"}
        messages = {
            401: "Incorrect API key provided: sk-test-************************wxyz. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            429: "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3.",
            500: "The server had an error while processing your request. Sorry about that!",
            503: "The engine is currently overloaded, please try again later.",
        }
        return {
            "error": {
                "message": messages.get(status, f"error {status}"),
                "type": kinds.get(status, "invalid_request_error"),
                "param": None,
                "code": "invalid_api_key" if status == 401 else None,
            }
        }

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = request.json or {}
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None, "refusal": None}
        if answer.tool_calls:
            message["tool_calls"] = [
                {"id": call_id(tool), "type": "function", "function": {"name": tool.name, "arguments": tool.arguments}}
                for tool in answer.tool_calls
            ]
        elif not answer.text:
            message["content"] = ""
        return {
            "id": "chatcmpl-" + secrets.token_hex(8),
            "object": "chat.completion",
            "created": CREATED,
            "model": body.get("model", "gpt-4o-mini"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if answer.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": answer.input_tokens,
                "completion_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
            "system_fingerprint": "fp_fake",
        }

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        body = request.json or {}
        head = {
            "id": "chatcmpl-" + secrets.token_hex(8),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body.get("model", "gpt-4o-mini"),
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return None, json.dumps({**head, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        events += [chunk({"content": piece}) for piece in chunks(answer.text)]
        for index, tool in enumerate(answer.tool_calls):
            first = {
                "index": index,
                "id": call_id(tool),
                "type": "function",
                "function": {"name": tool.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [first]}))
            for piece in chunks(tool.arguments, 7):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls" if answer.tool_calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": answer.input_tokens,
                "completion_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
            }
            events.append((None, json.dumps({**head, "choices": [], "usage": usage})))
        events.append((None, "[DONE]"))
        return events
