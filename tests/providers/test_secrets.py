"""A key never leaves threadline through an error, in any form: error bodies of HTTP 200 answers and stream ``error``
events that echo it (raw, JSON-escaped, URL-encoded, Python-escaped, base64 of the key or of a header holding it;
in the message, the type or the code) reach neither the exception, nor the log, the store, an export, ``logs show``
or stderr; a key read with a trailing newline is used stripped. Both providers, over real HTTP; the CLI as a
subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from threadline import AssistantMessage, Conversation, open_store
from threadline.errors import ModelError, UserError
from threadline.models.openai import OpenAIModel

from .conftest import make_anthropic, make_openai
from .key_forms import encodings, readable, wrappings
from .servers import Events, FakeAnthropic, FakeOpenAI, FakeServer, Status

# Not shaped like an API key (so only the configured secret can mask it), and with characters that each encoding
# writes differently.
KEY = 'hunt3r"SECRET/+=x9Q'
FORMS = {
    "raw": KEY,
    "json": json.dumps(KEY)[1:-1],
    "url": quote(KEY, safe=""),
    "repr-bytes": repr(("Bearer " + KEY + "\n").encode())[2:-1],
}


def leaked(text: str) -> list[str]:
    return [name for name, form in FORMS.items() if form in text]


def echo() -> str:
    return (
        f"Incorrect API key provided: {KEY}. As sent: {FORMS['url']} (escaped {FORMS['json']}); "
        f"header {FORMS['repr-bytes']}"
    )


def error_answers(provider: str) -> dict[str, object]:
    """The error shapes of each provider that carry the server's text: a 200 body and a stream error event."""
    if provider == "openai":
        error = {"message": echo(), "type": KEY, "code": FORMS["url"]}
        return {"body": Status(200, body={"error": error}), "event": Events(((None, json.dumps({"error": error})),))}
    error = {"type": KEY, "message": echo()}
    return {
        "body": Status(200, body={"type": "error", "error": error}),
        "event": Events((("error", json.dumps({"type": "error", "error": error})),)),
    }


