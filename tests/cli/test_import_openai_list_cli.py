"""``threadline import`` of a bare list of OpenAI chat messages keeps the thinking of OpenAI-compatible servers
(``reasoning_content``, or ``reasoning`` as text), as `MessageList.from_json` does; a bad value is one line naming the
file, the position and the field, and nothing is stored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from threadline.store import open_store

from ._run import run_cli


def threadline(*args: str, store_url: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, store_url=store_url)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_import_keeps_the_thinking_of_a_bare_openai_list(tmp_path: Path, field: str) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    log = tmp_path / "chat.json"
    log.write_text(
        json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", field: "I thought."}]),
        encoding="utf-8",
    )
    imported = threadline("import", str(log), store_url=store_url)
    assert imported.returncode == 0, imported.stderr
    conversation_id = imported.stdout.strip()
    shown = threadline("logs", "show", conversation_id, "--json", store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["messages"][1]["reasoning"] == [{"text": "I thought.", "provider": "openai"}]


def test_a_bad_thinking_value_names_the_position_and_stores_nothing(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    log = tmp_path / "chat.json"
    log.write_text(
        json.dumps(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "reasoning": "fine"},
                {"role": "user", "content": "q2"},
                {"role": "assistant", "content": "b", "reasoning_content": ["not", "text"]},
            ]
        ),
        encoding="utf-8",
    )
    imported = threadline("import", str(log), store_url=store_url)
    assert imported.returncode != 0
    (line,) = imported.stderr.strip().splitlines()
    assert line == f"Error: {log}: messages[3]: reasoning_content: expected a string, got list"
    with open_store(store_url) as store:
        assert store.list_conversations() == []
