"""When a failed attempt is retried, and after how long: the policy under `Endpoint.events` (see `_transport` for the
whole list of what is retried).

- `RetrySignals`: what a failed answer's headers say (``Retry-After``/``retry-after-ms``, ``x-should-retry``,
  LiteLLM's ``x-litellm-attempted-retries``);
- `why_not_retry`: why an attempt is not retried, when the reason is worth telling;
- `backoff_delay`: exponential backoff with jitter, or the server's own delay;
- `wait_too_long`: the error for a ``Retry-After`` longer than the call may still wait.
"""

from __future__ import annotations

import math
import random
import re
import time
from email.utils import parsedate_to_datetime

import httpx

from ...errors import ModelError

__all__ = ["LONGEST_RETRY_AFTER", "RetrySignals", "backoff_delay", "retry_after", "wait_too_long", "why_not_retry"]

LONGEST_RETRY_AFTER = 86_400.0  # seconds: a server asking for a longer wait fails the call at once, whatever the limit
# A delay in seconds as a server writes one: digits, perhaps with a fraction (not "1e3", "inf", "-1" or "1_000", which
# Python's float() would read).
_DELAY = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_FOREVER = 1e30  # seconds: what digits past a float's range say


class RetrySignals:
    """What a failed answer's headers say about retrying it."""

    __slots__ = ("attempted_upstream", "retry_after", "should_retry")

    def __init__(self, retry_after: float | None, should_retry: bool | None, attempted_upstream: int) -> None:
        self.retry_after = retry_after
        self.should_retry = should_retry
        self.attempted_upstream = attempted_upstream

    @classmethod
    def read(cls, headers: httpx.Headers | None) -> RetrySignals:
        if headers is None:
            return cls(None, None, 0)
        flag = (headers.get("x-should-retry") or "").strip().lower()
        should = True if flag == "true" else False if flag == "false" else None
        try:
            attempted = int(headers.get("x-litellm-attempted-retries") or 0)
        except ValueError:
            attempted = 0
        return cls(retry_after(headers), should, attempted)


def why_not_retry(error: ModelError, signals: RetrySignals, shown: object, attempt: int, retries: int) -> str | None:
    """Why a failed attempt is not retried (None: it is), when the reason is worth telling the user (``shown``:
    whether text or thinking was shown already)."""
    if shown or attempt >= retries:
        return ""  # text already shown cannot be taken back; the retries allowed are used up
    if signals.should_retry is False:
        return "the server said not to retry (x-should-retry: false)" if error.retryable else ""
    if signals.attempted_upstream > 0 and error.retryable:
        return f"the proxy in front already retried {signals.attempted_upstream} times"
    if not (error.retryable or signals.should_retry):
        return ""
    return None


def backoff_delay(attempt: int, retry_after: float | None, base_delay: float, max_delay: float) -> float:
    """Seconds to wait before the next attempt: what the server asked for, else backoff with jitter."""
    if retry_after is not None:
        return max(0.0, retry_after)
    delay = min(base_delay * 2.0**attempt, max_delay)
    return delay * (1 - 0.25 * random.random())  # jitter spreads clients that failed together


def wait_too_long(error: ModelError, retry_after: float, left: float | None, time_limit: float | None) -> ModelError:
    """The error for a ``Retry-After`` longer than the call may still wait (``left``: what is left of the retry
    time limit ``time_limit``; None: no limit) or than `LONGEST_RETRY_AFTER`: fail now, say when to retry."""
    if retry_after > LONGEST_RETRY_AFTER:
        return ModelError(
            f"{error.message}. The server asked to wait more than a day before retrying; this call waits at most"
            f" {_duration(LONGEST_RETRY_AFTER)}: try again later",
            type=error.type,
            status=error.status,
            retryable=True,
        )
    at = time.strftime("%H:%M:%S", time.gmtime(time.time() + retry_after))
    limit = f"{time_limit:g} s" if time_limit is not None else "none"
    return ModelError(
        f"{error.message}. The server asked to wait {_duration(retry_after)} before retrying (until {at} UTC),"
        f" longer than this call may still wait ({_duration(max(0.0, left or 0.0))} of its retry time limit of"
        f" {limit}): try again after {at} UTC",
        type=error.type,
        status=error.status,
        retryable=True,
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``retry-after`` as seconds or an HTTP date), never
    negative; None when neither says a delay (absent, or a value that is no delay: ``inf``, ``-1``, ``1e20``, words,
    a date that cannot be read), so the usual backoff applies. A very long delay is returned as it is (at most
    1e30 s): `LONGEST_RETRY_AFTER` decides what is too long to wait for."""
    milliseconds = _seconds(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    return seconds if seconds is not None else _seconds_until(value)


def _seconds(value: str | None) -> float | None:
    """A delay written as digits (see `_DELAY`), else None."""
    if value is None or not _DELAY.fullmatch(value.strip()):
        return None
    return min(float(value), _FOREVER)


def _seconds_until(date: str) -> float | None:
    """Seconds from now until an HTTP date (0 for one past), else None."""
    try:
        moment = parsedate_to_datetime(date).timestamp()
    except (TypeError, ValueError, OverflowError, OSError, IndexError):
        return None
    return max(0.0, moment - time.time()) if math.isfinite(moment) else None
