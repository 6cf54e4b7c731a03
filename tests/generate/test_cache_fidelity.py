"""A cache hit reports what the original run did: every usage field, and the messages each step was sent."""

from __future__ import annotations

from decimal import Decimal

import msgspec

from threadline import AssistantMessage, Cost, Usage, generate_text, user
from threadline.generate.result import cache_key
from threadline.messages import LLMError
from threadline.pricing.prices import prices_version
from threadline.store import Store
from threadline.testing import ScriptedModel


async def test_a_hit_keeps_every_usage_field(store: Store) -> None:
    usage = Usage(input_tokens=10, output_tokens=50, reasoning_tokens=40, cache_read_tokens=4)
    model = ScriptedModel(["Four."], usage=usage, name="openai:gpt-4o-mini")

    first = await generate_text(model=model, prompt="2+2?", cache=store)
    hit = await generate_text(model=model, prompt="2+2?", cache=store)

    assert hit.cached
    # gpt-4o-mini: 6 input tokens at $0.15, 4 cached at $0.075 and 50 output at $0.60 (per million)
    cost = Cost(usd=Decimal("0.0000312"), prices=prices_version())
    assert first.usage == msgspec.structs.replace(usage, cost=cost)
    assert hit.usage == first.usage
    assert hit.cost == first.cost == cost


async def test_an_entry_written_with_input_and_output_tokens_only_still_reads(store: Store) -> None:
    model = ScriptedModel(["Four."], usage=Usage(input_tokens=10, output_tokens=50, reasoning_tokens=40))
    first = await generate_text(model=model, prompt="2+2?", cache=store)
    key = cache_key(first.request_hash)
    entry = store.cache_get(key)
    entry["usage"] = {"input_tokens": 10, "output_tokens": 50}  # as entries were written before
    store.cache_put(key, entry)

    hit = await generate_text(model=model, prompt="2+2?", cache=store)

    assert hit.cached and hit.text == "Four."
    assert hit.usage == Usage(input_tokens=10, output_tokens=50)


async def test_a_hit_shows_the_messages_a_step_was_sent_when_the_input_has_one_left_out(store: Store) -> None:
    # An empty assistant message is in the log but is not sent.
    messages = [user("a"), AssistantMessage(content=None), user("b")]
    model = ScriptedModel(["ans"])

    first = await generate_text(model=model, messages=messages, cache=store)
    hit = await generate_text(model=model, messages=messages, cache=store)

    def shown(step_messages: list[object]) -> list[tuple[str, object]]:
        return [(type(m).__name__, getattr(m, "content", None)) for m in step_messages]

    sent = shown(list(model.requests[0].messages))
    assert sent == [("UserMessage", "a"), ("UserMessage", "b")]
    assert shown(first.steps[0].messages) == sent
    assert hit.cached
    assert shown(hit.steps[0].messages) == sent


async def test_a_hit_shows_a_failed_call_in_the_input_as_it_was_sent(store: Store) -> None:
    # Continuing from a failure: the failed call is sent as its partial text ending in its error block.
    failed = AssistantMessage(content="Part", error=LLMError(type="rate_limit", message="slow down"))
    messages = [user("a"), failed, user("go on")]
    model = ScriptedModel(["ans"])

    first = await generate_text(model=model, messages=messages, cache=store)
    hit = await generate_text(model=model, messages=messages, cache=store)

    sent = [m.content for m in model.requests[0].messages]
    assert "[LLM_ERROR type=rate_limit" in sent[1]
    assert [m.content for m in first.steps[0].messages] == sent
    assert hit.cached
    assert [m.content for m in hit.steps[0].messages] == sent
