"""Reasoning through every place a log goes (docs/file-format.md#reasoning): SQLite and PostgreSQL, fork (in the store
and in memory), export/import in both file forms, and the CLI's ``export``/``import``. Its fields come back byte for
byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from tests.core.test_reasoning import logs_with_reasoning, reasoning_of, thinking_log
from threadline import Conversation, MessageList
from threadline.store import Store
from threadline.store.jsonfiles import export_layout, read_layout, read_log_file

from ._backends import run_cli

STORE_CASES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@STORE_CASES
@given(logs_with_reasoning())
def test_any_log_with_reasoning_survives_the_store(store: Store, log: MessageList) -> None:
    info = store.create_conversation(title="thinking")
    store.append(info.id, list(log))
    loaded = store.load(info.id)
    assert loaded == log
    assert reasoning_of(loaded) == reasoning_of(log)
    loaded.validate()


@STORE_CASES
@given(logs_with_reasoning())
def test_a_fork_keeps_the_reasoning_it_copies(store: Store, log: MessageList) -> None:
    info = store.create_conversation(title="thinking")
    store.append(info.id, list(log))
    fork = store.fork_conversation(info.id, log[-1].id)
    assert reasoning_of(store.load(fork.id)) == reasoning_of(log)
    in_memory = Conversation(messages=log.copy()).fork(at=log[-1].id)
    assert reasoning_of(in_memory.messages) == reasoning_of(log)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(logs_with_reasoning())
def test_any_log_with_reasoning_survives_export_and_import(tmp_path: Path, log: MessageList) -> None:
    from datetime import UTC, datetime

    from threadline.store import ConversationInfo

    folder = tmp_path / "export"
    now = datetime.now(UTC)
    info = ConversationInfo(id="conv-1", title="t", created_at=now, updated_at=now)
    export_layout(folder, [(info, list(log))])
    (imported,) = read_layout(folder)
    assert reasoning_of(MessageList(imported.messages)) == reasoning_of(log)
    single = tmp_path / "log.json"
    single.write_text(log.to_json())
    assert reasoning_of(MessageList(read_log_file(single).messages)) == reasoning_of(log)


def test_the_cli_exports_and_imports_reasoning(store_url: str, tmp_path: Path) -> None:
    log = thinking_log()
    source = tmp_path / "thinking.json"
    source.write_text(log.to_json())
    env = {"THREADLINE_STORE": store_url}
    done = run_cli("import", str(source), env=env)
    assert done.returncode == 0, done.stderr
    listed = run_cli("logs", "list", "--json", env=env)
    conversation_id = json.loads(listed.stdout)[0]["id"]
    target = tmp_path / "out.json"
    done = run_cli("export", conversation_id, "-o", str(target), env=env)
    assert done.returncode == 0, done.stderr
    exported: dict[str, Any] = json.loads(target.read_text())
    assert exported["version"] == "2.1"
    assert reasoning_of(MessageList.from_dict(exported)) == reasoning_of(log)