@pytest.mark.parametrize("shape", ["body", "event"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_error_echoing_the_key_reaches_neither_the_exception_nor_the_log(provider: str, shape: str) -> None:
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    with server:
        maker = make_openai if provider == "openai" else make_anthropic
        model = maker(server, api_key=KEY + "\n")  # read from a file, newline and all  # type: ignore[arg-type]
        server.add(error_answers(provider)[shape])
        conversation = Conversation()
        try:
            with pytest.raises(ModelError) as info:
                await conversation.continuation.model(model).request("hi").prompt_async(stream=shape == "event")
        finally:
            await model.aclose()
        sent = server.requests[0].headers.get("authorization") or server.requests[0].headers.get("x-api-key")
    assert sent in (f"Bearer {KEY}", KEY)  # the key was used, stripped of its newline
    error = info.value
    assert leaked(str(error)) == [] and leaked(error.message) == []
    assert error.type == "error"  # the server's type held the key: it is not kept as a type
    assert "Incorrect API key provided: ***" in str(error)  # the rest of what the server said is kept
    failed = conversation.messages[-1]
    assert isinstance(failed, AssistantMessage) and failed.error is not None
    assert leaked(failed.error.message) == [] and leaked(failed.error.type) == []
    assert leaked(conversation.messages.to_json()) == []


def base64_errors(provider: str, wrapping: str) -> dict[str, object]:
    """A 200 error body, a stream error event and a 400 body whose message holds every base64 form of one text that
    carries the key (see `key_forms.wrappings`)."""
    message = "Bad header: " + " ".join(encodings(wrappings(KEY)[wrapping]).values())
    error: dict[str, object] = {"message": message, "type": "invalid_request_error"}
    body: dict[str, object] = {"error": error} if provider == "openai" else {"type": "error", "error": error}
    name = None if provider == "openai" else "error"
    return {"body": Status(200, body=body), "event": Events(((name, json.dumps(body)),)), "400": Status(400, body=body)}


@pytest.mark.parametrize("wrapping", list(wrappings(KEY)))
@pytest.mark.parametrize("shape", ["body", "event", "400"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_base64_of_the_key_in_an_error_reaches_neither_the_exception_nor_the_log(
    provider: str, shape: str, wrapping: str
) -> None:
    """Before, only the key's text forms were masked: base64 of the key, of ``Bearer <key>`` or of a header line
    holding it reached the error, the log's `LLMError` and the spans whole."""
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    with server:
        maker = make_openai if provider == "openai" else make_anthropic
        model = maker(server, api_key=KEY)  # type: ignore[arg-type]
        server.add(base64_errors(provider, wrapping)[shape])
        conversation = Conversation()
        try:
            with pytest.raises(ModelError) as info:
                await conversation.continuation.model(model).request("hi").prompt_async(stream=shape == "event")
        finally:
            await model.aclose()
    error = info.value
    assert readable(" ".join([str(error), repr(error), error.message, error.partial]), KEY) == []
    assert "Bad header: " in error.message  # what the server said around it is kept
    assert readable(conversation.messages.to_json(), KEY) == []


async def test_the_repro_of_a_key_with_a_trailing_newline(openai_server: FakeOpenAI) -> None:
    # ../shared/repro/r6_secret.py: the header was refused ("Illegal header value b'Bearer hunter2secret\\n'") and
    # the key ended up verbatim, in its escaped form, in the logged error.
    model = OpenAIModel("gpt-4o-mini", base_url=openai_server.base_url, api_key="hunter2secret\n", max_retries=0)
    openai_server.add(Status(501))
    conversation = Conversation()
    try:
        with pytest.raises(ModelError):
            await conversation.continuation.model(model).request("hi").prompt_async()
    finally:
        await model.aclose()
    assert openai_server.requests[0].headers["authorization"] == "Bearer hunter2secret"
    assert "hunter2secret" not in conversation.messages.to_json()


def test_a_key_with_a_control_character_inside_is_refused_without_showing_it() -> None:
    with pytest.raises(UserError, match="contains a space or a control character") as info:
        OpenAIModel("gpt-4o-mini", api_key="hunter2\x00secret")
    assert "hunter2" not in str(info.value)


def test_credentials_in_caller_headers_are_secrets_too() -> None:
    model = OpenAIModel("gpt-4o", base_url="http://127.0.0.1:9/v1", headers={"api-key": "azure-SECRET-value9"})
    assert "azure-SECRET-value9" in model._endpoint._secrets


# -- the command line -----------------------------------------------------------------------------------------------


def threadline(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **env},
        timeout=300,
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_cli_shows_and_stores_no_form_of_the_key(provider: str, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store_url = f"sqlite:///{db}"
    server: FakeServer = FakeOpenAI() if provider == "openai" else FakeAnthropic()
    with server:
        answers = error_answers(provider)
        server.add(answers["event"], answers["body"])  # a stream error event, then a 200 error body
        prefix = "OPENAI" if provider == "openai" else "ANTHROPIC"
        env = {f"{prefix}_BASE_URL": server.base_url, f"{prefix}_API_KEY": KEY + "\n"}  # type: ignore[attr-defined]
        model = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-haiku-4-5"
        first = threadline("prompt", "hi", "-m", model, "--store", store_url, env=env, cwd=tmp_path)
        second = threadline("prompt", "again", "-c", "-m", model, "--store", store_url, env=env, cwd=tmp_path)
        assert server.count == 2  # neither is retried: the server's error types are not retryable ones
    for done in (first, second):
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert "Incorrect API key provided: ***" in done.stderr
        assert leaked(done.stdout + done.stderr) == []

    store = open_store(store_url)
    try:
        (info,) = store.list_conversations()
        log = store.load(info.id)
    finally:
        store.close()
    failures = [m for m in log if isinstance(m, AssistantMessage) and m.error is not None]
    assert len(failures) == 2
    assert leaked(log.to_json()) == []

    shown = threadline("logs", "show", info.id, "--store", store_url, env={}, cwd=tmp_path)
    shown_json = threadline("logs", "show", info.id, "--json", "--store", store_url, env={}, cwd=tmp_path)
    exported = threadline("export", info.id, "--store", store_url, env={}, cwd=tmp_path)
    files = tmp_path / "exported"
    exported_files = threadline(
        "export", info.id, "--layout", "files", "-o", str(files), "--store", store_url, env={}, cwd=tmp_path
    )
    for done in (shown, shown_json, exported, exported_files):
        assert done.returncode == 0, done.stderr
        assert leaked(done.stdout + done.stderr) == []
    assert "Incorrect API key provided: ***" in shown.stdout
    for path in [db, *db.parent.glob("store.db*"), *files.rglob("*")]:
        if path.is_file():
            assert leaked(path.read_bytes().decode("utf-8", "replace")) == [], path
