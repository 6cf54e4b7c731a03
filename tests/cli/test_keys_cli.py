"""``threadline keys set/list/path``: a key saved once is used by every later command (after the environment, which
wins), the file is readable by its owner only, and the key never shows: not in what the commands print, not in an
error message, not in the stored log.

The provider is the fake OpenAI server on 127.0.0.1 (``OPENAI_BASE_URL``); it records the headers it was sent."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI, Status
from threadline import AssistantMessage, ToolCall, ToolMessage, llm
from threadline.models.keys import save_key
from threadline.store import open_store
from threadline.testing import ScriptedModel

from ._run import run_cli

KEY = "sk-test-KEYFILE-0123456789abcdef"
ENV_KEY = "sk-test-ENVIRONMENT-9876543210fedcba"
NO_KEY = ("OPENAI_API_KEY", "THREADLINE_MODEL")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def save(store_url: str, name: str = "openai", value: str = KEY) -> None:
    done = run_cli("keys", "set", name, store_url=store_url, stdin=value + "\n", unset=NO_KEY)
    assert done.returncode == 0, done.stderr
    assert value not in done.stdout + done.stderr


def everything_stored(tmp_path: Path) -> bytes:
    """Every byte the store wrote (the database and its journal files)."""
    return b"".join(path.read_bytes() for path in tmp_path.iterdir() if path.name.startswith("store.db"))


def test_a_saved_key_is_owner_only_listed_by_name_and_sent_to_the_provider(
    server: FakeOpenAI, store_url: str, tmp_path: Path, _isolated_home: Path
) -> None:
    save(store_url)
    path = run_cli("keys", "path", store_url=store_url)
    key_file = Path(path.stdout.strip())
    assert key_file == _isolated_home / "keys.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    listed = run_cli("keys", "list", store_url=store_url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["openai"]
    assert KEY not in listed.stdout + listed.stderr

    server.add(Answer("hello from the fake"))
    env = {"OPENAI_BASE_URL": server.base_url}
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "hi", store_url=store_url, env=env, unset=NO_KEY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from the fake"
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY.encode() not in everything_stored(tmp_path)


def test_the_environment_wins_over_the_key_file(server: FakeOpenAI, store_url: str) -> None:
    save(store_url)
    server.add(Answer("ok"))
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": ENV_KEY}
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "hi", store_url=store_url, env=env)
    assert done.returncode == 0, done.stderr
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {ENV_KEY}"


def test_a_refused_saved_key_is_named_by_where_it_came_from_never_shown(
    server: FakeOpenAI, store_url: str, tmp_path: Path
) -> None:
    save(store_url)
    server.add(Status(401))
    env = {"OPENAI_BASE_URL": server.base_url}
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "hi", store_url=store_url, env=env, unset=NO_KEY)
    assert done.returncode != 0
    assert "the key file" in done.stderr and "'openai' key" in done.stderr
    assert KEY not in done.stdout + done.stderr
    assert KEY.encode() not in everything_stored(tmp_path)


def test_a_key_file_others_can_read_is_refused_until_fixed(
    server: FakeOpenAI, store_url: str, _isolated_home: Path
) -> None:
    save(store_url)
    key_file = _isolated_home / "keys.json"
    os.chmod(key_file, 0o644)
    env = {"OPENAI_BASE_URL": server.base_url}
    refused = run_cli("prompt", "-m", "openai:gpt-4o-mini", "hi", store_url=store_url, env=env, unset=NO_KEY)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert f"chmod 600 {key_file}" in line
    assert KEY not in line
    assert server.requests == []  # nothing was sent with a key others could have read

    listed = run_cli("keys", "list", store_url=store_url)
    assert listed.returncode == 2 and "chmod 600" in listed.stderr

    save(store_url, "anthropic", "sk-ant-test-0123456789abcdef")  # saving writes the file anew, owner-only
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert run_cli("keys", "list", store_url=store_url).stdout.split() == ["anthropic", "openai"]


def test_a_missing_key_says_the_shell_way_and_the_key_command(store_url: str) -> None:
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "hi", store_url=store_url, unset=(*NO_KEY, "OPENAI_BASE_URL"))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "export OPENAI_API_KEY=" in line
    assert "threadline keys set openai" in line


@pytest.mark.parametrize("value", ["", "   \n", "sk-with a space-0123456789"])
def test_an_empty_or_broken_key_is_refused_and_nothing_is_saved(
    store_url: str, _isolated_home: Path, value: str
) -> None:
    done = run_cli("keys", "set", "openai", store_url=store_url, stdin=value)
    assert done.returncode == 2
    assert "nothing was saved" in done.stderr
    assert "with a space" not in done.stderr
    assert not (_isolated_home / "keys.json").exists()


def test_models_says_a_provider_has_a_key_from_the_file(store_url: str) -> None:
    save(store_url)
    done = run_cli("models", "--json", store_url=store_url, unset=NO_KEY)
    assert done.returncode == 0, done.stderr
    assert '"key": "set"' in done.stdout and "key file (openai)" in done.stdout
    assert KEY not in done.stdout


SHAPELESS_KEY = "Zq7Wm2Lp9Xv4Rt8N"  # no sk- or key- prefix: only knowing it is a saved key can mask it


def fetch_report(name: str) -> str:
    """Fetch a report."""
    raise RuntimeError(f"GET https://reports.example/{name}?auth={SHAPELESS_KEY} answered 403")


def test_a_saved_key_quoted_by_a_failing_tool_is_masked_in_the_log(tmp_path: Path) -> None:
    save_key("service", SHAPELESS_KEY)
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="fetch_report", arguments={"name": "q3"})]),
            "The report could not be fetched.",
        ]
    )
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        answer = llm.model(model).tools(fetch_report).store(store).request("Get q3").prompt()
        assert answer == "The report could not be fetched."
        (info,) = store.list_conversations()
        (result,) = [m for m in store.load(info.id) if isinstance(m, ToolMessage)]
    assert result.is_error
    assert "answered 403" in result.content
    assert SHAPELESS_KEY not in result.content
    assert SHAPELESS_KEY not in str(model.requests)  # nor was it sent to the model
    assert SHAPELESS_KEY.encode() not in everything_stored(tmp_path)
