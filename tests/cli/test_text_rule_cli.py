"""Bytes that are not UTF-8 on the command line and on stdin of ``threadline prompt`` (issue 8, item 2): Python hands
them over as lone surrogates; the turn runs on the embedded model, and the stored log holds U+FFFD and validates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from threadline import MessageList
from threadline.store import open_store


def run(*args: str | bytes, home: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "THREADLINE_HOME": str(home), "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args], capture_output=True, env=env, input=stdin, timeout=600
    )


def test_prompt_with_argv_and_stdin_that_are_not_utf8(tmp_path: Path) -> None:
    from_argv = run("prompt", b"name report-\xff.txt", "-s", b"system \xfe", "--max-tokens", "3", home=tmp_path)
    assert from_argv.returncode == 0, from_argv.stderr.decode(errors="replace")
    from_stdin = run("prompt", "--max-tokens", "3", home=tmp_path, stdin=b"stdin report-\xff.txt\n")
    assert from_stdin.returncode == 0, from_stdin.stderr.decode(errors="replace")
    for done in (from_argv, from_stdin):
        assert b"Traceback" not in done.stderr

    with open_store(f"sqlite:///{tmp_path / 'threadline.db'}") as store:
        infos = store.list_conversations()
        logs = {info.title: store.load(info.id) for info in infos}
    assert set(logs) == {"name report-\ufffd.txt", "stdin report-\ufffd.txt"}
    argv_log, stdin_log = logs["name report-\ufffd.txt"], logs["stdin report-\ufffd.txt"]
    assert [m.role for m in argv_log][:2] == ["system", "user"]
    assert argv_log[0].content == "system \ufffd"
    assert argv_log[1].content == "name report-\ufffd.txt"
    assert stdin_log[0].content.strip() == "stdin report-\ufffd.txt"
    for log in (argv_log, stdin_log):
        log.validate()
        assert MessageList.from_json(log.to_json()) == log

    shown = run("logs", "show", infos[0].id, home=tmp_path)
    assert shown.returncode == 0 and "report-\ufffd.txt" in shown.stdout.decode("utf-8")
