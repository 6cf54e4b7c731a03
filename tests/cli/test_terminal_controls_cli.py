"""Terminal control sequences in what a model, a tool, a server or a file says never reach the terminal raw: the CLI
shows them escaped (``\\x1b[31m``), on every path that prints such text, and keeps newlines, tabs and ordinary
Unicode as they are.

The model is the fake OpenAI-compatible server on 127.0.0.1 (``OPENAI_BASE_URL``); the commands run as a user runs
them, in a subprocess, off a terminal (so rich adds no escapes of its own and any ESC in the output came from the
data)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.servers import Status, ToolUse
from tests.providers.servers.compatible import FakeCompatible, Thinking
from threadline.store import open_store

from ._run import run_cli

MODEL = "openai:DeepSeek-R1-Distill-Qwen-1.5B"
RED = "\x1b[31m"
TITLE = "\x1b]0;pwned\x07"  # OSC 0: sets the window title
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: writes "evil" to the clipboard
CSI_C1 = "\x9b2J"  # the one-character CSI: clears the screen on terminals that read C1 controls
EVIL = f"{RED}red{TITLE}{CLIPBOARD}{CSI_C1}"
SHOWN = "\\x1b[31mred\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07\\x9b2J"
UNICODE = "Ünïcödé 日本語 café 🙂"
RAW = ("\x1b", "\x07", "\x9b")


@pytest.fixture
def server() -> Iterator[FakeCompatible]:
    fake = FakeCompatible().start()
    try:
        yield fake  # type: ignore[misc]
    finally:
        fake.stop()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def threadline(
    *args: str, server: FakeCompatible, store_url: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-terminal-controls"}
    return run_cli(
        *args, store_url=store_url, env=env, unset=("NO_COLOR", "FORCE_COLOR", "TERM"), stdin=stdin, columns=400
    )


def assert_no_raw_controls(*outputs: str) -> None:
    for output in outputs:
        for control in RAW:
            assert control not in output, f"raw {control!r} in {output!r}"


def only_conversation(store_url: str) -> str:
    with open_store(store_url) as store:
        (info,) = store.list_conversations()
    return info.id


def test_prompt_escapes_the_answer_and_the_thinking_and_keeps_unicode(server: FakeCompatible, store_url: str) -> None:
    server.add(Thinking(f"{EVIL}\n{UNICODE}\tend", reasoning=f"thinking {EVIL}"))
    done = threadline("prompt", "-m", MODEL, "--show-reasoning", "hi", server=server, store_url=store_url)
    assert done.returncode == 0, done.stderr
    assert_no_raw_controls(done.stdout, done.stderr)
    assert done.stdout == f"{SHOWN}\n{UNICODE}\tend\n"  # newlines and tabs are kept
    assert f"thinking {SHOWN}" in done.stderr


def test_a_carriage_return_is_shown_and_a_crlf_is_a_newline_even_split_between_pieces(
    server: FakeCompatible, store_url: str
) -> None:
    # The fake streams five characters at a time: "one!\r" | "\ntwo" — the CRLF is split between two pieces.
    server.add(Thinking("one!\r\ntwo\rfake", reasoning=""))
    done = threadline("prompt", "-m", MODEL, "--no-log", "hi", server=server, store_url=store_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one!\ntwo\\x0dfake\n"


def test_chat_escapes_the_answer_and_the_thinking(server: FakeCompatible, store_url: str) -> None:
    server.add(Thinking(f"answer {EVIL}", reasoning=f"thought {EVIL}"))
    done = threadline(
        "chat", "-m", MODEL, "--show-reasoning", "--no-log", server=server, store_url=store_url, stdin="hi\n"
    )
    assert done.returncode == 0, done.stderr
    assert_no_raw_controls(done.stdout, done.stderr)
    assert f"answer {SHOWN}" in done.stdout and f"thought {SHOWN}" in done.stderr


def test_tool_calls_and_results_are_escaped_live_and_in_logs_show(
    server: FakeCompatible, store_url: str, tmp_path: Path
) -> None:
    (tmp_path / "evil_tools.py").write_text(
        f'def lookup(key: str) -> str:\n    """Look a key up."""\n    return {EVIL + " " + UNICODE!r}\n',
        encoding="utf-8",
    )
    arguments = json.dumps({"key": f"k{RED}\x9b"})  # json escapes ESC as \\u001b; the C1 CSI stays raw
    server.add(Thinking(tool_calls=(ToolUse("lookup", arguments),), reasoning=""), Thinking("done", reasoning=""))
    done = threadline(
        "prompt", "-m", MODEL, "-T", f"{tmp_path / 'evil_tools.py'}:lookup", "look it up",
        server=server, store_url=store_url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_no_raw_controls(done.stdout, done.stderr)
    assert f"{SHOWN} {UNICODE}" in done.stderr
    assert "\\u009b" in done.stderr  # the argument, as JSON that says what was sent

    shown = threadline("logs", "show", only_conversation(store_url), server=server, store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    assert_no_raw_controls(shown.stdout, shown.stderr)
    assert SHOWN in shown.stdout and "\\u009b" in shown.stdout


def test_a_server_error_is_escaped_when_it_fails_and_in_logs_show(server: FakeCompatible, store_url: str) -> None:
    server.add(Status(400, {"error": {"message": f"bad request {EVIL}", "type": "invalid_request_error"}}))
    failed = threadline("prompt", "-m", MODEL, "hi", server=server, store_url=store_url)
    assert failed.returncode != 0
    assert_no_raw_controls(failed.stdout, failed.stderr)
    assert f"bad request {SHOWN}" in failed.stderr

    shown = threadline("logs", "show", only_conversation(store_url), server=server, store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    assert_no_raw_controls(shown.stdout, shown.stderr)
    assert f"bad request {SHOWN}" in shown.stdout  # the logged failure


def test_an_imported_log_is_escaped_by_logs_list_show_and_json_and_by_export(
    server: FakeCompatible, store_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "evil.json"
    log.write_text(
        json.dumps(
            [
                {"role": "system", "content": f"system {EVIL}"},
                {"role": "user", "content": f"title {EVIL}"},
                {
                    "role": "assistant",
                    "content": f"answer {EVIL} {UNICODE}",
                    "reasoning": [{"text": f"thought {EVIL}", "provider": "openai"}],
                    "model": f"model{TITLE}",
                },
            ]
        ),
        encoding="utf-8",
    )
    imported = threadline("import", str(log), server=server, store_url=store_url)
    assert imported.returncode == 0, imported.stderr
    conversation_id = imported.stdout.strip()

    listed = threadline("logs", "list", server=server, store_url=store_url)
    shown = threadline("logs", "show", conversation_id, "--show-reasoning", "--context", server=server,
                       store_url=store_url)  # fmt: skip
    as_json = threadline("logs", "show", conversation_id, "--json", server=server, store_url=store_url)
    listed_json = threadline("logs", "list", "--json", server=server, store_url=store_url)
    exported = threadline("export", conversation_id, server=server, store_url=store_url)
    for done in (listed, shown, as_json, listed_json, exported):
        assert done.returncode == 0, done.stderr
        assert_no_raw_controls(done.stdout, done.stderr)
    assert "title \\x1b[31mred" in listed.stdout
    assert f"answer {SHOWN} {UNICODE}" in shown.stdout
    assert f"thought {SHOWN}" in shown.stdout and f"system {SHOWN}" in shown.stdout
    assert "assistant · model\\x1b]0;pwned\\x07" in shown.stdout  # the answer box's title
    assert f"    title {SHOWN}" in shown.stdout  # the request the next turn would send (--context)
    # JSON output is the same JSON value, every control written as an escape.
    assert json.loads(as_json.stdout)["messages"][2]["content"] == f"answer {EVIL} {UNICODE}"
    assert json.loads(exported.stdout)["messages"][1]["content"] == f"title {EVIL}"
    assert json.loads(listed_json.stdout)[0]["title"].startswith(f"title {RED}")


# Bidi overrides, embeddings, isolates and marks make the rest of a line read reversed ("Trojan Source"); line and
# paragraph separators and the zero-width no-break space break or hide it. Each is shown as its escape.
BIDI = "a\u202eevil\u202c b\u2066x\u2069 \u200e\u200f\u061c c\u2028d\u2029e\ufefff \u202a\u202b\u202d\u2067\u2068"
BIDI_SHOWN = (
    "a\\u202eevil\\u202c b\\u2066x\\u2069 \\u200e\\u200f\\u061c c\\u2028d\\u2029e\\ufefff "
    "\\u202a\\u202b\\u202d\\u2067\\u2068"
)
BIDI_RAW = tuple(dict.fromkeys(c for c in BIDI if not c.isascii()))


def test_bidi_and_invisible_format_characters_are_escaped_live_in_logs_show_and_in_json(
    server: FakeCompatible, store_url: str
) -> None:
    server.add(Thinking(f"answer {BIDI} 日本語 👩‍💻", reasoning=f"thought {BIDI}"))
    done = threadline("prompt", "-m", MODEL, "--show-reasoning", "hi", server=server, store_url=store_url)
    shown = threadline("logs", "show", only_conversation(store_url), "--show-reasoning", server=server,
                       store_url=store_url)  # fmt: skip
    as_json = threadline("logs", "show", only_conversation(store_url), "--json", server=server, store_url=store_url)
    for output in (done, shown, as_json):
        assert output.returncode == 0, output.stderr
        for character in BIDI_RAW:
            assert character not in output.stdout + output.stderr, f"raw {character!r}"
    assert done.stdout == f"answer {BIDI_SHOWN} 日本語 👩‍💻\n"  # the zero-width joiner of an emoji is kept
    assert f"thought {BIDI_SHOWN}" in done.stderr
    assert f"answer {BIDI_SHOWN}" in shown.stdout and f"thought {BIDI_SHOWN}" in shown.stdout
    assert json.loads(as_json.stdout)["messages"][1]["content"] == f"answer {BIDI} 日本語 👩‍💻"  # the same JSON value
