"""What model calls used and cost, where a user of the command line looks: ``logs list`` (per conversation),
``logs show`` (per call, per turn and in all) and ``prompt --usage`` (per turn), on SQLite and PostgreSQL."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.cli._run import run_cli as run_command
from tests.providers.servers import Answer, FakeOpenAI, ToolUse
from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, ToolCall, Usage, llm
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel

# gpt-4o-mini: $0.15 per million input tokens, $0.075 per million cached ones, $0.60 per million output tokens.
CACHED = Usage(input_tokens=2000, output_tokens=100, cache_read_tokens=1500)  # $0.0002475 a call


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def priced_conversation(store: Store) -> str:
    """Two turns: a tool call and an answer, then one answer; every call reports `CACHED`."""
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})]), "Sunny."],
        usage=CACHED,
        name="openai:gpt-4o-mini",
    )
    conversation = llm.model(model).tools(get_weather).store(store).request("Weather in Paris?").prompt_conversation()
    conversation.run_sync()
    model.add("Yes.")
    conversation.continuation.request("Really?").prompt()
    return conversation.id


def unpriced_conversation(store: Store) -> str:
    model = ScriptedModel(["Hi."], usage=Usage(input_tokens=10, output_tokens=2), name="my-own-model")
    conversation = llm.model(model).store(store).request("Hi").prompt_conversation()
    conversation.run_sync()
    return conversation.id


def test_list_shows_tokens_cached_tokens_and_cost_per_conversation(store_url: str, store: Store) -> None:
    priced = priced_conversation(store)
    unknown = unpriced_conversation(store)
    done = run_cli("logs", "list", "--store", store_url)
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in done.stdout.splitlines()
        if line.count("│") >= 6
    }
    for header in ("tokens", "cached", "cost"):
        assert header in done.stdout
    assert rows[priced][-3:] == ["6,300", "4,500", "$0.000743"]  # three calls
    assert rows[unknown][-3:] == ["12", "0", "unknown"]  # a model without a price is never $0

    listed = {row["id"]: row for row in json.loads(run_cli("logs", "list", "--json", "--store", store_url).stdout)}
    assert {key: listed[priced][key] for key in ("tokens", "cached_tokens", "cost_usd", "cost_unknown")} == {
        "tokens": 6300,
        "cached_tokens": 4500,
        "cost_usd": "0.0007425",
        "cost_unknown": [],
    }
    assert listed[unknown]["cost_usd"] is None and listed[unknown]["cost_unknown"] == ["model my-own-model"]


@pytest.mark.parametrize("whole", [False, True])
def test_show_gives_each_calls_usage_each_turns_and_the_total(store_url: str, store: Store, whole: bool) -> None:
    priced = priced_conversation(store)
    done = run_cli("logs", "show", priced, *(["--all"] if whole else []), "--store", store_url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("assistant · openai:gpt-4o-mini · 2,100 tokens (1,500 cached) · $0.000248") == 3
    assert "turn: 2 calls · 4,200 tokens (3,000 cached) · $0.000495" in out  # the first turn; the second has one call
    assert out.rstrip().endswith("total: 3 calls · 6,300 tokens (4,500 cached) · $0.000743")
    assert out.index("turn: 2 calls") < out.index("Really?")


def test_show_names_what_has_no_price(store_url: str, store: Store) -> None:
    unknown = unpriced_conversation(store)
    done = run_cli("logs", "show", unknown, "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert "total: 1 call · 12 tokens · unknown (unknown: model my-own-model)" in done.stdout


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


def test_prompt_usage_prints_what_the_turn_used_and_cost(store_url: str, server: FakeOpenAI) -> None:
    server.add(
        Answer(
            tool_calls=(ToolUse("get_weather", '{"city": "Oslo"}', id="call_1"),), input_tokens=2006, cached_tokens=1920
        ),
        Answer("Cold.", input_tokens=2100, output_tokens=300, cached_tokens=1920),
    )
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-usage-0123456789"}
    tool = f"{__file__}:get_weather"
    done = run_command(
        "prompt", "-m", "openai:gpt-4o-mini", "-T", tool, "--usage", "Weather in Oslo?", store_url=store_url, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Cold."
    # 2006 + 7 and 2100 + 300 tokens; 1920 cached each time:
    # (86 + 180) x $0.15 + 3840 x $0.075 + 307 x $0.60 per million = $0.0005121
    assert "usage: 2 calls · 4,413 tokens (3,840 cached) · $0.000512" in done.stderr
    with open_store(store_url) as opened:
        [info] = opened.list_conversations()
        log = opened.load(info.id)
    assert [m.usage.cache_read_tokens for m in log if isinstance(m, AssistantMessage) and m.usage] == [1920, 1920]


def test_prompt_without_usage_says_nothing_of_it(store_url: str, server: FakeOpenAI) -> None:
    server.add(Answer("Hi."))
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-usage-0123456789"}
    done = run_command("prompt", "-m", "openai:gpt-4o-mini", "Hi", store_url=store_url, env=env)
    assert done.returncode == 0, done.stderr
    assert "usage:" not in done.stderr
