"""Hostile HTTP servers against the adapters (issue 31): fake OpenAI (Chat Completions and Responses) and Anthropic
servers on 127.0.0.1 that echo the key in every encoding, send odd rate-limit headers, or trickle their answers.

- `encoded_key_leaks`: the server echoes the configured key (raw, JSON-escaped, URL-encoded, or base64 of the key or
  of a text holding it: ``Bearer <key>``, a header line, a Basic credential; standard or URL-safe, padded or not)
  in an error (HTTP 200/4xx/5xx bodies, a stream error event, one after part of the answer) or in the answer (its
  text, streamed or not; the thinking; tool-call arguments). A case counts one leak per place the key can be read
  from (`tests.providers.key_forms.readable`, which decodes base64 at every alignment): the `ModelError`, the
  stored log and the store's files, what the callbacks showed, what the tool received, the spans (recorded with
  content), and for a few cases the output of ``threadline prompt``.
- `odd_retry_after`: a 429 or 503 whose ``Retry-After`` (or ``retry-after-ms``, ``x-ratelimit-reset…``) is huge,
  ``inf``, ``nan``, negative, garbage, or an HTTP date far ahead or long past, then an answer. A case survives when
  the call answers after a retry or fails with the rate-limit (or server) error, in bounded time, the stored log
  valid.
- `trickling_streams`: the answer (streamed or a JSON body) comes one byte at a time, never slowly enough for a read
  timeout. A case survives when the call fails as a timeout within its ``timeout`` per attempt, the failure is
  logged with exactly the text that was shown as its partial output, and the stored log is valid.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import string
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.providers.key_forms import echoes, readable
from tests.providers.servers import (
    Answer,
    Events,
    FakeAnthropic,
    FakeOpenAI,
    FakeResponses,
    FakeServer,
    Recorded,
    Status,
    ToolUse,
    Trickle,
)
from tests.providers.servers import Thought as ResponsesThought
from tests.providers.servers.anthropic_thinking import FakeAnthropicThinking, Think
from tests.providers.servers.anthropic_thinking import Thought as ClaudeThought
from tests.providers.servers.compatible import FakeCompatible, Thinking
from threadline import AssistantMessage, Conversation, ModelError, llm, tool
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.models.openai_responses import OpenAIResponsesModel
from threadline.store import Store, open_store

from .campaign import Row

ROOT = Path(__file__).parents[2]
PROVIDERS = ("openai", "anthropic", "responses")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "responses": "gpt-4o-mini"}
THINKERS = {"openai": "DeepSeek-R1-Distill-Qwen-1.5B", "anthropic": "claude-sonnet-4-5", "responses": "o4-mini"}


# -- shared -----------------------------------------------------------------------------------------------------------


def make_model(provider: str, server: FakeServer, key: str, model: str | None = None, **options: Any) -> Any:
    base_url: str = server.base_url  # type: ignore[attr-defined]
    name = model or MODELS[provider]
    options.setdefault("retry_base_delay", 0.01)
    if provider == "openai":
        return OpenAIModel(name, base_url=base_url, api_key=key, **options)
    if provider == "anthropic":
        return AnthropicModel(name, base_url=base_url, api_key=key, **options)
    return OpenAIResponsesModel(name, base_url=base_url, api_key=key, **options)


def plain_server(provider: str) -> FakeServer:
    return {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "responses": FakeResponses}[provider]()


class Servers:
    """Fake servers started on first use and kept for every case of a row (each answers from its own queue)."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str], FakeServer] = {}

    def get(self, provider: str, kind: str = "plain") -> FakeServer:
        found = self._running.get((provider, kind))
        if found is None:
            if kind == "thinking":
                made: FakeServer = {
                    "openai": FakeCompatible,
                    "anthropic": FakeAnthropicThinking,
                    "responses": FakeResponses,
                }[provider]()
            else:
                made = plain_server(provider)
            found = self._running[(provider, kind)] = made.start()
        return found

    def stop(self) -> None:
        for server in self._running.values():
            server.stop()


