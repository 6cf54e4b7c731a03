"""Retries that do not multiply: the server's own word (``x-should-retry``), a proxy that already retried
(LiteLLM's ``x-litellm-attempted-retries``), a retry time limit per call, and a ``Retry-After`` longer than that
limit, which fails at once saying when to try again. Attempts are counted by the fake server."""

from __future__ import annotations

import asyncio

import pytest

from threadline import llm
from threadline.errors import ModelError

from .conftest import Provider, make_openai
from .servers import Answer, FakeOpenAI, Status

QUESTION = "Tell me a story."


async def fail(model: object, **settings: object) -> ModelError:
    with pytest.raises(ModelError) as info:
        await llm.model(model).request(QUESTION).prompt_async(**settings)  # type: ignore[arg-type]
    return info.value


async def test_a_server_that_says_do_not_retry_is_not_retried(provider: Provider) -> None:
    provider.server.add(Status(500, headers=(("x-should-retry", "false"),)), Answer("never reached"))
    error = await fail(provider.model, max_retries=3)
    assert provider.server.count == 1
    assert error.status == 500 and not error.retryable
    assert "the server said not to retry" in str(error)


async def test_a_server_that_says_retry_is_retried(openai_server: FakeOpenAI, openai_model: object) -> None:
    body = {"error": {"message": "conflicting request, try again", "type": "invalid_request_error"}}
    openai_server.add(Status(400, body=body, headers=(("x-should-retry", "true"),)), Answer("Once upon a time."))
    assert await llm.model(openai_model).request(QUESTION).prompt_async() == "Once upon a time."  # type: ignore[arg-type]
    assert openai_server.count == 2


async def test_a_proxy_that_already_retried_is_not_retried_again(
    openai_server: FakeOpenAI, openai_model: object
) -> None:
    # LiteLLM in front of a failing server: it retried 2 times itself; retrying that again multiplies the calls.
    headers = (("x-litellm-attempted-retries", "2"), ("x-litellm-max-retries", "2"))
    openai_server.add(Status(500, headers=headers), Answer("never reached"))
    error = await fail(openai_model, max_retries=3)
    assert openai_server.count == 1
    assert "the proxy in front already retried 2 times" in str(error)
    assert error.retryable  # trying again later may still work


async def test_retries_stop_at_the_retry_time_limit(openai_server: FakeOpenAI) -> None:
    # Backoff 0.3-0.4 s, then 0.6-0.8 s: the first wait fits in 0.5 s, the second does not.
    model = make_openai(openai_server, retry_base_delay=0.4, retry_time_limit=0.5)
    openai_server.add(*(Status(503) for _ in range(6)))
    try:
        error = await fail(model, max_retries=5)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert openai_server.count == 2
    assert "gave up after 2 attempts; the retry time limit of 0.5 s was reached" in str(error)


@pytest.mark.parametrize("header", ["90", "http-date"])
async def test_a_retry_after_longer_than_the_limit_fails_at_once_saying_when(provider: Provider, header: str) -> None:
    import email.utils
    import time

    value = "90" if header == "90" else email.utils.formatdate(time.time() + 90, usegmt=True)
    provider.server.add(Status(429, headers=(("Retry-After", value),)), Answer("too late"))
    error = await fail(provider.model, max_retries=3)  # the limit is 60 s by default
    assert provider.server.count == 1  # not a quick retry the server asked us not to make
    assert error.type == "rate_limit" and error.retryable
    message = str(error)
    assert "asked to wait" in message and "try again after" in message and "UTC" in message
    assert "retry time limit of 60 s" in message


async def test_a_retry_after_within_the_limit_is_honoured_even_over_a_minute() -> None:
    from threadline.models.http._retries import backoff_delay

    # once capped at 60 s, and a quick backoff retry took its place
    assert backoff_delay(0, 90.0, base_delay=0.5, max_delay=20.0) == 90.0
    assert backoff_delay(0, None, base_delay=0.5, max_delay=20.0) <= 0.5


async def test_the_limit_counts_from_the_first_failure_and_a_wait_that_fits_is_made(
    openai_server: FakeOpenAI,
) -> None:
    model = make_openai(openai_server, retry_time_limit=5)
    openai_server.add(Status(429, headers=(("Retry-After", "1"),)), Answer("after a second"))
    try:
        assert await llm.model(model).request(QUESTION).prompt_async() == "after a second"
    finally:
        await model.aclose()
    first, second = openai_server.requests
    assert second.at - first.at >= 0.9


