"""`get_model` shares one instance per name and configuration: after ``OPENAI_BASE_URL`` (or the key) changes in a
running process, the same name reaches the new server with the new key, the replaced instance's connections are
closed, and the cache never holds a key in the clear. Two fake servers over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from threadline import get_model, llm
from threadline.models.openai import OpenAIModel

from .servers import FakeOpenAI

NAME = "openai:gpt-4o-mini-cachetest"  # a name no other test resolves


@pytest.fixture
def two_servers() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as first, FakeOpenAI() as second:
        yield first, second  # type: ignore[misc]


async def wait_until_closed(server: FakeOpenAI) -> bool:
    for _ in range(200):  # bounded: at most ~2 s
        if not server._connections:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_a_changed_base_url_reaches_the_new_server_and_closes_the_old_pool(
    two_servers: tuple[FakeOpenAI, FakeOpenAI], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = two_servers
    first.reply("from the first")
    second.reply("from the second")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cache-test-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", first.base_url)
    old = get_model(NAME)
    assert await llm.model(NAME).request("x").prompt_async() == "from the first"
    assert get_model(NAME) is old  # unchanged configuration: the same instance, pool and all
    assert len(first._connections) == 1  # kept alive for the next call

    monkeypatch.setenv("OPENAI_BASE_URL", second.base_url)
    new = get_model(NAME)
    try:
        assert new is not old
        assert isinstance(new, OpenAIModel) and new.base_url == second.base_url
        assert await llm.model(NAME).request("x").prompt_async() == "from the second"
        assert (first.count, second.count) == (1, 1)
        assert await wait_until_closed(first)  # the replaced instance's connection was closed
    finally:
        await new.aclose()


async def test_a_changed_key_is_used(
    two_servers: tuple[FakeOpenAI, FakeOpenAI], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = two_servers
    server.reply("one", "two")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first-key-0123456789")
    await llm.model(NAME).request("x").prompt_async()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-second-key-0123456789")
    model = get_model(NAME)
    try:
        await llm.model(NAME).request("x").prompt_async()
    finally:
        await model.aclose()
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer sk-first-key-0123456789",
        "Bearer sk-second-key-0123456789",
    ]


def test_the_cache_holds_no_key_in_the_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline import models

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-in-the-cache-0123")
    get_model(NAME)
    assert "sk-never-in-the-cache-0123" not in repr(models._cache)