def stored_problem(store: Store, conversation: Conversation) -> str | None:
    """Why the stored log of ``conversation`` is not what it should be (None: it loads, validates and equals the
    log in memory)."""
    try:
        log = store.load(conversation.id)
        log.validate()
    except Exception as exc:
        return f"the stored log does not load or validate: {type(exc).__name__}: {exc}"
    if log.to_json() != conversation.messages.to_json():
        return "the stored log differs from the log in memory"
    return None


def store_text(store_file: Path) -> str:
    return "".join(
        path.read_bytes().decode("utf-8", "replace")
        for path in store_file.parent.glob(store_file.name + "*")
        if path.is_file()
    )


def threadline(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "COLUMNS": "200", **env}
    command = [sys.executable, "-m", "threadline", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environment, timeout=300)


# -- encoded_key_leaks ------------------------------------------------------------------------------------------------

ERROR_PLACES = ("200 error body", "400 body", "401 body", "500 body", "stream error event", "stream error after text")
ANSWER_PLACES = ("text", "reasoning", "tool arguments")


def random_key(rng: random.Random) -> str:
    """A key as providers issue them, or one with characters each encoding writes differently."""
    alphabet = string.ascii_letters + string.digits
    kind = rng.randrange(4)
    if kind == 0:
        return 'hunt3r"SECRET/+=x9Q' + "".join(rng.choices(alphabet, k=rng.randint(0, 8)))
    if kind == 1:
        return "sk-proj-" + "".join(rng.choices(alphabet + "-_", k=rng.randint(20, 60)))
    if kind == 2:
        return "sk-ant-api03-" + "".join(rng.choices(alphabet + "-_", k=rng.randint(40, 95)))
    special = alphabet + "!#$%&'*+-./:;<=>?@[]^_`{|}~\""
    return "".join(rng.choices(special, k=rng.randint(12, 48)))


def encodings(key: str) -> dict[str, str]:
    """Every form the server echoes the key in, by name."""
    return {"raw": key, "json": json.dumps(key)[1:-1], "url": quote(key, safe=""), **echoes(key)}


def error_body(provider: str, message: str) -> dict[str, Any]:
    error = {"message": message, "type": "invalid_request_error"}
    return {"type": "error", "error": error} if provider == "anthropic" else {"error": error}


def error_event(provider: str, message: str) -> tuple[str | None, str]:
    if provider == "openai":
        return None, json.dumps({"error": {"message": message, "type": "server_error"}})
    if provider == "anthropic":
        return "error", json.dumps({"type": "error", "error": {"type": "api_error", "message": message}})
    return "error", json.dumps({"type": "error", "code": "server_error", "message": message, "param": None})


def partial_then_error(provider: str, server: FakeServer, message: str) -> Events:
    """The events of an answer cut after its text, then an error event."""
    request = Recorded("POST", server.path, {}, json.dumps({"model": MODELS[provider], "stream": True}).encode(), 0.0)
    events = server.render_events(Answer("Partial answer "), request)
    if provider == "openai":
        cut = len(events) - 2  # the finish chunk and [DONE]
    elif provider == "anthropic":
        cut = len(events) - 3  # content_block_stop, message_delta, message_stop
    else:
        cut = next(i for i, (name, _) in enumerate(events) if name == "response.output_text.done")
    return Events((*events[:cut], error_event(provider, message)))


