"""``threadline prompt`` as a user runs it: a subprocess on the embedded model, the answer streamed to stdout, tools
from ``-T module:name``, and one clear line (never a traceback) for every bad option.

What the model says differs between CPUs (llama.cpp is built for the one it runs on), so these tests check what the
command guarantees: what stdout and stderr show is what the store logged, and each tool result is the tool's real
output. Where a test needs an answer of some length, ``-o local_logit_bias`` bans the end of the answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from threadline import AssistantMessage, MessageList, ToolMessage
from threadline.cli._terminal import visible

from ..real_models import never_stop_option

TOOLS_MODULE = '''
class Units:
    """A unit converter."""

    name = "Units"

    def celsius_to_fahrenheit(self, celsius: float) -> str:
        """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
        return f"{celsius:g} °C = {celsius * 9 / 5 + 32:g} °F"


units = Units()


def celsius_to_fahrenheit(celsius: float) -> str:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
    return units.celsius_to_fahrenheit(celsius)


answer = 42
'''


def threadline(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        input=stdin,
        timeout=600,
    )


def shown(log: MessageList) -> str:
    """What the command writes to stdout for a turn's log: each answer's text (escaped where the terminal needs it),
    its line closed."""
    out = ""
    for message in log:
        if isinstance(message, AssistantMessage) and message.content and message.error is None:
            text = visible(message.content)
            out += text if text.endswith("\n") else text + "\n"
    return out


def only_log() -> MessageList:
    """The log of the one conversation in the default store."""
    from threadline import open_store

    with open_store() as store:
        [info] = store.list_conversations(limit=100)
        return store.load(info.id)


def assert_tool_results_shown(log: MessageList, stderr: str, tool: str) -> None:
    """Every call of ``tool`` got the tool's real output for its arguments, and stderr shows each result."""
    calls = {call.id: call for m in log if isinstance(m, AssistantMessage) for call in m.tool_calls}
    results = [m for m in log if isinstance(m, ToolMessage)]
    assert results and all(calls[r.tool_call_id].name == tool and not r.is_error for r in results)
    for result in results:
        celsius = calls[result.tool_call_id].arguments["celsius"]
        assert result.content == f"{celsius:g} °C = {celsius * 9 / 5 + 32:g} °F"
        assert f"← {result.content}" in stderr


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "mytools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    (tmp_path / "broken.py").write_text("raise RuntimeError('this module is broken')\n", encoding="utf-8")
    return tmp_path


def assert_one_line_error(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ")
    for fragment in fragments:
        assert fragment in lines[0]


def test_prompt_answers_on_stdout(workdir: Path) -> None:
    done = threadline(
        "prompt", "What is the capital of France?", "--temperature", "0", "--max-tokens", "24", cwd=workdir
    )
    assert done.returncode == 0, done.stderr
    log = only_log()
    assert [m.role for m in log] == ["user", "assistant"] and log[0].content == "What is the capital of France?"
    assert done.stdout == shown(log)  # the answer, as logged, and nothing else
    assert "Traceback" not in done.stderr
    assert "Loading local:smollm2" in done.stderr  # progress goes to stderr, never into the answer


def test_prompt_streams_the_answer_as_it_is_generated(workdir: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "threadline",
        "prompt",
        "Write a long story about a dragon.",
        "--max-tokens",
        "150",
        *never_stop_option(),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    reads: list[bytes] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=workdir, env=env) as process:
        assert process.stdout is not None
        while True:
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            reads.append(chunk)
        assert process.wait(timeout=600) == 0
    # Written token by token and flushed: the pipe delivers the answer in many pieces, not once at exit.
    assert len(reads) >= 5
    log = only_log()
    answer = log[-1]
    assert isinstance(answer, AssistantMessage) and answer.usage is not None and answer.usage.output_tokens == 150
    assert b"".join(reads).decode() == shown(log)


def test_prompt_reads_stdin(workdir: Path) -> None:
    done = threadline("prompt", "--max-tokens", "12", cwd=workdir, stdin="Say hello.")
    assert done.returncode == 0, done.stderr
    log = only_log()
    assert [m.role for m in log] == ["user", "assistant"] and log[0].content == "Say hello."
    assert done.stdout == shown(log)


def test_prompt_with_a_function_tool(workdir: Path) -> None:
    done = threadline(
        "prompt",
        "What is 20 degrees Celsius in Fahrenheit?",
        "-T",
        "mytools:celsius_to_fahrenheit",
        "--tool-choice",
        "required",
        "--temperature",
        "0",
        "--max-tokens",
        "48",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr
    # The call and its real result are shown together on stderr; the answer is on stdout.
    assert "→ celsius_to_fahrenheit(" in done.stderr
    log = only_log()
    assert_tool_results_shown(log, done.stderr, "celsius_to_fahrenheit")
    assert done.stdout == shown(log)


def test_prompt_with_an_object_whose_methods_are_tools(workdir: Path) -> None:
    done = threadline(
        "prompt",
        "What is 100 degrees Celsius in Fahrenheit?",
        "-T",
        "mytools:units",
        "--tool-choice",
        "required",
        "--temperature",
        "0",
        "--max-tokens",
        "48",
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr
    assert "→ Units.celsius_to_fahrenheit(" in done.stderr
    assert_tool_results_shown(only_log(), done.stderr, "Units.celsius_to_fahrenheit")


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("nocolon", ("bad tool 'nocolon'", "expected MODULE:NAME")),
        (":f", ("bad tool ':f'", "expected MODULE:NAME")),
        ("mytools:", ("bad tool 'mytools:'",)),
        ("no_such_module:f", ("cannot import 'no_such_module'",)),
        ("mytools:missing", ("mytools has no attribute 'missing'",)),
        ("mytools:Units", ("Units is a class",)),
        ("mytools:answer", ("answer is a int value",)),
        ("broken:f", ("importing broken failed", "RuntimeError: this module is broken")),
        ("missing_file.py:f", ("no file missing_file.py",)),
    ],
)
def test_bad_tool_spec_is_one_line(workdir: Path, spec: str, fragments: tuple[str, ...]) -> None:
    done = threadline("prompt", "hi", "-T", spec, cwd=workdir)
    assert_one_line_error(done, *fragments)
    assert done.returncode == 2


UNREADABLE_MODULE = """
class Unreadable(Exception):
    def __str__(self):
        raise SystemExit("from __str__")

raise Unreadable
"""


def test_a_tool_module_failing_with_an_unreadable_error_is_one_line(workdir: Path) -> None:
    # Issue 31: reading the error's message raised SystemExit, which ended the command with its text as the error.
    (workdir / "unreadable.py").write_text(UNREADABLE_MODULE, encoding="utf-8")
    done = threadline("prompt", "hi", "-T", "unreadable:f", cwd=workdir)
    assert_one_line_error(done, "importing unreadable failed: Unreadable (its message could not be read)")
    assert done.returncode == 2


def test_unknown_model_is_one_line(workdir: Path) -> None:
    done = threadline("prompt", "hi", "-m", "nope:model", cwd=workdir)
    assert_one_line_error(done, "unknown model 'nope:model'")


def test_missing_gguf_file_is_one_line(workdir: Path) -> None:
    done = threadline("prompt", "hi", "-m", "local:/nonexistent.gguf", cwd=workdir)
    assert_one_line_error(done, "no GGUF model file at /nonexistent.gguf")


def test_tool_choice_for_a_tool_that_is_not_offered_is_one_line(workdir: Path) -> None:
    done = threadline("prompt", "hi", "-T", "mytools:celsius_to_fahrenheit", "--tool-choice", "launch", cwd=workdir)
    assert_one_line_error(done, "tool_choice names 'launch', which is not offered")


def test_o_sets_a_provider_setting_that_has_no_flag(workdir: Path) -> None:
    """``-o NAME VALUE`` (llm's habit) reaches the model: a strong bias towards one token makes every token it."""
    from threadline import get_model

    local = get_model("local")
    token = local.llama.tokenize(b" banana", add_bos=False, special=False)[0]  # type: ignore[attr-defined]
    bias = json.dumps({str(token): 100})
    done = threadline("prompt", "Say something.", "--max-tokens", "4", "-o", "local_logit_bias", bias, cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("banana") == 4
    answer = only_log()[-1]
    assert isinstance(answer, AssistantMessage) and answer.content is not None and answer.content.count("banana") == 4


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        (("-o", "local_top_q", "3"), ("unknown setting 'local_top_q' for the local model",)),
        (("-o", "top_q", "3"), ("unknown setting 'top_q'", "provider-prefixed extra")),
        (("-o", "temperature", "Infinity"), ("-o temperature Infinity: the value must be a finite number",)),
        (("-o", "local_top_p", "1e999"), ("-o local_top_p 1e999: the value must be a finite number",)),
        (("-o", "local_logit_bias", '{"2": NaN}'), ("the value must be a finite number",)),
        (("-o", "temperature", "0", "--temperature", "1"), ("temperature is given twice",)),
        (("-o", "local_seed", "1", "-o", "local_seed", "2"), ("-o local_seed is given twice",)),
    ],
)
def test_a_bad_o_setting_is_one_line_and_nothing_is_stored(
    workdir: Path, options: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    done = threadline("prompt", "hi", *options, cwd=workdir)
    assert_one_line_error(done, *fragments)
    assert done.returncode == 2
    assert _stored() == []


def test_empty_prompt_is_a_usage_error(workdir: Path) -> None:
    done = threadline("prompt", "   ", cwd=workdir)
    assert done.returncode == 2
    assert "the prompt is empty" in done.stderr
    assert "Traceback" not in done.stderr


def test_chat_keeps_the_conversation_across_lines(workdir: Path) -> None:
    done = threadline(
        "chat",
        "--temperature",
        "0",
        "--max-tokens",
        "30",
        cwd=workdir,
        stdin="What is the capital of France?\nAnd of Italy?\n",
    )
    assert done.returncode == 0, done.stderr
    # One conversation holds both exchanges, so "And of Italy?" was asked with the first one in its context.
    log = only_log()
    assert [(m.role, m.content) for m in log if m.role == "user"] == [
        ("user", "What is the capital of France?"),
        ("user", "And of Italy?"),
    ]
    assert [m.role for m in log] == ["user", "assistant", "user", "assistant"]
    assert done.stdout == shown(log)


# -- the store: every prompt is logged; -c and --cid continue --------------------------------------------------------
def _stored() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every stored conversation (most recent first) as (id, [(role, content)]), read from the default store."""
    from threadline import open_store

    with open_store() as store:
        return [
            (info.id, [(m.role, m.content) for m in store.load(info.id)])
            for info in store.list_conversations(limit=100)
        ]


def test_prompt_logs_to_the_store_and_continues_with_c_and_cid(workdir: Path) -> None:
    first = threadline("prompt", "Say hello.", "--max-tokens", "8", cwd=workdir)
    assert first.returncode == 0, first.stderr
    [(first_id, log)] = _stored()
    assert [role for role, _ in log] == ["user", "assistant"] and log[0][1] == "Say hello."
    assert f"conversation {first_id}" in first.stderr

    again = threadline("prompt", "-c", "Say it again.", "--max-tokens", "8", cwd=workdir)
    assert again.returncode == 0, again.stderr
    [(same_id, log)] = _stored()
    assert same_id == first_id
    assert [content for role, content in log if role == "user"] == ["Say hello.", "Say it again."]
    assert len(log) == 4

    other = threadline("prompt", "Name a fruit.", "--max-tokens", "8", cwd=workdir)
    assert other.returncode == 0, other.stderr
    by_id = dict(_stored())
    assert len(by_id) == 2
    # --cid continues the older one, not the latest.
    older = threadline("prompt", "--cid", first_id, "One more time.", "--max-tokens", "8", cwd=workdir)
    assert older.returncode == 0, older.stderr
    by_id = dict(_stored())
    assert [content for role, content in by_id[first_id] if role == "user"][-1] == "One more time."
    assert len(by_id[first_id]) == 6
    other_id = next(cid for cid in by_id if cid != first_id)
    assert len(by_id[other_id]) == 2


def test_prompt_store_errors_are_one_line(workdir: Path) -> None:
    assert_one_line_error(threadline("prompt", "-c", "hi", cwd=workdir), "no conversation to continue")
    assert_one_line_error(threadline("prompt", "--cid", "nope", "hi", cwd=workdir), "no conversation 'nope'")
    assert_one_line_error(threadline("prompt", "-c", "--cid", "x", "hi", cwd=workdir), "either -c")
    assert_one_line_error(threadline("prompt", "--no-log", "-c", "hi", cwd=workdir), "--no-log")
    assert _stored() == []


def test_prompt_no_log_keeps_nothing(workdir: Path) -> None:
    done = threadline("prompt", "--no-log", "Say hello.", "--max-tokens", "8", *never_stop_option(), cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert done.stdout  # eight tokens of answer were shown
    assert _stored() == []


@pytest.mark.parametrize("args", [("prompt", "--cid", "", "Hello."), ("prompt", "--cid", "  ", "Hello.")])
def test_an_empty_cid_is_refused_and_nothing_is_stored(workdir: Path, args: tuple[str, ...]) -> None:
    """Before, ``--cid ""`` started a new conversation, as if no id had been given."""
    done = threadline(*args, cwd=workdir)
    assert done.returncode == 2
    assert "an empty id names no conversation" in done.stderr and "Traceback" not in done.stderr
    assert _stored() == []


def test_import_refuses_an_empty_cid(workdir: Path) -> None:
    (workdir / "log.json").write_text('{"version": "2.0", "messages": []}', encoding="utf-8")
    done = threadline("import", str(workdir / "log.json"), "--cid", "", cwd=workdir)
    assert done.returncode == 2
    assert "an empty id names no conversation" in done.stderr
    assert _stored() == []
