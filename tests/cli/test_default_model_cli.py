"""``threadline models default NAME`` saves the model used when no -m is given (``THREADLINE_MODEL`` still wins), and
a misspelt command is answered with the command meant.

The provider is the fake OpenAI server on 127.0.0.1; it records which model each request asked for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Answer, FakeOpenAI

from ._run import run_cli

KEY = "sk-test-DEFAULT-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def test_the_saved_default_model_is_used_without_m_and_the_environment_wins(server: FakeOpenAI, store_url: str) -> None:
    chose = run_cli("models", "default", "openai:gpt-4.1", store_url=store_url)
    assert chose.returncode == 0, chose.stderr
    shown = run_cli("models", "default", store_url=store_url)
    assert shown.stdout.strip() == "openai:gpt-4.1"
    listed = run_cli("models", "--json", store_url=store_url)
    assert json.loads(listed.stdout)["default_model"] == "openai:gpt-4.1"

    server.add(Answer("one"), Answer("two"))
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    done = run_cli("prompt", "hi", store_url=store_url, env=env)
    assert done.returncode == 0, done.stderr
    done = run_cli("prompt", "hi", store_url=store_url, env={**env, "THREADLINE_MODEL": "openai:gpt-4o-mini"})
    assert done.returncode == 0, done.stderr
    assert [body["model"] for body in server.bodies] == ["gpt-4.1", "gpt-4o-mini"]

    unset = run_cli("models", "default", "--unset", store_url=store_url)
    assert unset.returncode == 0, unset.stderr
    assert run_cli("models", "default", store_url=store_url).stdout.strip() == "local"


def test_an_unknown_default_model_is_refused_and_nothing_is_saved(store_url: str, _isolated_home: Path) -> None:
    done = run_cli("models", "default", "nosuch:model", store_url=store_url)
    assert done.returncode == 2
    assert "unknown model 'nosuch:model'" in done.stderr
    assert not (_isolated_home / "config.json").exists()
    assert run_cli("models", "default", store_url=store_url).stdout.strip() == "local"


@pytest.mark.parametrize(("typed", "meant"), [("promt", "prompt"), ("lgos", "logs"), ("model", "models")])
def test_a_misspelt_command_names_the_command_meant(store_url: str, typed: str, meant: str) -> None:
    done = run_cli(typed, store_url=store_url)
    assert done.returncode == 2
    assert f"No such command '{typed}'" in done.stderr
    assert f"Did you mean '{meant}'" in done.stderr


def test_a_command_like_nothing_known_gets_no_guess(store_url: str) -> None:
    done = run_cli("xyzzy", store_url=store_url)
    assert done.returncode == 2
    assert "No such command 'xyzzy'" in done.stderr
    assert "Did you mean" not in done.stderr
