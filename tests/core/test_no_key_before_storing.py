"""A model that cannot be called at all (no API key for the provider's own endpoint) is refused before the store keeps
anything: before, the library stored the user's message as a conversation no turn answered, with no failure saying
why (the command line already checked first)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from threadline import Conversation, MessageList, UserError, assistant, generate_text, llm, user
from threadline.store import open_store
from threadline.store.base import Store

NO_KEY = "no API key for openai:gpt-4o-mini: set OPENAI_API_KEY"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADLINE_OPENAI_SERVER"):
        monkeypatch.delenv(name, raising=False)
    with open_store("memory://") as opened:
        yield opened


def test_prompt_without_a_key_stores_nothing(store: Store) -> None:
    with pytest.raises(UserError, match=NO_KEY):
        llm.model("openai:gpt-4o-mini").store(store).request("Weather in Paris?").prompt()
    assert store.list_conversations() == []


def test_prompt_conversation_without_a_key_stores_nothing(store: Store) -> None:
    with pytest.raises(UserError, match=NO_KEY):
        llm.model("openai:gpt-4o-mini").store(store).request("Weather in Paris?").prompt_conversation()
    assert store.list_conversations() == []


def test_stream_without_a_key_stores_nothing(store: Store) -> None:
    with pytest.raises(UserError, match=NO_KEY):
        list(llm.model("openai:gpt-4o-mini").store(store).request("Tell me a story").stream())
    assert store.list_conversations() == []


def test_continuing_a_stored_conversation_without_a_key_appends_nothing(store: Store) -> None:
    conversation = Conversation(messages=MessageList([user("Hi"), assistant("Hello!")]), store=store)
    with pytest.raises(UserError, match=NO_KEY):
        conversation.continuation.model("openai:gpt-4o-mini").request("And now?").prompt()
    assert [message.content for message in store.load(conversation.id)] == ["Hi", "Hello!"]
    assert len(conversation.messages) == 2


async def test_generate_text_without_a_key_logs_no_run(store: Store) -> None:
    with pytest.raises(UserError, match=NO_KEY):
        await generate_text(model="openai:gpt-4o-mini", prompt="Weather in Paris?", store=store)
    assert store.list_conversations() == []
