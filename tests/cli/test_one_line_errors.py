"""One clear line on stderr and a non-zero exit, never a traceback (issue 8, item 15), for hostile files and URLs:
``threadline import`` of invalid UTF-8, of arguments nested 1,000+ deep, of a repeated message id, of times with no
UTC equivalent (also met by ``export --layout files``), and ``--store "postgresql://[::1"``. Each import that fails
writes nothing; ``"\\ud800"`` escapes import under the text rule. Run as subprocesses, on SQLite and PostgreSQL."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.store._backends import run_cli, store, store_url  # noqa: F401 - fixtures
from tests.store.test_jsonfiles import write_layout
from threadline import MessageList, UserMessage
from threadline.store import Store, open_store

DEEP = 1_200


def assert_one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def assert_nothing_imported(store: Store) -> None:
    assert store.list_conversations() == []


def v2(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"version": "2.0", "messages": list(messages)}


def test_import_of_a_file_that_is_not_utf8(store_url: str, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(v2({"role": "user", "content": "@"})).replace("@", "caf\xe9").encode("latin-1"))
    assert_one_line_error(run_cli("import", str(path), "--store", store_url), str(path))
    write_layout(tmp_path / "layout", [{"id": "c1", "title": "x"}], {})
    (tmp_path / "layout" / "conversations" / "c1").mkdir(parents=True)
    (tmp_path / "layout" / "conversations" / "c1" / "messages.json").write_bytes(
        b'[{"role": "user", "content": "\xff"}]'
    )
    assert_one_line_error(run_cli("import", str(tmp_path / "layout"), "--store", store_url), "messages.json")
    assert_nothing_imported(store)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("form", ["v2", "openai-object", "layout-text", "layout-object"])
def test_import_of_arguments_nested_more_than_a_thousand_deep(
    form: str, store_url: str, store: Store, tmp_path: Path
) -> None:
    deep = nested(DEEP)
    if form == "v2":
        text = json.dumps(v2({"role": "assistant", "tool_calls": [{"id": "c", "name": "f", "arguments": {"x": "@"}}]}))
        source = tmp_path / "log.json"
        source.write_text(text.replace('"@"', deep))
    elif form == "openai-object":
        text = json.dumps(
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": "@"}}}]}]
        )
        source = tmp_path / "log.json"
        source.write_text(text.replace('"@"', deep))
    else:
        arguments: Any = json.dumps({"x": "@"}).replace('"@"', deep) if form == "layout-text" else {"x": "@"}
        messages = [
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": arguments}}]}
        ]
        write_layout(tmp_path, [{"id": "c1", "title": "deep"}], {"c1": messages})
        file = tmp_path / "conversations" / "c1" / "messages.json"
        if form == "layout-object":
            file.write_text(file.read_text().replace('"@"', deep))
        source = tmp_path
    done = run_cli("import", str(source), "--store", store_url)
    if form == "layout-text":
        # Arguments given as text too deep to parse are kept as the text the model sent (as the readers keep any
        # arguments that are not a JSON object): the import succeeds and the log shows them raw.
        assert done.returncode == 0, done.stderr
        (info,) = store.list_conversations()
        call = store.load(info.id)[0].tool_calls[0]
        assert call.arguments == {} and call.raw_arguments is not None and call.raw_arguments.count("[") == DEEP
        return
    assert_one_line_error(done, "nested too deeply")
    assert_nothing_imported(store)


def test_import_of_lone_surrogate_escapes_applies_the_text_rule(store_url: str, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text('{"version": "2.0", "messages": [{"role": "user", "content": "report-\\udcff.txt"}]}')
    layout_messages = [{"role": "user", "content": "@", "toolName": "@"}]
    write_layout(tmp_path / "layout", [{"id": "c1", "title": "@"}], {"c1": layout_messages})
    for file in (tmp_path / "layout" / "conversations").rglob("*.json"):
        file.write_text(file.read_text().replace('"@"', '"report-\\udcff.txt"'))
    for source in (path, tmp_path / "layout"):
        done = run_cli("import", str(source), "--store", store_url)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
    titles = sorted(info.title or "" for info in store.list_conversations())
    assert titles == ["report-\ufffd.txt", "report-\ufffd.txt"]
    for info in store.list_conversations():
        log = store.load(info.id)
        log.validate()
        assert log[0].content == "report-\ufffd.txt"


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_import_of_a_time_with_no_utc_equivalent(stamp: str, store_url: str, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(json.dumps(v2({"role": "user", "content": "hi", "created_at": stamp})))
    assert_one_line_error(run_cli("import", str(path), "--store", store_url), "messages[0]", "UTC")
    write_layout(
        tmp_path / "a", [{"id": "c1", "title": "x"}], {"c1": [{"role": "user", "content": "hi", "createdAt": stamp}]}
    )
    assert_one_line_error(run_cli("import", str(tmp_path / "a"), "--store", store_url), "createdAt")
    write_layout(tmp_path / "b", [{"id": "c2", "title": "x", "updatedAt": stamp}], {})
    assert_one_line_error(run_cli("import", str(tmp_path / "b"), "--store", store_url), "updatedAt")
    assert_nothing_imported(store)


def test_export_of_a_stored_time_with_no_utc_equivalent(tmp_path: Path) -> None:
    # What an older threadline could store: a message time with an offset whose UTC equivalent overflows.
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with open_store(url) as store:
        info = store.create_conversation("old")
        message = UserMessage(content="hi")
        store.append(info.id, [message])
    with sqlite3.connect(tmp_path / "old.db") as conn:
        row = conn.execute("SELECT data FROM messages").fetchone()
        data = bytes(row[0]).replace(
            message.created_at.isoformat().replace("+00:00", "Z").encode(), b"9999-12-31T23:59:59-01:00"
        )
        assert data != bytes(row[0])
        conn.execute("UPDATE messages SET data = ?", (data,))
    for layout in ("files", "json"):
        done = run_cli(
            "export",
            "--all" if layout == "files" else info.id,
            "--layout",
            layout,
            "-o",
            str(tmp_path / f"out-{layout}"),
            "--store",
            url,
        )
        assert_one_line_error(done, "UTC")


def test_import_of_a_repeated_message_id(store_url: str, store: Store, tmp_path: Path) -> None:
    message = UserMessage(content="once")
    path = tmp_path / "log.json"
    path.write_text(
        json.dumps({"version": "2.0", "messages": [json.loads(MessageList([message]).to_json())["messages"][0]] * 2})
    )
    assert_one_line_error(run_cli("import", str(path), "--store", store_url), "messages[1].id", message.id)
    write_layout(
        tmp_path / "layout",
        [{"id": "c1", "title": "x"}],
        {"c1": [{"id": "m1", "role": "user", "content": "a"}, {"id": "m1", "role": "assistant", "content": "b"}]},
    )
    assert_one_line_error(run_cli("import", str(tmp_path / "layout"), "--store", store_url), "m1")
    assert_nothing_imported(store)


@pytest.mark.parametrize(
    "url", ["postgresql://[::1", "postgresql://user:s3cret@[::1/db", "sqlite://[::1", "postgresql://u:s3cret@h:99999/d"]
)
def test_a_malformed_store_url(url: str, tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text(MessageList([UserMessage(content="hi")]).to_json())
    for command in (["logs", "list"], ["import", str(log)], ["export", "--all", "--layout", "files", "-o", "out"]):
        done = run_cli(*command, "--store", url)
        assert_one_line_error(done, "store URL")
        assert "s3cret" not in done.stderr
