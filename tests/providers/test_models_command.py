"""``threadline models`` and what resolving a provider costs at import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from threadline.cli import cli


def run(*args: str) -> str:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["models", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_lists_providers_and_says_what_is_missing() -> None:
    output = run()
    for expected in ("local:smollm2", "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "https://api.openai.com/v1"):
        assert expected in output
    assert "set OPENAI_API_KEY" in output and "set ANTHROPIC_API_KEY" in output
    assert "default model: local" in output


def test_never_prints_a_key_only_that_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-DO-NOT-PRINT-123456")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8080")
    monkeypatch.setenv("THREADLINE_MODEL", "openai:gpt-4.1")
    output = run()
    data = json.loads(run("--json"))
    assert "DO-NOT-PRINT" not in output and "DO-NOT-PRINT" not in json.dumps(data)
    openai, anthropic = data["providers"][1], data["providers"][2]
    assert openai["key"] == "set" and openai["ready"] is True
    assert anthropic["endpoint"] == "http://127.0.0.1:8080" and anthropic["endpoint_from"] == "ANTHROPIC_BASE_URL"
    assert anthropic["key"] == "not set"
    assert data["default_model"] == "openai:gpt-4.1"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:1/v1?api_key={key}",
        "http://127.0.0.1:1/v1?key=AIzaSyD-OTHER-KEY-0123456789",
        "http://user:{key}@127.0.0.1:1/v1",
        "http://127.0.0.1:1/{key}/v1",
    ],
)
def test_a_key_in_the_base_url_is_masked(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Before, a key carried by OPENAI_BASE_URL (as some gateways take it) was printed in the endpoint column."""
    key = "sk-test-SECRETKEY1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", url.format(key=key))
    output = run() + run("--json")
    assert key not in output and "SECRETKEY" not in output and "OTHER-KEY" not in output
    assert "127.0.0.1:1" in output and "***" in output


def test_families_lists_capabilities() -> None:
    output = run("--families")
    assert "gpt-4o-mini" in output and "claude-sonnet-4" in output
    assert "JSON schema" in output and "final-result tool" in output


def test_resolving_a_provider_imports_httpx_but_not_its_command_line_client() -> None:
    code = (
        "import sys, threadline\n"
        "assert 'httpx' not in sys.modules\n"
        "threadline.get_model('openai:gpt-4o-mini'); threadline.get_model('anthropic:claude-haiku-4-5')\n"
        "assert 'httpx' in sys.modules\n"
        "heavy = ('rich', 'click', 'pygments', 'httpx._main', 'openai', 'anthropic')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import httpx._main\n"  # still importable afterwards
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
