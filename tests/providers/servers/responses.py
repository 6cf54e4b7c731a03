"""A fake OpenAI Responses API: ``POST /v1/responses``, a ``response`` object or a stream of named events.

The shapes follow OpenAI's API reference and guides: a ``response`` with ``status``, ``output`` items (``reasoning``
with ``summary`` parts and, when ``include`` asks for it, ``encrypted_content``; ``message`` with ``output_text``;
``function_call`` with ``call_id``, ``name`` and ``arguments`` text) and ``usage`` with
``output_tokens_details.reasoning_tokens``; streamed, ``response.created``, ``response.in_progress``, for each item
``response.output_item.added``, its deltas (``response.reasoning_summary_part.added``,
``response.reasoning_summary_text.delta``/``done``, ``response.output_text.delta``,
``response.function_call_arguments.delta``/``done``) and ``response.output_item.done``, then
``response.completed`` (or ``response.incomplete``).

It enforces what OpenAI's API enforces on stateless (``store: false``) requests, answering with the API's own
error text:

- a reasoning model's reasoning items must come back with the function calls they preceded (the function-calling
  guide: "any reasoning items returned in model responses with tool calls must also be passed back with tool call
  outputs"). The real API pairs them by item id; requests here carry no ``fc_…`` ids, so the fake pairs them by
  ``call_id``, which is stricter: a call it issued after a reasoning item is refused unless that item (same ``id``,
  valid encrypted content) precedes it among the assistant's items: "Item 'fc_…' of type 'function_call' was
  provided without its required 'reasoning' item: 'rs_…'.";
- ``encrypted_content`` is an HMAC-signed token only this server can make; an altered one is refused ("The
  encrypted content for item rs_… could not be verified. Reason: Encrypted content could not be decrypted or
  parsed.", code ``invalid_encrypted_content``);
- an input item that carries only an id (a reasoning item without encrypted content, a message with its ``msg_…``
  id) refers to nothing when nothing is stored: HTTP 404 "Item with id '…' not found. Items are not persisted when
  `store` is set to false. Try again with `store` set to true, or remove this item from your input.";
- a replayed reasoning item needs a non-empty ``id`` and a ``summary``; an id may appear once; a reasoning item
  must be followed by an item of the assistant's; a ``function_call_output`` must answer a call in the input;
- ``include: ["reasoning.encrypted_content"]`` on a model that does not reason: "Encrypted content is not supported
  with this model." (param ``include``);
- reasoning items given to a model that does not reason: "Reasoning input items can only be provided to a reasoning
  or computer use model. Remove reasoning items from your input and try again.".

``FakeResponses(flavor="vllm")`` plays vLLM serving gpt-oss instead: ``gpt-oss`` models reason, their thinking comes
as ``content: [{"type": "reasoning_text", …}]`` with an empty summary and no encrypted content (streamed as
``response.reasoning_text.delta``), and a reasoning item sent back must carry exactly one such content part (vLLM's
``parse_response_input`` reads ``content[0]["text"]`` after asserting there is one); nothing is refused for want of
stored state.

Every reasoning item it issued, with the call that followed it, is in `FakeResponses.issued`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

from ._base import Answer, Recorded, Status, chunks
from .openai import CREATED, FakeOpenAI, call_id

REASONING_FAMILIES = ("o1", "o3", "o4", "gpt-5")
NOT_STORED = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` "
    "set to true, or remove this item from your input."
)


@dataclass(frozen=True)
class Thought(Answer):
    """An answer of a reasoning model, with what it thought.

    Attributes:
        summaries: The summary parts of the reasoning item before the answer (sent only when the request asks for a
            summary).
        per_call: Each tool call after the first gets a reasoning item of its own before it (as o3 interleaves).
        reasoning_tokens: Reported in ``usage.output_tokens_details``.
        incomplete: Finish as ``incomplete`` with this reason (``"max_output_tokens"``).
        extra: Raw output items put after the reasoning (e.g. an item type threadline does not read).
        paragraphs: The texts of further message items after the first one.
        thinking: The thinking a vLLM-flavoured server shows (``reasoning_text`` content).
        inserted: Raw SSE events ``(position, event name or None, data)`` put among the rendered events (a position
            past the end puts it after the last), e.g. a proxy's ``data: [DONE]`` or a keepalive.
    """

    summaries: tuple[str, ...] = ()
    per_call: bool = False
    reasoning_tokens: int = 0
    incomplete: str | None = None
    extra: tuple[dict[str, Any], ...] = ()
    paragraphs: tuple[str, ...] = ()
    thinking: str = "I should think about this."
    inserted: tuple[tuple[int, str | None, str], ...] = ()


class FakeResponses(FakeOpenAI):
    """The fake Responses API; point ``OpenAIResponsesModel(base_url=server.base_url)`` at it."""

    path = "/v1/responses"
    name = "responses"

    def __init__(self, flavor: str = "openai") -> None:
        super().__init__()
        self.flavor = flavor
        self._key = secrets.token_bytes(32)
        self.issued: dict[str, tuple[str, str]] = {}  # call_id -> (fc id, the id of the reasoning item before it)
        self.reasoning_ids: list[str] = []

    # -- encrypted reasoning ---------------------------------------------------------------------------------------
    def _seal(self, item_id: str) -> str:
        payload = base64.urlsafe_b64encode(json.dumps({"rs": item_id, "n": secrets.token_hex(8)}).encode()).decode()
        mac = hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()
        return f"gAAAAA{payload}.{mac}"

    def _opens(self, token: Any, item_id: str) -> bool:
        if not isinstance(token, str) or not token.startswith("gAAAAA") or "." not in token:
            return False
        payload, _, mac = token[6:].rpartition(".")
        if not hmac.compare_digest(hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest(), mac):
            return False
        try:
            return bool(json.loads(base64.urlsafe_b64decode(payload))["rs"] == item_id)
        except (ValueError, KeyError, TypeError):
            return False

    # -- the rules -------------------------------------------------------------------------------------------------
    @staticmethod
    def _invalid(message: str, param: str | None = "input", code: str | None = None, status: int = 400) -> Status:
        return Status(
            status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
        )

    def _reasons(self, model: str) -> bool:
        if self.flavor == "vllm":
            return model.rsplit("/", 1)[-1].startswith("gpt-oss")
        return _reasons(model)

    def refuse(self, request: Recorded) -> Status | None:
        body = request.json or {}
        reasons = self._reasons(str(body.get("model", "")))
        items = body.get("input") or []
        if isinstance(items, str):
            return None
        if self.flavor == "vllm":
            for item in items:
                content = item.get("content") if item.get("type") == "reasoning" else None
                if content is not None or item.get("type") == "reasoning":
                    if not isinstance(content, list) or len(content) != 1 or "text" not in content[0]:
                        return Status(400, {"error": {"message": "AssertionError", "type": "BadRequestError"}})
            return None
        if "reasoning.encrypted_content" in (body.get("include") or ()) and not reasons:
            return self._invalid("Encrypted content is not supported with this model.", param="include")
        if not reasons and any(item.get("type") == "reasoning" for item in items):
            return self._invalid(
                "Reasoning input items can only be provided to a reasoning or computer use model. Remove reasoning "
                "items from your input and try again."
            )
        stored = body.get("store", True) is not False
        seen: set[str] = set()
        calls = {item.get("call_id") for item in items if item.get("type") == "function_call"}
        for index, item in enumerate(items):
            kind = item.get("type", "message")
            if kind == "reasoning":
                ident = item.get("id")
                if not ident:
                    return self._invalid(f"Invalid 'input[{index}].id': ''.", param=f"input[{index}].id")
                if "summary" not in item:
                    return self._invalid(
                        f"Missing required parameter: 'input[{index}].summary'.", param=f"input[{index}].summary"
                    )
                if ident in seen:
                    return self._invalid(f"Duplicate item found with id {ident}.")
                seen.add(ident)
                if "encrypted_content" not in item and not stored:
                    return self._invalid(NOT_STORED.format(id=ident), status=404)
                if "encrypted_content" in item and not self._opens(item["encrypted_content"], ident):
                    return self._invalid(
                        f"The encrypted content for item {ident} could not be verified. Reason: Encrypted content "
                        "could not be decrypted or parsed.",
                        param=None,
                        code="invalid_encrypted_content",
                    )
                following = items[index + 1] if index + 1 < len(items) else {}
                if not _assistant_item(following):
                    return self._invalid(
                        f"Item '{ident}' of type 'reasoning' was provided without its required following item."
                    )
            elif kind == "message" and item.get("id") and not stored:
                return self._invalid(NOT_STORED.format(id=item["id"]), status=404)
            elif kind == "function_call" and reasons:  # only a reasoning model needs its reasoning back
                issued = self.issued.get(item.get("call_id", ""))
                if issued is not None and not _preceded_by(items, index, issued[1]):
                    return self._invalid(
                        f"Item '{issued[0]}' of type 'function_call' was provided without its required 'reasoning' "
                        f"item: '{issued[1]}'."
                    )
            elif kind == "function_call_output" and item.get("call_id") not in calls:
                return self._invalid(f"No tool call found for function call output with call_id {item.get('call_id')}.")
        return None

    # -- rendering -------------------------------------------------------------------------------------------------
    def _output(self, answer: Answer, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The output items of an answer, in order; calls that follow a reasoning item are recorded as issued."""
        thought = answer if isinstance(answer, Thought) else Thought(**vars(answer))
        reasons = self._reasons(str(body.get("model", "")))
        vllm = self.flavor == "vllm"
        include = "reasoning.encrypted_content" in (body.get("include") or ())
        summaries = thought.summaries if (body.get("reasoning") or {}).get("summary") and not vllm else ()
        output: list[dict[str, Any]] = []
        last_reasoning: str | None = None

        def reasoning(texts: tuple[str, ...]) -> None:
            nonlocal last_reasoning
            ident = "rs_" + secrets.token_hex(24)
            item: dict[str, Any] = {
                "id": ident,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text} for text in texts],
            }
            if vllm:
                item["content"] = [{"type": "reasoning_text", "text": thought.thinking}]
            elif include:
                item["encrypted_content"] = self._seal(ident)
            self.reasoning_ids.append(ident)
            output.append(item)
            last_reasoning = ident

        if reasons:
            reasoning(summaries)
        output.extend(thought.extra)
        for text in (thought.text, *thought.paragraphs):
            if text:
                output.append(
                    {
                        "id": "msg_" + secrets.token_hex(24),
                        "type": "message",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
        for number, tool in enumerate(thought.tool_calls):
            if reasons and thought.per_call and number:
                reasoning(())
            ident, fc = call_id(tool), "fc_" + secrets.token_hex(24)
            if last_reasoning is not None:
                self.issued[ident] = (fc, last_reasoning)
            output.append(
                {
                    "id": fc,
                    "type": "function_call",
                    "status": "completed",
                    "call_id": ident,
                    "name": tool.name,
                    "arguments": tool.arguments,
                }
            )
        return output

    def _response(self, answer: Answer, body: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
        incomplete = answer.incomplete if isinstance(answer, Thought) else None
        reasoning_tokens = answer.reasoning_tokens if isinstance(answer, Thought) else 0
        return {
            "id": "resp_" + secrets.token_hex(24),
            "object": "response",
            "created_at": CREATED,
            "status": "incomplete" if incomplete else "completed",
            "error": None,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": self.snapshot or body.get("model", "o4-mini"),
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": (body.get("reasoning") or {}).get("effort"), "summary": None},
            "store": body.get("store", True),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": answer.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": answer.output_tokens,
                "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
                "total_tokens": answer.input_tokens + answer.output_tokens,
            },
            "user": None,
            "metadata": {},
        }

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = request.json or {}
        return self._response(answer, body, self._output(answer, body))

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        body = request.json or {}
        output = self._output(answer, body)
        final = self._response(answer, body, output)
        events: list[tuple[str | None, str]] = []

        def emit(kind: str, **data: Any) -> None:
            events.append((kind, json.dumps({"type": kind, "sequence_number": len(events), **data})))

        emit("response.created", response={**final, "status": "in_progress", "output": [], "usage": None})
        emit("response.in_progress", response={**final, "status": "in_progress", "output": [], "usage": None})
        for index, item in enumerate(output):
            kind, ident = item["type"], item["id"]
            if kind == "reasoning":
                emit("response.output_item.added", output_index=index, item={"id": ident, "type": kind, "summary": []})
                for number, part in enumerate(item.get("content") or ()):
                    where = {"item_id": ident, "output_index": index, "content_index": number}
                    for piece in chunks(part["text"], 9):
                        emit("response.reasoning_text.delta", **where, delta=piece)
                    emit("response.reasoning_text.done", **where, text=part["text"])
                for number, part in enumerate(item["summary"]):
                    where = {"item_id": ident, "output_index": index, "summary_index": number}
                    emit("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
                    for piece in chunks(part["text"], 9):
                        emit("response.reasoning_summary_text.delta", **where, delta=piece)
                    emit("response.reasoning_summary_text.done", **where, text=part["text"])
                    emit("response.reasoning_summary_part.done", **where, part=part)
            elif kind == "message":
                added = {**item, "status": "in_progress", "content": []}
                emit("response.output_item.added", output_index=index, item=added)
                where = {"item_id": ident, "output_index": index, "content_index": 0}
                text = item["content"][0]["text"]
                emit(
                    "response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}
                )
                for piece in chunks(text):
                    emit("response.output_text.delta", **where, delta=piece, logprobs=[])
                emit("response.output_text.done", **where, text=text, logprobs=[])
                emit("response.content_part.done", **where, part=item["content"][0])
            elif kind == "function_call":
                emit(
                    "response.output_item.added",
                    output_index=index,
                    item={**item, "status": "in_progress", "arguments": ""},
                )
                for piece in chunks(item["arguments"], 7):
                    emit("response.function_call_arguments.delta", item_id=ident, output_index=index, delta=piece)
                emit(
                    "response.function_call_arguments.done",
                    item_id=ident,
                    output_index=index,
                    arguments=item["arguments"],
                )
            else:
                emit("response.output_item.added", output_index=index, item=item)
            emit("response.output_item.done", output_index=index, item=item)
        terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        emit(terminal, response=final)
        if isinstance(answer, Thought):
            for position, event, data in sorted(answer.inserted, key=lambda raw: raw[0], reverse=True):
                events.insert(min(position, len(events)), (event, data))
        return events


def _reasons(model: str) -> bool:
    name = model.rsplit("/", 1)[-1]
    # gpt-5-chat-latest, gpt-5.1-chat-latest: the non-reasoning chat models (OpenAI's model pages).
    return name.startswith(REASONING_FAMILIES) and not re.match(r"gpt-5(\.\d+)*-chat", name)


def _assistant_item(item: dict[str, Any]) -> bool:
    kind = item.get("type", "message")
    return kind in ("reasoning", "function_call") or (kind == "message" and item.get("role") == "assistant")


def _preceded_by(items: list[dict[str, Any]], index: int, reasoning_id: str) -> bool:
    """Whether the reasoning item ``reasoning_id`` is among the assistant's items right before ``items[index]``."""
    for item in reversed(items[:index]):
        if not _assistant_item(item):
            return False
        if item.get("type") == "reasoning" and item.get("id") == reasoning_id:
            return True
    return False