def leak_answer(provider: str, place: str, echo: str, server: FakeServer) -> list[Any]:
    """What the server answers for one case (an error, or an answer holding ``echo``)."""
    if place == "200 error body":
        return [Status(200, body=error_body(provider, echo))]
    if place.endswith(" body"):
        return [Status(int(place[:3]), body=error_body(provider, echo))]
    if place == "stream error event":
        return [Events((error_event(provider, echo),))]
    if place == "stream error after text":
        return [partial_then_error(provider, server, echo)]
    if place == "text":
        return [Answer(echo)]
    if place == "tool arguments":
        return [Answer(tool_calls=(ToolUse("remember", json.dumps({"text": echo})),)), Answer("Noted.")]
    if provider == "openai":
        return [Thinking("Fine.", reasoning=echo)]
    if provider == "anthropic":
        return [ClaudeThought(blocks=(Think(echo), "Fine."))]
    return [ResponsesThought("Fine.", summaries=(echo,))]


class _Spans:
    """threadline instrumented, recording content, into an in-memory exporter for the row's run."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        import threadline

        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        threadline.instrument(tracer_provider=provider, include_content=True)

    def take(self) -> str:
        """Every attribute, event and status of the spans finished since the last call, as one text."""
        pieces: list[str] = []
        for span in self.exporter.get_finished_spans():
            pieces.append(span.name)
            pieces += [f"{key}={value}" for key, value in (span.attributes or {}).items()]
            pieces.append(span.status.description or "")
            for event in span.events:
                pieces += [event.name, *(f"{key}={value}" for key, value in (event.attributes or {}).items())]
        self.exporter.clear()
        return "\n".join(pieces)

    @staticmethod
    def close() -> None:
        import threadline

        threadline.uninstrument()


async def _leak_case(
    rng: random.Random, servers: Servers, store: Store, store_file: Path, spans: _Spans, row: Row
) -> None:
    provider = rng.choice(PROVIDERS)
    place = rng.choice(ERROR_PLACES + ANSWER_PLACES)
    key = random_key(rng)
    encoding, form = rng.choice(list(encodings(key).items()))
    echo = rng.choice(["", "Here: ", "Your key is "]) + form + rng.choice(["", ".", " - anything else?"])
    stream = True if place.startswith("stream") else False if place.endswith("body") else rng.random() < 0.5
    thinking = place == "reasoning"
    server = servers.get(provider, "thinking" if thinking else "plain")
    received: list[str] = []

    @tool
    def remember(text: str) -> str:
        """Remember a text."""
        received.append(text)
        return "remembered"

    model = make_model(provider, server, key, THINKERS[provider] if thinking else None, max_retries=0)
    server.add(*leak_answer(provider, place, echo, server))
    builder = llm.model(model).tools(remember).store(store).request("What is my key?")
    if thinking and provider != "openai":
        builder = builder.reasoning(effort="low")
    conversation = builder.prompt_conversation(stream=stream)
    shown: list[str] = []
    found: dict[str, list[str]] = {}
    problem = None
    try:
        async for _ in conversation.run(on_text=shown.append, on_reasoning=shown.append):
            pass
        if place in ERROR_PLACES:
            problem = "the turn did not fail"
    except ModelError as error:
        found["ModelError"] = readable(" ".join([str(error), repr(error), error.message, error.partial]), key)
        if place in ANSWER_PLACES:
            problem = f"the turn failed: {error}"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
        found["exception"] = readable(f"{exc!r} {exc}", key)
    finally:
        await model.aclose()
    problem = problem or stored_problem(store, conversation)
    if place in ERROR_PLACES and not (
        isinstance(conversation.messages[-1], AssistantMessage) and conversation.messages[-1].error is not None
    ):
        problem = problem or "the failure was not logged"
    found["log"] = readable(conversation.messages.to_json(), key)
    found["store files"] = readable(store_text(store_file), key)
    found["callbacks"] = readable("".join(shown), key)
    found["tool"] = readable(" ".join(received), key)
    found["spans"] = readable(spans.take(), key)
    leaked = {where: forms for where, forms in found.items() if forms}
    row.saw(place)
    row.case(crashed=problem, leaked=len(leaked), note=f"{provider} {place} {encoding} stream={stream} {leaked}")


def _cli_leak_case(rng: random.Random, directory: Path, row: Row) -> None:
    """``threadline prompt`` against a server that echoes the key in its streamed answer or an error, with the
    thinking shown."""
    provider = rng.choice(PROVIDERS)
    place = rng.choice(("text", "reasoning", "stream error event", "400 body"))
    key = random_key(rng)
    encoding, form = rng.choice(list(encodings(key).items()))
    home = directory / f"cli-{rng.randrange(10**9)}"
    home.mkdir()
    url = f"sqlite:///{home / 'cli.db'}"
    thinking = place == "reasoning"
    server = (
        {"openai": FakeCompatible, "anthropic": FakeAnthropicThinking, "responses": FakeResponses}[provider]()
        if thinking
        else plain_server(provider)
    )
    names = {"openai": "openai", "anthropic": "anthropic", "responses": "openai-responses"}
    model = f"{names[provider]}:{THINKERS[provider] if thinking else MODELS[provider]}"
    prefix = "ANTHROPIC" if provider == "anthropic" else "OPENAI"
    with server:
        server.add(*leak_answer(provider, place, f"Here: {form}.", server))
        env = {f"{prefix}_BASE_URL": server.base_url, f"{prefix}_API_KEY": key, "THREADLINE_HOME": str(home)}  # type: ignore[attr-defined]
        options = ["--show-reasoning"] + (["--reasoning", "low"] if thinking and provider != "openai" else [])
        done = threadline("prompt", "What is my key?", "-m", model, "--store", url, *options, env=env, cwd=home)
    expected_failure = place not in ANSWER_PLACES
    problem = None
    if "Traceback" in done.stderr or (done.returncode != 0) != expected_failure:
        problem = f"prompt exited {done.returncode}: {done.stderr[-300:]}"
    leaked = readable(done.stdout + done.stderr, key) + readable(store_text(home / "cli.db"), key)
    row.saw("CLI " + place)
    row.case(crashed=problem, leaked=len(leaked), note=f"CLI {provider} {place} {encoding}: {leaked}")


def encoded_key_leaks(cases: int, directory: Path, *, seed: int | None = None, cli_cases: int | None = None) -> Row:
    """``cases`` turns against servers echoing the key (see the module docstring), then ``cli_cases`` (default: one
    for every 25 cases, at least one) runs of ``threadline prompt``. CI: 24 cases (about 3 s); full: 600."""
    rng = random.Random(seed)
    row = Row("hostile HTTP: the key echoed, encoded")
    store_file = directory / "hostile-leaks.db"
    servers = Servers()
    spans = _Spans()
    try:
        with open_store(f"sqlite:///{store_file}") as store:

            async def run() -> None:
                for _ in range(cases):
                    await _leak_case(rng, servers, store, store_file, spans, row)

            asyncio.run(run())
    finally:
        spans.close()
        servers.stop()
    for _ in range(max(1, cases // 25) if cli_cases is None else cli_cases):
        _cli_leak_case(rng, directory, row)
    return row


# -- odd_retry_after --------------------------------------------------------------------------------------------------

RATE_HEADERS = (
    "Retry-After",
    "retry-after-ms",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "x-ratelimit-reset",
    "anthropic-ratelimit-requests-reset",
    "RateLimit-Reset",
)
GARBAGE = ["1e20", "inf", "-inf", "Infinity", "nan", "-5", "-0.5", "soon", "1_0", "0x10", "", "1e400", "+5", "5s"]
GARBAGE += ["PT5S", "5 minutes", "1,5", "1.2.3", "٣", "½", "Fri, 31 Dec 99999 23:59:59 GMT"]
GARBAGE += ["Fri, 32 Dec 2024 23:59:59 GMT", "Mon, 01 Jan 0000 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 +9999"]
GARBAGE += ["Tue, 15 Nov 1994 08:12:31 -2400"]


def _http_date(moment: datetime) -> str:
    return email.utils.format_datetime(moment.astimezone(UTC), usegmt=True)


def rate_value(rng: random.Random, kind: str, header: str) -> str:
    """A value of ``header`` of one kind: ``garbage`` (no delay), ``past``, ``huge`` (more than a day) or ``short``
    (at most 0.2 s, or the next second for a date)."""
    now = datetime.now(UTC)
    if kind == "garbage":
        made = [
            rng.choice(GARBAGE),
            f"{rng.uniform(1, 9):.3f}e{rng.randint(3, 400)}",
            f"-{rng.randint(1, 10**6)}",
            "".join(rng.choices(string.printable.strip(), k=rng.randint(1, 40))),
            "x" * rng.randint(1000, 5000),
        ]
        return rng.choice(made)
    if kind == "past":
        ancient = f"{rng.choice(['Mon', 'Tue'])}, 01 Jan {rng.randint(1, 1969):04d} 00:00:00 GMT"
        ago = _http_date(now - timedelta(seconds=rng.uniform(1, 10**9)))
        return rng.choice(["0", "0.0", ago, "Thu, 01 Jan 1970 00:00:00 GMT", ancient])
    if kind == "huge":
        return rng.choice(
            [
                str(rng.randint(86_401, 10 ** rng.randint(6, 30))),
                "9" * rng.randint(20, 2000),
                _http_date(now + timedelta(days=rng.uniform(2, 2_900_000))),
                "Fri, 31 Dec 9999 23:59:59 GMT",
            ]
        )
    if header == "retry-after-ms":
        return str(rng.randint(0, 200))
    if rng.random() < 0.1:
        return _http_date(now + timedelta(seconds=1))
    return rng.choice(["0", f"{rng.uniform(0, 0.2):.3f}"])


async def _rate_case(rng: random.Random, servers: Servers, store: Store, row: Row) -> None:
    provider = rng.choice(PROVIDERS)
    status = rng.choice((429, 503))
    kind = rng.choice(("garbage", "past", "huge", "short"))
    limit = rng.choice((2.0, None)) if kind != "short" else 2.0  # a short wait with no limit is simply made
    names = [rng.choice(RATE_HEADERS) for _ in range(rng.randint(1, 3))]
    if kind == "short" and not any(name.lower().startswith("retry-after") for name in names):
        names.append("Retry-After")
    headers = [(name, rate_value(rng, kind, name)) for name in names]
    server = servers.get(provider)
    model = make_model(provider, server, "sk-test-RATE0123456789", max_retries=2, retry_time_limit=limit)
    server.add(Status(status, headers=tuple(headers)), Answer("Once upon a time."))
    conversation = llm.model(model).store(store).request("Tell me a story.").prompt_conversation()
    problem = None
    started = time.monotonic()
    try:
        async with asyncio.timeout(10 if kind == "huge" else 20):
            async for _ in conversation:
                pass
        if conversation.text != "Once upon a time.":
            problem = f"answered {conversation.text!r}"
    except ModelError as error:
        expected = "rate_limit" if status == 429 else "server"
        if (error.type, error.status) != (expected, status) or f"HTTP {status}" not in error.message:
            problem = f"failed as {error.type} ({error.status}): {error.message[:200]}"
        elif kind != "huge":
            problem = f"a {kind} value was not retried: {error.message[:200]}"
    except TimeoutError:
        problem = f"still waiting after {time.monotonic() - started:.0f} s"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    finally:
        await model.aclose()
    server.clear()  # a failure at once leaves the answer queued: it is not for the next case
    problem = problem or stored_problem(store, conversation)
    row.saw(f"{status} {kind}")
    row.case(crashed=problem, note=f"{provider} {status} {kind} limit={limit} {headers!r:.300}")


def odd_retry_after(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` calls answered first by a 429 or 503 with odd rate-limit headers (see the module docstring).
    CI: 12 cases (about 2 s on an idle 2-core machine); full: 500."""
    rng = random.Random(seed)
    row = Row("hostile HTTP: odd Retry-After")
    servers = Servers()
    try:
        with open_store(f"sqlite:///{directory / 'hostile-retry.db'}") as store:

            async def run() -> None:
                for _ in range(cases):
                    await _rate_case(rng, servers, store, row)

            asyncio.run(run())
    finally:
        servers.stop()
    return row


