"""The thin HTTP transport under the OpenAI and Anthropic adapters, and the one place their errors are mapped.

An `Endpoint` is one URL with its headers. It keeps one httpx connection pool (HTTP keep-alive) per event loop,
because connections belong to the loop that opened them: a process that calls the sync API (one private loop per
thread) and async code (the caller's loop) shares nothing that could break.

The pool is httpx's own transport (``httpx.AsyncHTTPTransport``), called directly rather than through an
``httpx.AsyncClient``: the client layer (cookie jar, redirects, auth flows, URL merging, event hooks) does nothing
an API call needs, and measured on loopback it costs about a fifth of a request — more than the whole budget the
adapters have over hand-written httpx (docs/contributing.md#performance-targets). Proxies still come from the
environment (``HTTPS_PROXY``, ``NO_PROXY``…) and certificates from httpx's defaults (``SSL_CERT_FILE`` included)
unless ``verify=`` says otherwise (a corporate CA's bundle, see `_tls`). A caller's own ``transport=`` (any
``httpx.AsyncBaseTransport``: a proxy's, an in-process test double) replaces the pools: every request goes through
it, on every loop, and it is the caller's to close.

`Endpoint.events` sends one request and yields what the model produced: `TextDelta` events while a stream comes in,
then one `ModelResponse`. Failures become `ModelError` here and nowhere else:

- 401/403: at once, with a hint about the key (never the key);
- 429 (honouring ``Retry-After`` / ``retry-after-ms``; not when it says the quota or spend limit is used up), 408,
  409, 5xx, refused or broken connections, timeouts, a stream that ends early, and an empty answer (not one that
  stopped at its token limit or on a refusal): retried with exponential backoff and jitter, at most
  ``max_retries`` times, but only while no text (nor thinking the caller shows) has been shown, since what was
  shown cannot be taken back;
- ``timeout`` bounds each attempt as a whole, from sending the request to the last byte of the answer (streamed or
  not), as well as each wait for a connection or for the next bytes: a server that trickles bytes too slowly to
  finish fails the attempt as a timeout like one that stalls (retried as timeouts are; text already shown stays
  the failure's partial output). The waits between attempts are not counted: ``retry_time_limit`` bounds those;
- retries stop early where they would only multiply: when the server says so (``x-should-retry: false``, as
  OpenAI's API sends), when a proxy in front already retried (LiteLLM's ``x-litellm-attempted-retries``), and
  when the retry time limit of the call (``retry_time_limit``, counted from its first failure) would be passed.
  A ``Retry-After`` longer than what is left of that limit, or than a day (`LONGEST_RETRY_AFTER`, also with no
  limit), fails at once, saying when to try again; one that says no delay (``inf``, ``-1``, ``1e20``, words, a
  date that cannot be read) is ignored for the usual backoff, and a date already past means no wait;
- once text was shown, a broken stream raises `ModelError` whose ``partial`` is that text (the turn engine logs
  it as the failed turn's content);
- anything else (400, 404, 413…): at once, with the server's own explanation.

What the headers of a failure say about retrying it, the backoff and the ``Retry-After`` rules are in `_retries`.

Every `ModelError` leaves `Endpoint.events` through one place, `Endpoint._redact`, which masks the configured
secrets in every form they could take in a text (raw, stripped, JSON- or Python-escaped, URL-encoded, base64) and
anything shaped like an API key, in the message and in the error type alike: error bodies of HTTP 200 answers
and stream ``error`` events are the server's text, and a key there must reach neither the log nor the screen.
What the model answers (text and thinking as they stream, tool calls, the whole response) passes through an
`AnswerMask` for the same forms of the configured secrets, and for nothing else.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Protocol

if "httpx" not in sys.modules:
    # httpx's __init__ imports its own command-line client when click, rich and pygments are installed (they are,
    # with threadline's CLI extra), which costs more than the rest of httpx together (about 150 ms of every process
    # that reaches a provider: `bench_http.py`'s import row, `threadline prompt`'s start). Marking that one submodule
    # as absent while httpx loads makes httpx skip it (it falls back to a stub ``httpx.main``); the mark is removed
    # at once, so a later ``import httpx._main`` still works.
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
    try:
        import httpx
    finally:
        del sys.modules["httpx._main"]

import httpx

from ..._masking import mask_secrets, secret_forms
from ...errors import ModelError
from ...tracing import hooks as tracing
from ..base import ModelEvent, ModelResponse, ModelSettings, ReasoningDelta, TextDelta
from ._answer_masking import AnswerMask, Forms
from ._deadline import AttemptDeadline
from ._retries import LONGEST_RETRY_AFTER, RetrySignals, backoff_delay, wait_too_long, why_not_retry
from ._sse import LINE_LIMIT, read_events
from ._tls import certificate_refused

if TYPE_CHECKING:
    import ssl

    from ...message_types import Usage

__all__ = ["Endpoint", "StreamDecoder", "mask_secrets", "secret_forms"]  # the masking is re-exported

_ERROR_TYPE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_RETRY_STATUSES = frozenset({408, 409, 429})
_DETAIL_LIMIT = 400
_USER_AGENT = "threadline"
BODY_LIMIT = LINE_LIMIT  # the most of one answer that is not a stream read into memory (a stream: per line)


class StreamDecoder(Protocol):
    """Reads one provider's stream events (see `ChatStream` and `MessageStream`): `feed` returns the answer text an
    event adds, a `ReasoningDelta` for a piece of thinking, or None. A reader whose stream reports usage before its
    end may also have ``usage_so_far()``: a cut stream's failure is then logged with that usage (and priced)."""

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None: ...

    def finish(self) -> ModelResponse: ...


