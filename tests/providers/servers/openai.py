"""A fake OpenAI Chat Completions server: ``POST /v1/chat/completions``, JSON or a ``chat.completion.chunk`` stream.

The shapes follow the API reference: a ``chat.completion`` object with ``choices[0].message`` (``content``,
``tool_calls`` with ``function.arguments`` as a JSON string), ``finish_reason`` and ``usage``; streamed, a first
chunk with the role, content pieces, tool-call deltas (``index``, then ``id``, ``type``, ``function.name`` and empty
``arguments``, then argument fragments), a chunk with the ``finish_reason``, a usage chunk with empty ``choices``
when ``stream_options.include_usage`` is set, and ``data: [DONE]``.

``quirks`` makes it behave like OpenAI-compatible servers people run (each as llama-cpp-python's server does,
checked against the real one, which the CI tests also run):

- ``repeat_names``: every streamed tool-call chunk repeats the call's ``id``, ``type`` and ``function.name``;
- ``index_less``: streamed tool-call chunks carry no ``index``;
- ``reject_null_content``: HTTP 500 (a pydantic validation message) for an assistant message whose ``content`` is
  null or missing;
- ``tool_choice``: tools offered without ``tool_choice`` (or with ``"none"``) are ignored, so the answer is its
  text alone; ``"required"`` is HTTP 500 with an empty message; ``"auto"`` cannot be streamed (HTTP 500).

Whatever the quirks, it keeps OpenAI's rule for GPT-5.2 and later (reported with the API's own error text in
pipecat-ai/pipecat#4043, openai/openai-openapi#541 and BerriAI/litellm#34569): a request with function tools and a
``reasoning_effort`` is refused, and for GPT-5.6 one with tools and any effort but ``"none"``, even none at all.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import replace
from typing import Any

from ._base import Answer, FakeServer, Recorded, Status, chunks

CREATED = 1_727_000_000

LLAMA_CPP_PYTHON = frozenset({"repeat_names", "reject_null_content", "tool_choice"})
"""The quirks of llama-cpp-python's server (``--chat_format chatml-function-calling``)."""


def _effort_with_tools(body: dict[str, Any]) -> Status | None:
    """OpenAI's rule for GPT-5.2 and later on Chat Completions: no ``reasoning_effort`` on a request with function
    tools (400, the API's own text); GPT-5.6 and later apply a default effort, so there tools need an explicit
    ``"none"``."""
    model = str(body.get("model", "")).rsplit("/", 1)[-1]
    if not body.get("tools") or re.match(r"gpt-5(\.\d+)*-chat", model):
        return None
    effort = body.get("reasoning_effort")
    point = re.match(r"gpt-5\.(\d+)(?!\d)", model)
    release = int(point.group(1)) if point else 0  # 0: gpt-5 itself, or not GPT-5
    if release >= 6:
        if effort == "none":
            return None
        message = (
            f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. To use "
            "function tools, use /v1/responses or set reasoning_effort to 'none'."
        )
    elif release >= 2 and effort is not None:
        message = (
            f"Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. Please "
            "use /v1/responses instead."
        )
    else:
        return None
    error = {"message": message, "type": "invalid_request_error", "param": "reasoning_effort", "code": None}
    return Status(400, {"error": error})


def call_id(tool: Any) -> str:
    return tool.id or "call_" + secrets.token_hex(12)


class FakeOpenAI(FakeServer):
    """The fake OpenAI server; point ``OpenAIModel(base_url=server.base_url)`` at it."""

    path = "/v1/chat/completions"
    name = "openai"

    def __init__(self, quirks: frozenset[str] | set[str] = frozenset()) -> None:
        super().__init__()
        unknown = set(quirks) - {"repeat_names", "index_less", "reject_null_content", "tool_choice"}
        assert not unknown, f"unknown quirks {unknown}"
        self.quirks = frozenset(quirks)

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def refuse(self, request: Recorded) -> Status | None:
        body = request.json or {}
        refusal = _effort_with_tools(body)
        if refusal is not None:
            return refusal
        if "reject_null_content" in self.quirks:
            for index, message in enumerate(body.get("messages") or ()):
                if message.get("role") == "assistant" and not isinstance(message.get("content"), str):
                    detail = (
                        f"{{'type': 'string_type', 'loc': ('body', 'messages', {index}, "
                        "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid "
                        f"string', 'input': {message.get('content')!r}}}"
                    )
                    return Status(
                        500,
                        {"error": {"message": f"7 validation errors:\n  {detail}", "type": "internal_server_error"}},
                    )
        if "tool_choice" in self.quirks and body.get("tools"):
            choice = body.get("tool_choice")
            if choice == "required":
                return Status(500, {"error": {"message": "", "type": "internal_server_error"}})
            if choice == "auto" and body.get("stream"):
                message = "Automatic streaming tool choice is not supported"
                return Status(500, {"error": {"message": message, "type": "internal_server_error"}})
        return None

    def _answer(self, answer: Answer, request: Recorded) -> Answer:
        body = request.json or {}
        if "tool_choice" in self.quirks and body.get("tool_choice") in (None, "none") and answer.tool_calls:
            # This server only calls tools when told to: offered tools are ignored, the model just talks.
            return replace(answer, tool_calls=(), text=answer.text or "I would call a tool, but I was not asked to.")
        return answer

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
        answer = self._answer(answer, request)
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
            "model": self.snapshot or body.get("model", "gpt-4o-mini"),
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
                "prompt_tokens_details": {"cached_tokens": answer.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
            "system_fingerprint": "fp_fake",
        }

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        body = request.json or {}
        answer = self._answer(answer, request)
        head = {
            "id": "chatcmpl-" + secrets.token_hex(8),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.snapshot or body.get("model", "gpt-4o-mini"),
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return None, json.dumps({**head, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        events += [chunk({"content": piece}) for piece in chunks(answer.text)]
        for index, tool in enumerate(answer.tool_calls):
            ident = call_id(tool)
            position = {} if "index_less" in self.quirks else {"index": index}
            if "repeat_names" in self.quirks:
                # llama-cpp-python: no opening chunk; every fragment carries the id, the type and the whole name.
                for piece in chunks(tool.arguments, 7) or [""]:
                    fragment = {"id": ident, "type": "function", "function": {"name": tool.name, "arguments": piece}}
                    events.append(chunk({"tool_calls": [{**position, **fragment}]}))
                continue
            first = {**position, "id": ident, "type": "function", "function": {"name": tool.name, "arguments": ""}}
            events.append(chunk({"tool_calls": [first]}))
            for piece in chunks(tool.arguments, 7):
                events.append(chunk({"tool_calls": [{**position, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls" if answer.tool_calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": answer.input_tokens,
                "completion_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
                "prompt_tokens_details": {"cached_tokens": answer.cached_tokens, "audio_tokens": 0},
            }
            events.append((None, json.dumps({**head, "choices": [], "usage": usage})))
        events.append((None, "[DONE]"))
        return events