# -- trickling_streams ------------------------------------------------------------------------------------------------

STORY = " ".join(["Once upon a time a fox found a lantern in the snow, and it glowed."] * 30)


def _events_before_text(provider: str, server: FakeServer, pieces: int) -> int:
    """How many stream events come before the end of the answer's first ``pieces`` pieces of text."""
    request = Recorded("POST", server.path, {}, json.dumps({"model": MODELS[provider], "stream": True}).encode(), 0.0)
    marker = json.dumps(STORY[4 * (pieces - 1) : 4 * pieces])
    events = server.render_events(Answer(STORY), request)
    return 1 + next(i for i, (_, data) in enumerate(events) if marker in data)


async def _trickle_case(rng: random.Random, servers: Servers, store: Store, row: Row) -> None:
    provider = rng.choice(PROVIDERS)
    stream = rng.random() < 0.7
    shows_text = stream and rng.random() < 0.5
    interval = rng.uniform(0.005, 0.05)
    timeout = rng.uniform(0.25, 0.6)
    retries = rng.choice((0, 1))
    server = servers.get(provider)
    after = _events_before_text(provider, server, rng.randint(1, 5)) if shows_text else 0
    model = make_model(provider, server, "sk-test-TRICKLE0123456789", timeout=timeout, max_retries=retries)
    before = server.count
    server.add(*(Trickle(Answer(STORY), interval=interval, after=after) for _ in range(retries + 1)))
    conversation = llm.model(model).store(store).request("Tell me a story.").prompt_conversation(stream=stream)
    shown: list[str] = []
    problem = None
    started = time.monotonic()
    attempts = 1 if shows_text else retries + 1
    try:
        async with asyncio.timeout(attempts * timeout + 10):  # the call's own deadlines come first, by far
            async for _ in conversation.run(on_text=shown.append):
                pass
        problem = "the trickle was answered in full"
    except ModelError as error:
        failed = conversation.messages[-1]
        if error.type != "timeout" or not error.retryable:
            problem = f"failed as {error.type}: {error.message[:200]}"
        elif error.partial != "".join(shown):
            problem = f"partial {len(error.partial)} characters, shown {len(''.join(shown))}"
        elif not (isinstance(failed, AssistantMessage) and failed.error is not None):
            problem = "the failure was not logged"
        elif failed.content != error.partial:
            problem = f"the log keeps {len(failed.content or '')} characters of the {len(error.partial)} shown"
        elif server.count - before != attempts:
            problem = f"{server.count - before} attempts, expected {attempts}"
    except TimeoutError:
        problem = f"still reading after {time.monotonic() - started:.0f} s"
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    finally:
        await model.aclose()
    server.clear()  # trickles no attempt asked for are not for the next case
    problem = problem or stored_problem(store, conversation)
    row.saw(f"{'streamed' if stream else 'body'}{', text shown' if shows_text else ''}")
    note = f"{provider} stream={stream} after={after} interval={interval:.3f} timeout={timeout:.2f} retries={retries}"
    row.case(crashed=problem, note=note)


def trickling_streams(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` calls whose answer trickles in (see the module docstring), each with a timeout of 0.25-0.6 s.
    CI: 4 cases (about 3 s); full: 60 (about 45 s)."""
    rng = random.Random(seed)
    row = Row("hostile HTTP: trickling answers")
    servers = Servers()
    try:
        with open_store(f"sqlite:///{directory / 'hostile-trickle.db'}") as store:

            async def run() -> None:
                for _ in range(cases):
                    await _trickle_case(rng, servers, store, row)

            asyncio.run(run())
    finally:
        servers.stop()
    return row
