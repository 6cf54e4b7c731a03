"""What a provider's own answer puts on a ``chat`` span, over real HTTP against the fake servers: the model id the
provider says answered (``gen_ai.response.model``: OpenAI answers a ``gpt-4o-mini`` request as a dated snapshot),
while the log keeps the name the request used; and recorded content that merely looks like a key's prefix
(``api_version``) stays as written, while a key-shaped token is masked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from threadline import AssistantMessage, llm
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.models.openai_responses import OpenAIResponsesModel
from threadline.testing import ScriptedModel

from ..providers.servers import Answer, FakeAnthropic, FakeOpenAI, FakeResponses
from .conftest import Spans

KEY = "sk-proj-ANSWERKEY0123456789abcdefXYZ"
SNAPSHOTS = {
    "openai": ("gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    "anthropic": ("claude-haiku-4-5", "claude-haiku-4-5-20251001"),
    "openai-responses": ("o4-mini", "o4-mini-2025-04-16"),
}


def serve(kind: str) -> tuple[Any, Any]:
    """A fake server of ``kind`` answering as its dated snapshot, and a model on it."""
    requested, snapshot = SNAPSHOTS[kind]
    if kind == "openai":
        server: Any = FakeOpenAI()
        server.__enter__()
        model: Any = OpenAIModel(requested, base_url=server.base_url, api_key=KEY)
    elif kind == "anthropic":
        server = FakeAnthropic()
        server.__enter__()
        model = AnthropicModel(requested, base_url=server.base_url, api_key=KEY)
    else:
        server = FakeResponses()
        server.__enter__()
        model = OpenAIResponsesModel(requested, base_url=server.base_url, api_key=KEY)
    server.snapshot = snapshot
    return server, model


@pytest.fixture(params=sorted(SNAPSHOTS))
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Any]]:
    server, model = serve(request.param)
    try:
        yield request.param, server, model
    finally:
        server.__exit__(None, None, None)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_chat_span_names_the_model_that_answered_and_the_log_the_one_asked_for(
    spans: Spans, provider: tuple[str, Any, Any], stream: bool
) -> None:
    kind, server, model = provider
    requested, snapshot = SNAPSHOTS[kind]
    server.add(Answer("Paris."))
    try:
        conversation = llm.model(model).request("Capital of France?").prompt_conversation(stream=stream)
        [answer] = [message async for message in conversation]
    finally:
        await model.aclose()
    assert isinstance(answer, AssistantMessage) and answer.content == "Paris."
    assert answer.model == model.name  # the log keeps the name the request used
    chat = spans.one(f"chat {requested}")
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.request.model"] == requested
    assert attributes["gen_ai.response.model"] == snapshot


def test_words_that_begin_like_a_key_are_recorded_as_written_and_a_key_is_masked(spans: Spans) -> None:
    spans.instrument(include_content=True)
    question = "How do I pass api_version to the api-gateway-service?"
    answer = "Set api_version, call key_value_store.get, and never paste sk-live-0123456789abcdefghij."
    assert llm.model(ScriptedModel([answer])).request(question).prompt() == answer
    text = spans.text()
    for word in ("api_version", "api-gateway-service", "key_value_store.get"):
        assert word in text
    assert "sk-live-0123456789abcdefghij" not in text