def _usage_so_far(reader: StreamDecoder | None) -> Usage | None:
    """The usage a stream reported before it broke, where its reader keeps it (a provider that bills a cut answer
    says so early: Anthropic's ``message_start``)."""
    usage_so_far = getattr(reader, "usage_so_far", None)
    return usage_so_far() if usage_so_far is not None else None


class Endpoint:
    """One provider URL: pooled connections, the request/stream loop with retries, and error mapping.

    Args:
        provider: The provider's name as users know it (``"OpenAI"``, ``"Anthropic"``), used in messages.
        url: The full URL requests are posted to.
        headers: Headers sent with every request (authentication included).
        secrets: Values that must never appear in an error message, in any form (see `secret_forms`).
        auth_hint: What to tell the user when the server refuses the credentials.
        timeout: Default seconds one attempt may take in all (the request, then the whole answer), and so also
            the longest wait for a connection or for the next bytes of an answer.
        max_retries: Default retries of retryable failures.
        retry_base_delay: The first backoff delay in seconds (doubled for each further retry).
        retry_max_delay: The longest backoff delay in seconds.
        retry_time_limit: The longest one call keeps retrying, in seconds from its first failure (waits and
            further attempts together); None for no limit.
        verify: How the pools verify certificates: True (httpx's defaults), False, or an ``ssl.SSLContext``.
        transport: The caller's own transport, used in place of the pools (never closed here).
    """

    def __init__(
        self,
        *,
        provider: str,
        url: str,
        headers: Mapping[str, str],
        secrets: tuple[str, ...],
        auth_hint: str,
        timeout: float,
        max_retries: int,
        retry_base_delay: float,
        retry_max_delay: float = 20.0,
        retry_time_limit: float | None = 60.0,
        verify: bool | ssl.SSLContext = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.provider = provider
        self.url = url
        self._secrets = secret_forms(secrets)
        # What the model answers is masked for these forms alone (see `AnswerMask`); nothing when there is no secret.
        self._answer_forms = Forms(self._secrets) if self._secrets else None
        self._auth_hint = auth_hint
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self.retry_time_limit = retry_time_limit
        self._url = httpx.URL(url)
        self._request_headers = httpx.Headers(
            {"User-Agent": _USER_AGENT, "Accept-Encoding": "gzip, deflate", **headers}
        )
        self._verify = verify
        self._transport = transport
        self._pools: dict[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport] = {}
        self._last: tuple[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport] | None = None

    def __repr__(self) -> str:
        return f"<Endpoint {self.provider} {mask_secrets(self.url, self._secrets)}>"

    # -- pools ----------------------------------------------------------------------------------------------------
    def pool(self) -> httpx.AsyncBaseTransport:
        """The connection pool of the running event loop (made on first use), or the caller's own transport."""
        if self._transport is not None:
            return self._transport
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0] is loop:
            return last[1]
        pool = self._pools.get(loop)
        if pool is None:
            for stale in [known for known in self._pools if known.is_closed()]:
                del self._pools[stale]  # its loop is gone, and its connections with it
            pool = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=60.0),
                proxy=_proxy_for(self._url),
                verify=self._verify,
            )
            self._pools[loop] = pool
        self._last = (loop, pool)
        return pool

    async def aclose(self) -> None:
        """Close the pool of the running loop and forget those of closed loops."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for known in list(self._pools):
            if known is loop:
                await self._pools.pop(known).aclose()
            elif known.is_closed():
                del self._pools[known]
        self._last = None

    def close_soon(self) -> None:
        """Close every pool on its own event loop, from any thread, without waiting.

        Each close is scheduled on the loop the pool belongs to: it runs now if that loop is running, or the next
        time it runs (a thread's private loop runs again on the thread's next call, or at exit). Pools of closed
        loops are gone already. Used when a cached model is replaced by one with another configuration.
        """
        pools, self._pools, self._last = self._pools, {}, None
        for loop, pool in pools.items():
            if not loop.is_closed():
                try:
                    # A plain callback starts the close on the loop, so nothing is left un-awaited if the loop
                    # never runs again.
                    loop.call_soon_threadsafe(_start_closing, pool)
                except RuntimeError:  # the loop closed meanwhile, and its connections with it
                    pass

    # -- one call -------------------------------------------------------------------------------------------------
    async def events(
        self,
        payload: bytes,
        settings: ModelSettings,
        *,
        stream: bool,
        parse: Callable[[bytes], ModelResponse],
        decoder: Callable[[], StreamDecoder],
        reasoning_shown: bool = True,
    ) -> AsyncIterator[ModelEvent]:
        """Post ``payload`` and yield the answer: `TextDelta` events while streaming, then one `ModelResponse`.

        Args:
            payload: The encoded JSON body.
            settings: ``timeout`` and ``max_retries`` are read here.
            stream: Whether the body asked for a server-sent-event stream.
            parse: Reads a whole (non-streamed) response body.
            decoder: Makes a fresh stream reader for each attempt.
            reasoning_shown: Whether the caller shows `ReasoningDelta` pieces as they come. When it does not, they
                are held until the attempt ends, so a failure after some thinking (but no text) is still retried:
                the held pieces of a failed attempt are dropped, or given just before the error when no retry
                follows (the failure's log keeps them).

        Raises:
            ModelError: after the retries allowed, or at once for a failure no retry can fix.
        """
        retries = self.max_retries if settings.max_retries is None else max(0, settings.max_retries)
        timeout = self.timeout if settings.timeout is None else settings.timeout
        pool = self.pool()
        loop = asyncio.get_running_loop()
        attempt = 0
        deadline: float | None = None
        while True:
            shown: list[str] = []
            thought = False  # reasoning was handed to a caller that shows it
            held: list[ReasoningDelta] = []  # reasoning nobody is shown yet (see reasoning_shown)
            headers: httpx.Headers | None = None
            mask = AnswerMask(self._answer_forms) if self._answer_forms is not None else None
            reader: StreamDecoder | None = None
            budget = AttemptDeadline(loop.time() + timeout, lambda: self._overdue(timeout))
            try:
                try:
                    response = await self._send(pool, payload, timeout)
                    headers = response.headers
                    try:
                        if response.status_code >= 400:
                            raise self._status_error(response, await _read_body(response))
                        if not stream or "text/event-stream" not in response.headers.get("content-type", ""):
                            # Also a server that ignores "stream": true and answers with one JSON body.
                            result = parse(await _read_body(response))
                        else:
                            reader = decoder()
                            feed = reader.feed
                            async with aclosing(read_events(response.aiter_bytes())) as events:
                                async for event in events:
                                    piece = feed(event.event, event.data)
                                    if isinstance(piece, str):
                                        if mask is not None:
                                            piece = mask.text(piece)
                                        if piece:
                                            shown.append(piece)
                                            budget.pause()  # the caller's time is not the server's
                                            yield TextDelta(piece)
                                            budget.resume()
                                    elif piece is not None:
                                        for thinking in [piece] if mask is None else mask.reasoning(piece):
                                            if reasoning_shown:
                                                # Thinking already shown cannot be taken back either: no retry
                                                # after it.
                                                thought = True
                                                budget.pause()
                                                yield thinking
                                                budget.resume()
                                            else:
                                                held.append(thinking)
                            result = reader.finish()
                            for thinking in mask.thinking_left() if mask is not None else ():
                                if reasoning_shown:
                                    thought = True
                                    budget.pause()
                                    yield thinking
                                    budget.resume()
                                else:
                                    held.append(thinking)
                    finally:
                        budget.pause()  # closing the response is not cut short
                        await response.aclose()
                except BaseException:
                    budget.seen()  # the deadline's cancellation becomes the attempt's timeout error
                    raise
                finally:
                    budget.close()
                if mask is not None:
                    result = mask.response(result)
                if not result.content and not result.tool_calls:
                    if not thought and not held:
                        held = _reasoning_deltas(result)  # what it thought goes to the failure's log
                    empty = self._empty_answer(result)
                    empty.usage = result.usage  # the call was billed: the failure's log keeps what it cost
                    raise empty
            except (httpx.HTTPError, ModelError) as exc:
                error = exc if isinstance(exc, ModelError) else self._transport_error(exc, timeout)
                now = time.monotonic()
                if deadline is None and self.retry_time_limit is not None:
                    deadline = now + self.retry_time_limit
                signals = RetrySignals.read(headers)
                why_not = why_not_retry(error, signals, shown or thought, attempt, retries)
                if why_not is None:
                    delay = backoff_delay(attempt, signals.retry_after, self.retry_base_delay, self.retry_max_delay)
                    too_long = signals.retry_after is not None and signals.retry_after > LONGEST_RETRY_AFTER
                    if not too_long and (deadline is None or now + delay <= deadline):
                        if tracing.tracer is not None:
                            tracing.tracer.retry(attempt + 1, self._redact(error), delay)
                        await asyncio.sleep(delay)
                        attempt += 1
                        continue
                    if signals.retry_after is not None:
                        left = None if deadline is None else deadline - now
                        raise self._redact(
                            wait_too_long(error, signals.retry_after, left, self.retry_time_limit)
                        ) from None
                    why_not = f"the retry time limit of {self.retry_time_limit:g} s was reached"
                if mask is not None:
                    # No retry follows: what the stream held back goes to the failure's log, masked.
                    held += mask.thinking_left()
                    tail = mask.text_left()
                    if tail:
                        shown.append(tail)
                        yield TextDelta(tail)
                partial = "".join(shown)
                note = ""
                if partial and error.type in ("connection", "stream_cut", "timeout"):
                    note = f" (the answer was cut off after {len(partial)} characters)"
                elif attempt or why_not:
                    reasons = [f"gave up after {attempt + 1} attempts"] if attempt else []
                    reasons += [why_not] if why_not else []
                    note = f" ({'; '.join(reasons)})"
                usage = error.usage if error.usage is not None else _usage_so_far(reader)
                error = ModelError(
                    error.message + note,
                    type=error.type,
                    status=error.status,
                    retryable=error.retryable and signals.should_retry is not False,
                )
                error.partial = partial
                error.usage = usage
                for piece in held:  # no retry follows: the failure's log keeps what was thought
                    yield piece
                raise self._redact(error) from None
            if not thought:
                # Unstreamed (or held): each reasoning piece is one delta, so callers see it all the same.
                for piece in _reasoning_deltas(result):
                    yield piece
            if result.content:
                if not shown:
                    # Unstreamed (or a server that ignored "stream"): the whole text is one delta, so callers that
                    # show text as it comes see it all the same.
                    yield TextDelta(result.content)
                elif len(result.content) > sum(map(len, shown)):
                    # Text a reader (or the masking) held back and the stream ended on.
                    said = "".join(shown)
                    if result.content.startswith(said):
                        yield TextDelta(result.content[len(said) :])
            yield result
            return

    def _overdue(self, seconds: float) -> ModelError:
        """The error of an attempt past its deadline (see `AttemptDeadline`)."""
        where = f"{self.provider} at {mask_secrets(self.url, self._secrets)}"
        return ModelError(
            f"{where} did not answer within {seconds:g} s (the timeout covers the whole answer)",
            type="timeout",
            retryable=True,
        )

    async def _send(self, pool: httpx.AsyncBaseTransport, payload: bytes, wait: float) -> httpx.Response:
        # The transport is called directly: the client layer above it (cookies, redirects, auth flows, URL
        # merging, event hooks) serves nothing here and costs about a fifth of a loopback request.
        request = httpx.Request(
            "POST",
            self._url,
            headers=self._request_headers,
            content=payload,
            extensions={"timeout": {"connect": min(wait, 15.0), "read": wait, "write": wait, "pool": wait}},
        )
        response = await pool.handle_async_request(request)
        response.request = request
        return response

    def _empty_answer(self, result: ModelResponse) -> ModelError:
        """The error for an answer with no text and no tool calls, by why the model stopped: its output limit or a
        refusal fail at once (the same request would end the same way); anything else may be a glitch, retried."""
        if result.stop_reason == "length":
            thought = " (its reasoning used it up)" if result.reasoning else ""
            advice = (
                "raise max_tokens, or lower the reasoning effort or budget" if result.reasoning else "raise max_tokens"
            )
            return ModelError(
                f"{self.provider} stopped at the output token limit before answering{thought}: {advice}",
                type="length",
            )
        if result.stop_reason == "content_filter":
            return ModelError(
                f"{self.provider} refused to answer (its content filter or a refusal stopped it, with no text)",
                type="refused",
            )
        return ModelError(
            f"{self.provider} returned an empty answer (no text, no tool calls)", type="empty_response", retryable=True
        )

    def _redact(self, error: ModelError) -> ModelError:
        """The one exit of every error: the secrets masked in its message and its type, in every form."""
        message = mask_secrets(error.message, self._secrets)
        kind = error.type
        if mask_secrets(kind, self._secrets) != kind or not _ERROR_TYPE.match(kind):
            kind = "error"  # a type must be a short name; a server's text there is not kept
        if message == error.message and kind == error.type:
            return error
        redacted = ModelError(message, type=kind, status=error.status, retryable=error.retryable)
        redacted.partial = error.partial
        redacted.usage = error.usage
        return redacted

    # -- error mapping --------------------------------------------------------------------------------------------
    def _status_error(self, response: httpx.Response, body: bytes) -> ModelError:
        status = response.status_code
        detail = (self._detail(body) or response.reason_phrase).rstrip(".")
        where = f"{self.provider} ({mask_secrets(self.url, self._secrets)})"
        if status in (401, 403):
            return ModelError(
                f"{where} refused the credentials (HTTP {status}): {detail}. {self._auth_hint}",
                type="auth",
                status=status,
            )
        if status == 429:
            if self._quota_used_up(body):
                return ModelError(
                    f"{where} refused the request: the account's quota or spend limit is used up (HTTP 429): {detail}."
                    " Retrying cannot help until it is raised or resets",
                    type="quota",
                    status=status,
                )
            return ModelError(
                f"{where} is rate limiting (HTTP 429): {detail}", type="rate_limit", status=status, retryable=True
            )
        if status >= 500:
            kind = "overloaded" if status == 529 else "server"
            return ModelError(f"{where} failed (HTTP {status}): {detail}", type=kind, status=status, retryable=True)
        if status in _RETRY_STATUSES:
            return ModelError(f"{where} answered HTTP {status}: {detail}", type="server", status=status, retryable=True)
        if status == 404:
            return ModelError(
                f"{where} answered HTTP 404: {detail} (check the model name and the base URL)",
                type="not_found",
                status=status,
            )
        return ModelError(f"{where} rejected the request (HTTP {status}): {detail}", type="bad_request", status=status)

    @staticmethod
    def _quota_used_up(body: bytes) -> bool:
        import msgspec

        from ._error_text import quota_used_up

        try:
            return quota_used_up(msgspec.json.decode(body))
        except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deeply to read
            return False

    def _detail(self, body: bytes) -> str:
        """The server's own explanation from an error body (see `error_text`), on one line, secrets masked."""
        import msgspec

        from ._error_text import error_text

        text = body.decode("utf-8", "replace").strip()
        try:
            text = error_text(msgspec.json.decode(body)) or text
        except (msgspec.DecodeError, RecursionError):  # nested too deeply to read: the body's text is shown
            pass
        text = " ".join(mask_secrets(text, self._secrets).split())  # one line, even from an HTML error page
        return text if len(text) <= _DETAIL_LIMIT else text[:_DETAIL_LIMIT] + "…"

    def _transport_error(self, exc: httpx.HTTPError, timeout: float) -> ModelError:
        where = f"{self.provider} at {mask_secrets(self.url, self._secrets)}"
        reason = mask_secrets(str(exc) or type(exc).__name__, self._secrets)
        if isinstance(exc, httpx.TimeoutException):
            return ModelError(
                f"{where} did not answer within {timeout:g} s ({type(exc).__name__})", type="timeout", retryable=True
            )
        if isinstance(exc, httpx.ConnectError) and certificate_refused(exc):
            # Retrying cannot help: the same certificate comes back. No key is in the text (masked all the same).
            return ModelError(
                f"could not verify the TLS certificate of {where}: {reason}. For a server whose certificate comes from"
                " your own certificate authority, pass verify= the path of its CA bundle (or an ssl.SSLContext)",
                type="connection",
            )
        if isinstance(exc, httpx.ConnectError):
            return ModelError(f"could not connect to {where}: {reason}", type="connection", retryable=True)
        if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError)):
            return ModelError(f"the connection to {where} broke: {reason}", type="connection", retryable=True)
        return ModelError(f"request to {where} failed: {reason}", type="connection")


