"""``threadline export`` and ``threadline import`` as a user runs them (subprocesses), on SQLite and PostgreSQL:
MessageList JSON files and the conversations/ layout, out and back in; an import completes or writes nothing."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json
from pathlib import Path

from tests.store._backends import backend_url, run_cli, store, store_url  # noqa: F401 - fixtures
from tests.store.test_jsonfiles import OLD_INDEX, OLD_MESSAGES, write_layout
from tests.store.test_store_api import every_kind
from threadline import MessageList, UserMessage
from threadline.store import Store, open_store


def test_export_json_to_stdout_and_to_a_file(store_url: str, store: Store, tmp_path: Path) -> None:
    info = store.create_conversation("Kinds")
    messages = every_kind()
    store.append(info.id, messages)
    done = run_cli("export", info.id, "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert list(MessageList.from_json(done.stdout)) == messages
    target = tmp_path / "out" / "log.json"
    written = run_cli("export", info.id, "-o", str(target), "--store", store_url)
    assert written.returncode == 0, written.stderr
    assert json.loads(target.read_text())["version"] == "2.1"
    assert list(MessageList.from_json(target.read_bytes())) == messages
    assert f"Exported {info.id} (9 messages)" in written.stderr


def test_import_a_log_file_then_continue_it(store_url: str, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(MessageList([UserMessage(content="Imported question"), *every_kind()[2:6]]).to_json())
    done = run_cli("import", str(path), "--cid", "imported-1", "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported-1"
    assert "Imported 1 conversation(s), 5 messages" in done.stderr
    assert store.get_conversation("imported-1").title == "Imported question"
    assert [m.id for m in store.load("imported-1")] == [m.id for m in MessageList.from_json(path.read_bytes())]
    again = run_cli("import", str(path), "--store", store_url)  # without --cid: a new conversation
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() != "imported-1" and store.has_conversation(again.stdout.strip())


def test_import_the_old_layout_directory(store_url: str, store: Store, tmp_path: Path) -> None:
    write_layout(tmp_path, OLD_INDEX, {"conv-old": OLD_MESSAGES})
    done = run_cli("import", str(tmp_path), "--store", store_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["conv-old", "conv-empty"]
    assert "Imported 2 conversation(s), 7 messages" in done.stderr
    shown = run_cli("logs", "show", "conv-old", "--store", store_url)
    assert '→ search({"q": "Rome hotels"})' in shown.stdout and "← 3 hotels" in shown.stdout
    assert "failed: timeout: request timed out" in shown.stdout


def test_layout_export_then_import_into_another_store(store_url: str, store: Store, tmp_path: Path) -> None:
    first = store.create_conversation("First")
    store.append(first.id, every_kind())
    second = store.create_conversation("Second")
    store.append(second.id, [UserMessage(content="hello")])
    done = run_cli("export", "--all", "--layout", "files", "-o", str(tmp_path / "dump"), "--store", store_url)
    assert done.returncode == 0, done.stderr
    index = json.loads((tmp_path / "dump" / "conversations" / "index.json").read_text())
    assert {entry["id"] for entry in index} == {first.id, second.id}
    with backend_url("sqlite" if store_url.startswith("postgres") else "postgres", tmp_path) as other_url:
        imported = run_cli("import", str(tmp_path / "dump"), "--store", other_url)
        assert imported.returncode == 0, imported.stderr
        with open_store(other_url) as other:
            for info in (first, second):
                assert list(other.load(info.id)) == list(store.load(info.id))
                assert other.get_conversation(info.id).title == info.title
    single = run_cli("export", first.id, "--layout", "files", "-o", str(tmp_path / "one"), "--store", store_url)
    assert single.returncode == 0, single.stderr
    assert (tmp_path / "one" / "conversations" / first.id / "messages.json").is_file()


def test_a_malformed_layout_imports_nothing(store_url: str, store: Store, tmp_path: Path) -> None:
    bad = [*OLD_MESSAGES, {"role": "tool", "tool_call_id": "never-called", "content": "orphan"}]
    write_layout(tmp_path, OLD_INDEX, {"conv-old": OLD_MESSAGES, "conv-empty": bad})
    done = run_cli("import", str(tmp_path), "--store", store_url)
    assert done.returncode == 1
    error = done.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert "conv-empty/messages.json" in error and "message 7" in error
    assert store.list_conversations() == []  # conv-old was fine, and was not written either


def test_importing_the_same_layout_twice_is_refused_whole(store_url: str, store: Store, tmp_path: Path) -> None:
    write_layout(tmp_path, OLD_INDEX, {"conv-old": OLD_MESSAGES})
    assert run_cli("import", str(tmp_path), "--store", store_url).returncode == 0
    store.delete_conversation("conv-empty")
    again = run_cli("import", str(tmp_path), "--store", store_url)
    assert again.returncode == 1
    assert "already exists" in again.stderr and "nothing was imported" in again.stderr
    assert not store.has_conversation("conv-empty")
    assert store.get_conversation("conv-old").message_count == 7


def test_bad_input_files_and_arguments_are_clear_errors(store_url: str, store: Store, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": "2.0", "messages": [{"role": "user"')
    done = run_cli("import", str(broken), "--store", store_url)
    assert done.returncode == 1 and "broken.json" in done.stderr and "not valid JSON" in done.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"version": "2.0", "messages": [{"role": "user", "content": 3}]}')
    done = run_cli("import", str(wrong), "--store", store_url)
    assert done.returncode == 1 and "messages[0]" in done.stderr and "content" in done.stderr
    assert run_cli("import", str(tmp_path / "missing.json"), "--store", store_url).returncode == 2
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    done = run_cli("import", str(empty_dir), "--store", store_url)
    assert done.returncode == 1 and "no conversations/index.json" in done.stderr
    assert store.list_conversations() == []

    assert run_cli("export", "nope", "--store", store_url).returncode == 1
    for args, message in (
        (["export", "--all"], "--all needs --layout files"),
        (["export"], "give a conversation ID or --all"),
        (["export", "x", "--layout", "files"], "needs -o DIRECTORY"),
    ):
        done = run_cli(*args, "--store", store_url)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
