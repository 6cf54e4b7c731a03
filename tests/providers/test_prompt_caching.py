"""Prompt caching (``.cache(prompt=True)``) over real HTTP against the fake Messages API, which refuses the
``cache_control`` markers the real one refuses (more than four, on an empty text or a thinking block, a ``1h`` one
after a ``5m`` one).

What a user notices: a tool loop whose every round sends the previous round's request again byte for byte, up to
where that request ended (so Anthropic's cache of it is hit; only a marker two requests old moves on), with
breakpoints on the system prompt, the tools, the previous request's end and the newest turn — never more than four —
and a request without the setting exactly as before (no marker, ``system`` a string)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import Conversation, ConversationConfig, assistant, llm, request_hash, user
from threadline.context import ContextSettings
from threadline.errors import UserError
from threadline.models.anthropic import AnthropicModel

from .conftest import make_anthropic
from .servers import Answer, FakeAnthropic, ToolUse

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
EPHEMERAL = {"type": "ephemeral"}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"14:05 in {city}"


@pytest.fixture
async def claude(anthropic_server: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = make_anthropic(anthropic_server)
    yield model
    await model.aclose()


def script_loop(server: FakeAnthropic) -> None:
    """Two rounds of tool calls (the second with two parallel calls), then the answer."""
    server.add(
        Answer("Checking.", tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id="toolu_01A"),)),
        Answer(
            tool_calls=(
                ToolUse("get_time", '{"city": "Paris"}', id="toolu_01B"),
                ToolUse("get_weather", '{"city": "Lyon"}', id="toolu_01C"),
            )
        ),
        Answer("Sunny, 14:05."),
    )


MARKER = b',"cache_control":{"type":"ephemeral"}'


def split(raw: bytes) -> tuple[bytes, bytes]:
    """A request body's bytes up to the end of its last message, and from its ``system`` on (msgspec writes the
    keys in the order the adapter sets them: model, max_tokens, messages, system, tools, stream)."""
    end = raw.index(b'],"system":')
    return raw[:end], raw[end + 1 :]


def unmarked(raw: bytes) -> bytes:
    """A body's bytes without its markers: what the cache holds (a marker says where an entry ends, and the one two
    requests back moves on to the newest turn)."""
    return raw.replace(MARKER, b"")


def markers(body: dict[str, Any]) -> list[str]:
    """Where a body carries ``cache_control``: ``tools.N``, ``system.N``, ``messages.N.M``."""
    found = [f"tools.{i}" for i, tool in enumerate(body.get("tools") or []) if "cache_control" in tool]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system.{i}" for i, block in enumerate(system) if "cache_control" in block]
    for n, message in enumerate(body["messages"]):
        found += [f"messages.{n}.{m}" for m, block in enumerate(message["content"]) if "cache_control" in block]
    return found


@pytest.mark.parametrize("stream", [True, False])
async def test_each_round_of_a_tool_loop_sends_the_previous_request_again_byte_for_byte(
    anthropic_server: FakeAnthropic, claude: AnthropicModel, stream: bool
) -> None:
    script_loop(anthropic_server)
    builder = llm.model(claude).cache(prompt=True).agent("Answer briefly.").tools(get_weather, get_time)
    text = (
        await builder.document("Paris is in France.").request("Weather and time in Paris?").prompt_async(stream=stream)
    )
    assert text == "Sunny, 14:05."
    raws = [request.body for request in anthropic_server.requests]
    assert len(raws) == 3
    for before, after in itertools.pairwise(raws):
        head, tail = split(before)
        assert split(after)[1] == tail  # system and tools, markers included; the stream flag
        assert unmarked(after).startswith(unmarked(head))  # model, max_tokens and every message sent before
        assert len(json.loads(after)["messages"]) == len(json.loads(before)["messages"]) + 2
    assert raws[1].startswith(split(raws[0])[0])  # the second round: markers included, the first round's end kept
    assert raws[0].count(MARKER) == 3 and raws[1].count(MARKER) == raws[2].count(MARKER) == 4


async def test_breakpoints_mark_system_tools_the_previous_request_and_the_newest_turn(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    script_loop(anthropic_server)
    builder = llm.model(claude).cache(prompt=True).agent("Answer briefly.").tools(get_weather, get_time)
    await builder.request("Weather and time in Paris?").prompt_async()
    first, second, third = anthropic_server.bodies
    assert markers(first) == ["tools.1", "system.0", "messages.0.0"]
    assert first["system"] == [{"type": "text", "text": first["system"][0]["text"], "cache_control": EPHEMERAL}]
    assert first["system"][0]["text"].startswith("You are a helpful assistant.")
    # Round 2: the request's end (the user's message) stays marked; the newest turn is the tool result.
    assert markers(second) == ["tools.1", "system.0", "messages.0.0", "messages.2.0"]
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    # Round 3: the mark moves on with the loop; the last block of a turn of two results carries it.
    assert markers(third) == ["tools.1", "system.0", "messages.2.0", "messages.4.1"]
    assert [block["tool_use_id"] for block in third["messages"][4]["content"]] == ["toolu_01B", "toolu_01C"]
    for body in (first, second, third):
        assert all(marked["cache_control"] == EPHEMERAL for marked in _marked_blocks(body))


def _marked_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [*(body.get("tools") or []), *(body["system"] if isinstance(body.get("system"), list) else [])]
    blocks += [block for message in body["messages"] for block in message["content"]]
    return [block for block in blocks if "cache_control" in block]


async def test_the_next_turn_marks_where_the_last_request_of_the_turn_before_ended(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    script_loop(anthropic_server)
    anthropic_server.reply("You're welcome.")
    conv = llm.model(claude).cache(prompt=True).tools(get_weather, get_time).request("Paris?").prompt_conversation()
    async for _ in conv.run():
        pass
    await conv.continuation.request("Thanks!").prompt_async()
    last_of_turn, next_turn = anthropic_server.bodies[2], anthropic_server.bodies[3]
    assert markers(last_of_turn) == ["tools.1", "system.0", "messages.2.0", "messages.4.1"]
    # Turn 2 sends turn 1's answer and the new message after it: turn 1's last request's end stays marked.
    assert markers(next_turn) == ["tools.1", "system.0", "messages.4.1", "messages.6.0"]
    assert next_turn["messages"][5]["content"] == [{"type": "text", "text": "Sunny, 14:05."}]
    head, _ = split(anthropic_server.requests[2].body)
    assert unmarked(anthropic_server.requests[3].body).startswith(unmarked(head))


async def test_without_the_setting_nothing_is_marked_and_system_stays_a_string(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    script_loop(anthropic_server)
    anthropic_server.reply("Sunny.")
    await llm.model(claude).tools(get_weather, get_time).request("Weather and time in Paris?").prompt_async()
    await llm.model(claude).cache(prompt=True).cache(prompt=False).request("Weather?").prompt_async()
    assert anthropic_server.count == 4
    for request in anthropic_server.requests:
        assert b"cache_control" not in request.body
        assert isinstance(request.json["system"], str)


async def test_a_lifetime_goes_on_every_marker(anthropic_server: FakeAnthropic, claude: AnthropicModel) -> None:
    script_loop(anthropic_server)
    await llm.model(claude).cache(ttl="1h").tools(get_weather, get_time).request("Paris?").prompt_async()
    for body in anthropic_server.bodies:
        blocks = _marked_blocks(body)
        assert blocks and all(block["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for block in blocks)


async def test_the_setting_works_as_a_call_setting_too(anthropic_server: FakeAnthropic, claude: AnthropicModel) -> None:
    anthropic_server.reply("Sunny.")
    await llm.model(claude).request("Weather?").prompt_async(prompt_cache="5m")
    assert markers(anthropic_server.bodies[0]) == ["system.0", "messages.0.0"]
    assert _marked_blocks(anthropic_server.bodies[0])[0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}


async def test_a_server_tool_the_caller_marked_counts_against_the_four(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    script_loop(anthropic_server)
    marked_search = {**WEB_SEARCH, "cache_control": EPHEMERAL}
    given = dict(marked_search)
    builder = llm.model(claude).cache(prompt=True).tools(get_weather, get_time).request("Paris?")
    assert await builder.prompt_async(anthropic_tools=[marked_search]) == "Sunny, 14:05."  # none refused
    assert marked_search == given  # the caller's tool is not changed
    second = anthropic_server.bodies[1]
    assert markers(second) == ["tools.2", "system.0", "messages.0.0", "messages.2.0"]
    assert [tool["name"] for tool in second["tools"]] == ["get_weather", "get_time", "web_search"]


def test_caching_does_not_change_a_requests_hash() -> None:
    """``generate_text(cache=store)`` finds the answer of the same request whether it was cached by the provider."""
    plain = request_hash(model="anthropic:claude-haiku-4-5", prompt="Weather?")
    assert request_hash(model="anthropic:claude-haiku-4-5", prompt="Weather?", prompt_cache="1h") == plain


async def test_four_marked_server_tools_leave_no_room_and_the_request_is_still_taken(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    anthropic_server.reply("Sunny.")
    marked = [{**WEB_SEARCH, "name": f"search_{n}", "cache_control": EPHEMERAL} for n in range(4)]
    builder = llm.model(claude).cache(prompt=True).tools(get_weather).request("Weather?")
    assert await builder.prompt_async(anthropic_tools=marked) == "Sunny."  # a fifth marker would be refused
    body = anthropic_server.bodies[0]
    assert markers(body) == ["tools.1", "tools.2", "tools.3", "tools.4"]
    assert isinstance(body["system"], str)


async def test_bad_settings_are_refused_before_anything_is_sent(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    with pytest.raises(UserError, match=r"cache\(ttl=\) must be one of '5m', '1h'"):
        llm.cache(ttl="2h")
    with pytest.raises(UserError, match="needs prompt=True"):
        llm.cache(prompt=False, ttl="1h")
    with pytest.raises(UserError, match="must be True or False"):
        llm.cache(prompt="yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"prompt_cache must be True, False or a lifetime \('5m', '1h'\)"):
        await llm.model(claude).request("Weather?").prompt_async(prompt_cache="forever")
    conv = Conversation()
    with pytest.raises(ValueError, match="prompt_cache must be"):
        conv.apply_config_deltas({"prompt_cache": 5})
    assert conv.config.prompt_cache is None
    assert anthropic_server.count == 0


async def test_with_the_window_trimmed_system_and_tools_stay_the_same_and_nothing_is_reordered(
    anthropic_server: FakeAnthropic, claude: AnthropicModel
) -> None:
    """A window that drops its oldest messages as the loop grows cannot keep the messages' prefix; the system
    prompt and the tools (cached with it) stay the same bytes, and what is kept is the log's order."""
    history = [message for n in range(4) for message in (user(f"question {n}"), assistant(f"answer {n}"))]
    conv = Conversation(history, ConversationConfig(context=ContextSettings(max_messages=8)))
    script_loop(anthropic_server)
    builder = conv.continuation.model(claude).cache(prompt=True).tools(get_weather, get_time)
    assert await builder.request("Weather and time in Paris?").prompt_async() == "Sunny, 14:05."
    raws = [request.body for request in anthropic_server.requests]
    tails = {split(raw)[1] for raw in raws}
    assert len(tails) == 1
    texts = [_texts(json.loads(raw)) for raw in raws]
    assert texts[1][0] != texts[0][0]  # the window moved: its oldest message went
    for before, after in itertools.pairwise(texts):
        kept = [text for text in before if text in after]
        assert kept == before[before.index(kept[0]) :] and after[: len(kept)] == kept  # cut at the old end only
    for body in anthropic_server.bodies:
        assert len(markers(body)) <= 4


def _texts(body: dict[str, Any]) -> list[str]:
    """The messages of a body as one text per block (text, tool call or result), in order."""
    out: list[str] = []
    for message in body["messages"]:
        for block in message["content"]:
            out.append(block.get("text") or block.get("tool_use_id") or block.get("id") or "")
    return [text for text in out if text != "(conversation start)"]  # put before a window opening on an answer
