"""A fake OpenAI-compatible server that serves a reasoning model, as vLLM, DeepSeek's API, llama.cpp's
``llama-server --reasoning-format deepseek`` and Ollama do.

The thinking comes beside ``content``: in a non-streamed answer as ``choices[0].message.<field>``, streamed as
``delta.<field>`` chunks before the first content chunk (vLLM's reasoning-outputs documentation shows the chunk
``{"delta": {"role": "assistant", "reasoning": "is"}}``). ``field`` is ``"reasoning_content"`` (DeepSeek, llama.cpp,
older vLLM) or ``"reasoning"`` (vLLM after its rename, Ollama, OpenRouter); ``"both"`` sends the text under both
names, as vLLM did while it kept the old name for compatibility (vllm-project/vllm#27752). Usage carries
``completion_tokens_details.reasoning_tokens``.

``rule`` is what the server does with thinking sent back on assistant messages, each as DeepSeek documents it:

- ``"ignore"``: nothing (vLLM, llama.cpp);
- ``"refuse"``: HTTP 400 for any assistant message carrying ``reasoning_content`` (DeepSeek's deepseek-reasoner
  guide: "if the reasoning_content field is included in the sequence of input messages, the API will return a 400
  error"; the error text is the API's own);
- ``"require"``: HTTP 400 for an assistant message with tool calls and no ``reasoning_content`` (DeepSeek's
  thinking-mode guide: for turns that perform tool calls, it "must be fully passed back to the API in all subsequent
  requests"; the error text is the API's own, as reported by its users); an empty string counts as missing.

``mixed=True`` sends the last piece of thinking and the first piece of the answer in one chunk, as a server's
reasoning parser does when the end of the thinking and the start of the answer arrive in the same step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ._base import Answer, Recorded, Status, chunks
from .openai import FakeOpenAI

REFUSED = (
    "The reasoning_content is an intermediate result for display purposes only and will not be included in the "
    "context for inference. Please remove the reasoning_content from your message to reduce network traffic."
)
REQUIRED = "The `reasoning_content` in the thinking mode must be passed back to the API."


@dataclass(frozen=True)
class Thinking(Answer):
    """An answer that thinks first: ``reasoning`` is the thinking text, ``reasoning_tokens`` its share of the
    output tokens."""

    reasoning: str = ""
    reasoning_tokens: int = 0


class FakeCompatible(FakeOpenAI):
    """The fake compatible server; point ``OpenAIModel(base_url=server.base_url)`` at it."""

    name = "compatible"

    def __init__(
        self,
        field: Literal["reasoning_content", "reasoning", "both"] = "reasoning_content",
        rule: Literal["ignore", "refuse", "require"] = "ignore",
        *,
        mixed: bool = False,
    ) -> None:
        super().__init__()
        self.field = field
        self.rule = rule
        self.mixed = mixed

    def _fields(self) -> tuple[str, ...]:
        return ("reasoning_content", "reasoning") if self.field == "both" else (self.field,)

    def refuse(self, request: Recorded) -> Status | None:
        for message in (request.json or {}).get("messages") or ():
            if message.get("role") != "assistant":
                continue
            # DeepSeek V4 Pro refuses an empty reasoning_content like a missing one (NousResearch/hermes-agent#18263).
            sent = "reasoning_content" in message and message["reasoning_content"] != ""
            if (self.rule == "refuse" and sent) or (self.rule == "require" and message.get("tool_calls") and not sent):
                text = REFUSED if self.rule == "refuse" else REQUIRED
                kind = "invalid_request_error"
                return Status(400, {"error": {"message": text, "type": kind, "param": None, "code": kind}})
        return super().refuse(request)

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = super().render_json(answer, request)
        if isinstance(answer, Thinking):
            message = body["choices"][0]["message"]
            for name in self._fields():
                message[name] = answer.reasoning or None
            body["usage"]["completion_tokens_details"] = {"reasoning_tokens": answer.reasoning_tokens}
        return body

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        events = super().render_events(answer, request)
        if not isinstance(answer, Thinking) or not answer.reasoning:
            return events
        head = {key: value for key, value in json.loads(events[0][1]).items() if key != "choices"}

        def chunk(delta: dict[str, Any]) -> tuple[None, str]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
            return None, json.dumps({**head, "choices": [choice]})

        pieces = chunks(answer.reasoning, 5)
        thinking = [chunk(dict.fromkeys(self._fields(), piece)) for piece in pieces]
        if self.mixed:
            # The last piece of thinking rides on the first chunk of the answer text.
            for index, (name, data) in enumerate(events):
                parsed = json.loads(data) if data != "[DONE]" else {}
                delta = parsed["choices"][0]["delta"] if parsed.get("choices") else {}
                if delta.get("content"):
                    delta.update(dict.fromkeys(self._fields(), pieces[-1]))
                    events[index] = (name, json.dumps(parsed))
                    thinking = thinking[:-1]
                    break
        out = [events[0], *thinking, *events[1:]]
        for index, (name, data) in enumerate(out):
            if data != "[DONE]" and "usage" in (parsed := json.loads(data)):
                parsed["usage"]["completion_tokens_details"] = {"reasoning_tokens": answer.reasoning_tokens}
                out[index] = (name, json.dumps(parsed))
        return out