# The error bodies the APIs answer when the account's money, not its rate, ran out (OpenAI's and Anthropic's own
# texts): a retry bills nothing but cannot succeed either, and a caller that retries "rate limits" must not spin on it.
_QUOTA_BODIES = {
    "openai": {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "This request would exceed your account's monthly spend limit. Please try again later.",
        },
    },
}


async def test_a_used_up_quota_or_spend_limit_is_not_retried_and_says_so(provider: Provider) -> None:
    """Before, a 429 about the quota or the spend limit was retried 3 times and raised as a retryable rate limit."""
    body = _QUOTA_BODIES[provider.name]
    provider.server.add(Status(429, body=body), Answer("never reached"))
    error = await fail(provider.model, max_retries=3)
    assert provider.server.count == 1
    assert (error.type, error.status, error.retryable) == ("quota", 429, False)
    assert "quota or spend limit is used up" in str(error) and "Retrying cannot help" in str(error)
    assert body["error"]["message"].rstrip(".") in str(error)  # type: ignore[index]


async def test_an_ordinary_rate_limit_is_still_retried(provider: Provider) -> None:
    body = {
        "error": {"message": "Rate limit reached for requests per min. Please try again in 20ms.", "type": "requests"}
    }
    provider.server.add(Status(429, body=body), Answer("Once upon a time."))
    assert await llm.model(provider.model).request(QUESTION).prompt_async() == "Once upon a time."
    assert provider.server.count == 2


# Retry-After values no server should send, and dates far away: before, "1e20" and "inf" failed the call with
# "OverflowError: timestamp out of range", and a huge wait with no retry time limit slept for ever. Each now ends in
# the rate-limit behaviour the README promises: a retry after a wait within the limits, or the rate-limit error at
# once, saying that the wait asked for is too long.
_NO_DELAY = ["1e20", "inf", "-inf", "nan", "-5", "soon", "1_0", "0x10", "", "  ", "1e400", "١٢"]
_TOO_LONG = [
    "99999999999999999999",
    pytest.param("9" * 400, id="400 nines"),
    "Fri, 31 Dec 9999 23:59:59 GMT",
    "86401",
]
_PAST = ["Mon, 01 Jan 1900 00:00:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "0"]


@pytest.mark.parametrize("header", ["Retry-After", "retry-after-ms"])
@pytest.mark.parametrize("value", _NO_DELAY + _PAST)
async def test_a_retry_after_that_is_no_delay_is_retried_after_a_backoff(
    provider: Provider, header: str, value: str
) -> None:
    provider.server.add(Status(429, headers=((header, value),)), Answer("Once upon a time."))
    async with asyncio.timeout(20):  # only proves that it did not hang
        assert await llm.model(provider.model).request(QUESTION).prompt_async() == "Once upon a time."
    assert provider.server.count == 2


@pytest.mark.parametrize("limit", [60.0, None])
@pytest.mark.parametrize("value", _TOO_LONG)
async def test_a_retry_after_too_long_to_wait_fails_at_once_as_a_rate_limit(
    openai_server: FakeOpenAI, value: str, limit: float | None
) -> None:
    model = make_openai(openai_server, retry_time_limit=limit)
    openai_server.add(Status(429, headers=(("Retry-After", value),)), Answer("never reached"))
    try:
        async with asyncio.timeout(20):
            error = await fail(model, max_retries=3)
    finally:
        await model.aclose()
    assert openai_server.count == 1
    assert (error.type, error.status, error.retryable) == ("rate_limit", 429, True)
    assert "is rate limiting (HTTP 429)" in str(error)
    assert "The server asked to wait more than a day before retrying" in str(error)


@pytest.mark.parametrize("value", ["1e20", "inf", "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"])
async def test_an_odd_retry_after_on_a_server_error_ends_in_the_server_error(provider: Provider, value: str) -> None:
    provider.server.add(*(Status(503, headers=(("Retry-After", value),)) for _ in range(3)))
    async with asyncio.timeout(20):
        error = await fail(provider.model, max_retries=2)
    assert (error.type, error.status, error.retryable) == ("server", 503, True)
