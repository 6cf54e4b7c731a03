"""Whatever a server puts in ``reasoning_details`` (any JSON, in answers and in stream fragments), the answer is
read or refused with a clear `ModelError`, what is kept validates and survives the log's JSON form, and what is sent
back is exactly the entries that were kept (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline import AssistantMessage, MessageList, ModelError, user
from threadline.models import ModelRequest
from threadline.models.openai._chat_request import build_request
from threadline.models.openai._chat_response import parse_completion
from threadline.models.openai._chat_stream import ChatStream
from threadline.models.profiles import openai_profile

PROFILE = openai_profile("anthropic/claude-sonnet-4.5").with_server("openrouter")

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
types = st.sampled_from(["reasoning.text", "reasoning.summary", "reasoning.encrypted", "reasoning.other"])
entries = st.fixed_dictionaries(
    {"type": types},
    optional={
        "text": scalars,
        "summary": scalars,
        "data": scalars,
        "signature": scalars,
        "id": scalars,
        "format": scalars,
        "index": st.integers(0, 3) | scalars,
        "extra": json_values,
    },
)
details = st.lists(entries | json_values, max_size=4) | json_values


def context() -> Any:
    return build_request(ModelRequest(messages=[user("hi")]), "anthropic/claude-sonnet-4.5", PROFILE, stream=True)[1]


def check(response: Any) -> None:
    message = AssistantMessage(content=response.content, tool_calls=response.tool_calls, reasoning=response.reasoning)
    log = MessageList([user("hi"), message, user("more")])
    log.validate()
    assert MessageList.from_json(log.to_json()) == log
    body, _ = build_request(ModelRequest(messages=list(log)), "anthropic/claude-sonnet-4.5", PROFILE, stream=False)
    sent = body["messages"][1].get("reasoning_details", [])
    assert len(sent) == sum(piece.provider == "openrouter" for piece in response.reasoning)
    for entry in sent:
        assert isinstance(entry, dict) and isinstance(entry["type"], str)
    json.dumps(body)  # what is sent is JSON


@settings(max_examples=300, deadline=None)
@given(details)
def test_any_reasoning_details_in_an_answer_are_kept_or_left_out(value: Any) -> None:
    message = {"role": "assistant", "content": "Hi.", "reasoning": "plain", "reasoning_details": value}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    try:
        response = parse_completion(json.dumps(body), context())
    except ModelError:
        return
    check(response)


@settings(max_examples=300, deadline=None)
@given(st.lists(details, min_size=1, max_size=5))
def test_any_reasoning_details_fragments_in_a_stream_are_joined_or_left_out(fragments: list[Any]) -> None:
    stream = ChatStream(context())
    try:
        for value in fragments:
            delta = {"reasoning": "x", "reasoning_details": value}
            stream.feed("", json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}))
        stream.feed("", json.dumps({"choices": [{"index": 0, "delta": {"content": "Hi."}, "finish_reason": "stop"}]}))
        stream.feed("", "[DONE]")
        response = stream.finish()
    except ModelError:
        return
    check(response)
