"""Error bodies carrying the key: fake OpenAI and Anthropic servers on 127.0.0.1 answer with the configured key
echoed (raw, JSON-escaped, URL-encoded, as Python bytes) in the message, type and code of 200 error bodies, stream
error events (alone, or after part of the answer), 4xx/5xx bodies, and the upstream error OpenRouter wraps in
``error.metadata.raw``; the key is configured plain and with the
trailing newline a key read from a file has.

After each turn (on a real SQLite store) the campaign searches, for every form of the key: the `ModelError` (its
text, message, type and partial output), the log, the store's files on disk, a JSON export and a files-layout
export; and, running ``threadline prompt`` as a subprocess, its stdout and stderr and what ``logs show`` and
``export`` print. Each case counts one leak per place a form of the key turned up.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.providers.servers import Events, FakeAnthropic, FakeOpenAI, FakeServer, Status
from threadline import AssistantMessage, Conversation, ModelError
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.store import Store, open_store
from threadline.store.jsonfiles import export_layout

from .campaign import Row

KEY = 'hunt3r"SECRET/+=x9Q'  # not shaped like an API key, so only the configured secret can mask it
FORMS = {
    "raw": KEY,
    "json": json.dumps(KEY)[1:-1],
    "url": quote(KEY, safe=""),
    "repr-bytes": repr(("Bearer " + KEY + "\n").encode())[2:-1],
}
ROOT = Path(__file__).parents[2]


def leaks(text: str) -> list[str]:
    """The forms of the key found in ``text``."""
    return [name for name, form in FORMS.items() if form in text]


def echo() -> str:
    sent = f"Sent {FORMS['url']} (escaped {FORMS['json']}); header {FORMS['repr-bytes']}"
    return f"Incorrect API key provided: {KEY}. {sent}"


def openai_error() -> dict[str, Any]:
    return {"error": {"message": echo(), "type": KEY, "code": FORMS["url"], "param": FORMS["json"]}}


def anthropic_error() -> dict[str, Any]:
    return {"type": "error", "error": {"type": KEY, "message": echo()}}


def openai_partial() -> list[tuple[str | None, str]]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    delta = {"index": 0, "delta": {"role": "assistant", "content": "Partial answer "}, "finish_reason": None}
    return [(None, json.dumps({**chunk, "choices": [delta]})), (None, json.dumps(openai_error()))]


def anthropic_partial() -> list[tuple[str | None, str]]:
    usage = {"input_tokens": 1, "output_tokens": 0}
    start = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": usage}
    block = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "Partial answer "}
    events = [
        {"type": "message_start", "message": {**start, "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        anthropic_error(),
    ]
    return [(str(event["type"]), json.dumps(event)) for event in events]


def shapes(provider: str) -> dict[str, tuple[Any, bool]]:
    """Each error shape of a provider: (what the server answers, whether the request streams)."""
    body = openai_error() if provider == "openai" else anthropic_error()
    event = ("error" if provider == "anthropic" else None, json.dumps(body))
    partial = openai_partial() if provider == "openai" else anthropic_partial()
    out: dict[str, tuple[Any, bool]] = {
        "200 error body": (Status(200, body=body), False),
        "stream error event": (Events((event,)), True),
        "stream error after text": (Events(tuple(partial)), True),
    }
    for status in (400, 401, 403, 404, 422, 500, 503):
        out[f"{status} body"] = (Status(status, body=body), False)
    if provider == "openai":
        # OpenRouter: the upstream provider's error (its body as a JSON string) behind a generic message; the
        # library shows it, so the key inside it, escaped once more, must be masked too.
        metadata = {"raw": json.dumps(anthropic_error()), "provider_name": KEY}
        routed = {"error": {"message": "Provider returned error", "code": 400, "metadata": metadata}}
        out["400 body, upstream error inside (OpenRouter)"] = (Status(400, body=routed), False)
        out["200 error body, upstream error inside (OpenRouter)"] = (Status(200, body=routed), False)
    out["429 body, long Retry-After"] = (Status(429, body=body, headers=(("Retry-After", "3600"),)), False)
    out["401 body, streamed request"] = (Status(401, body=body), True)
    return out


def make_model(provider: str, server: FakeServer, key: str) -> Any:
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key=key, max_retries=0)  # type: ignore[attr-defined]
    return AnthropicModel("claude-haiku-4-5", base_url=server.base_url, api_key=key, max_retries=0)  # type: ignore[attr-defined]


def store_text(store_file: Path) -> str:
    return "".join(
        path.read_bytes().decode("utf-8", "replace")
        for path in store_file.parent.glob(store_file.name + "*")
        if path.is_file()
    )


def library_case(
    provider: str, answer: Any, stream: bool, key: str, store: Store, store_file: Path, out: Path
) -> tuple[str | None, dict[str, list[str]]]:
    """One turn against the server; (problem, {place: forms found})."""
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    found: dict[str, list[str]] = {}
    problem = None
    with server:
        server.add(answer)
        model = make_model(provider, server, key)
        conversation = Conversation(store=store)

        async def turn() -> None:
            try:
                await conversation.continuation.model(model).request("hi").prompt_async(stream=stream)
            finally:
                await model.aclose()

        try:
            asyncio.run(turn())
            problem = "the turn did not fail"
        except ModelError as error:
            found["ModelError"] = leaks(" ".join([str(error), repr(error), error.message, error.type, error.partial]))
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
            found["exception"] = leaks(str(exc) + repr(exc))
    log = store.load(conversation.id)
    if not (log and isinstance(log[-1], AssistantMessage) and log[-1].error is not None):
        problem = problem or "the failure was not logged"
    found["log"] = leaks(log.to_json())
    found["store files"] = leaks(store_text(store_file))
    info = store.get_conversation(conversation.id)
    assert info is not None
    folder = export_layout(out / conversation.id, [(info, list(log))])
    found["files export"] = leaks("".join(p.read_text("utf-8", "replace") for p in folder.rglob("*") if p.is_file()))
    return problem, {place: forms for place, forms in found.items() if forms}


def key_leaks(directory: Path, cli_providers: tuple[str, ...] = ("openai", "anthropic")) -> Row:
    """Every error shape of both providers, with the key plain and with a trailing newline; then the CLI."""
    row = Row("error bodies carrying the key")
    store_file = directory / "leaks.db"
    with open_store(f"sqlite:///{store_file}") as store:
        for provider in ("openai", "anthropic"):
            for name, (answer, stream) in shapes(provider).items():
                for key_name, key in (("plain key", KEY), ("key with newline", KEY + "\n")):
                    problem, found = library_case(provider, answer, stream, key, store, store_file, directory)
                    places = sum(len(forms) for forms in found.values())
                    row.case(crashed=problem, leaked=places, note=f"{provider} {name} {key_name} {found}")
    for provider in cli_providers:
        cli_case(provider, directory, row)
    return row


def threadline(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "COLUMNS": "200", **env}
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=300,
    )


def cli_case(provider: str, directory: Path, row: Row) -> None:
    """``threadline prompt`` twice (a stream error event, then a 200 error body), ``logs show`` and ``export``."""
    home = Path(tempfile.mkdtemp(dir=directory))
    store_file = home / "cli.db"
    url = f"sqlite:///{store_file}"
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    prefix = "OPENAI" if provider == "openai" else "ANTHROPIC"
    model = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-haiku-4-5"
    all_shapes = shapes(provider)
    with server:
        server.add(all_shapes["stream error event"][0], all_shapes["200 error body"][0], all_shapes["401 body"][0])
        env = {f"{prefix}_BASE_URL": server.base_url, f"{prefix}_API_KEY": KEY + "\n", "THREADLINE_HOME": str(home)}  # type: ignore[attr-defined]
        runs = [
            threadline("prompt", "hi", "-m", model, "--store", url, env=env, cwd=home),
            threadline("prompt", "again", "-c", "-m", model, "--store", url, env=env, cwd=home),
            threadline("prompt", "once more", "-c", "-m", model, "--store", url, env=env, cwd=home),
        ]
    with open_store(url) as store:
        conversations = store.list_conversations()
    problem = None
    if len(conversations) != 1:
        problem = f"{len(conversations)} conversations stored"
    for done in runs:
        if done.returncode == 0 or "Traceback" in done.stderr or not done.stderr.strip():
            problem = problem or f"prompt exited {done.returncode}: {done.stderr[-200:]}"
        row.case(crashed=problem, leaked=len(leaks(done.stdout + done.stderr)), note=f"{provider} CLI prompt")
    if not conversations:
        return
    conversation_id = conversations[0].id
    exported = home / "exported"
    shown = [
        threadline("logs", "show", conversation_id, "--store", url, env={}, cwd=home),
        threadline("logs", "show", conversation_id, "--json", "--store", url, env={}, cwd=home),
        threadline("export", conversation_id, "--store", url, env={}, cwd=home),
        threadline(
            "export", conversation_id, "--layout", "files", "-o", str(exported), "--store", url, env={}, cwd=home
        ),
    ]
    for done in shown:
        on_disk = store_text(store_file) + "".join(
            p.read_text("utf-8", "replace") for p in exported.rglob("*") if p.is_file()
        )
        problem = None if done.returncode == 0 else f"exited {done.returncode}: {done.stderr[-200:]}"
        leaked = len(leaks(done.stdout + done.stderr)) + len(leaks(on_disk))
        row.case(crashed=problem, leaked=leaked, note=f"{provider} CLI {' '.join(done.args[3:5])}")
