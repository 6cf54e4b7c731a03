"""A model the command cannot use is refused before anything is stored: an unknown provider and a provider's own
endpoint without an API key both end ``prompt`` and ``chat`` with one line and exit code 2, and the store holds no
conversation afterwards (the user's message used to be stored when the key was missing).

No request can leave the machine: the key is missing, and the refusal comes before any is sent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from threadline.store import open_store

from ._run import run_cli


def threadline(*args: str, store_url: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    unset = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "THREADLINE_MODEL")
    return run_cli(*args, store_url=store_url, unset=unset, stdin=stdin if stdin is not None else "")


def stored(store_url: str) -> int:
    with open_store(store_url) as store:
        return len(store.list_conversations())


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("nosuch:model", "unknown model 'nosuch:model'"),
        ("openai:gpt-4o-mini", "no API key for openai:gpt-4o-mini: set OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "no API key for anthropic:claude-sonnet-4-5: set ANTHROPIC_API_KEY"),
    ],
)
@pytest.mark.parametrize("command", ["prompt", "chat"])
def test_a_model_that_cannot_be_used_is_refused_before_anything_is_stored(
    tmp_path: Path, model: str, says: str, command: str
) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    args = ("prompt", "hi", "-m", model) if command == "prompt" else ("chat", "-m", model)
    done = threadline(*args, store_url=store_url, stdin="hi\n")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith("Error: ") and says in line
    assert stored(store_url) == 0