def _start_closing(pool: httpx.AsyncHTTPTransport) -> None:
    """Start closing a pool; runs on the pool's own loop (see `Endpoint.close_soon`)."""
    task = asyncio.ensure_future(pool.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


_closing: set[asyncio.Future[None]] = set()  # keeps closing tasks alive until they finish


async def _read_body(response: httpx.Response) -> bytes:
    """The whole body of an answer that is not a stream.

    Raises:
        ModelError: of type ``bad_response`` once the body passes `BODY_LIMIT`, so a broken server that never stops
            sending cannot fill memory (the read timeout only fires when it stalls).
    """
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > BODY_LIMIT:
            raise ModelError(
                f"The server's answer passed {BODY_LIMIT:,} bytes; threadline stopped reading it.", type="bad_response"
            )
        parts.append(chunk)
    return b"".join(parts)


def _reasoning_deltas(result: ModelResponse) -> list[ReasoningDelta]:
    """An answer's reasoning as deltas, one per piece with text."""
    return [
        ReasoningDelta(thinking.text, part=part, provider=thinking.provider)
        for part, thinking in enumerate(result.reasoning)
        if thinking.text
    ]


def _proxy_for(url: httpx.URL) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) sets for ``url``."""
    import urllib.request

    host = url.host
    if urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(url.scheme) or proxies.get("all")
