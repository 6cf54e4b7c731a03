"""Every float option of every command refuses infinity and NaN however they are spelt (issue 31, item 2.11).

Before: ``prompt --temperature inf`` sent ``"temperature": null`` to the model (JSON has no infinity) and
``--wait nan`` was taken. Now each is refused on the command line: one ``Error:`` line naming the option, exit code
2, nothing sent to the model and nothing stored. Real subprocesses, the fake OpenAI server on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from tests.providers.servers import FakeOpenAI
from threadline.cli import cli
from threadline.store import open_store

from ._run import run_cli

SPELLINGS = ("inf", "-inf", "+Infinity", "nan", "NaN", "-nan", "1e999", "-1e400")


@pytest.fixture
def openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def float_options() -> list[tuple[str, str]]:
    """Every (command, option) of the CLI whose value is a float, found by walking the commands (so an option
    added later is covered too)."""
    found: list[tuple[str, str]] = []
    context = click.Context(cli)

    def walk(command: click.Command, path: str) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                if sub is not None:
                    walk(sub, f"{path} {name}".strip())
            return
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, click.types.FloatParamType):
                found.append((path, max(param.opts, key=len)))

    walk(cli, "")
    return found


def test_the_float_options_are_the_ones_checked_here() -> None:
    assert set(float_options()) >= {
        ("prompt", "--temperature"),
        ("prompt", "--wait"),
        ("chat", "--temperature"),
        ("chat", "--wait"),
        ("worker", "--poll"),
        ("enqueue", "--wait"),
    }


# The commands with a float option that do not talk to a model themselves: what else they need to start.
NOT_MODEL_COMMANDS = {"worker": ["--app", "myapp:chat"], "enqueue": ["Hello", "--app", "chat"]}


def command_line(command: str, given: list[str]) -> list[str]:
    """``command`` with the ``given`` options, and what else it needs to get as far as checking them."""
    if command in NOT_MODEL_COMMANDS:
        return [command, *given, *NOT_MODEL_COMMANDS[command]]
    args = [*command.split(), *given, "-m", "openai:gpt-4o-mini"]
    if command == "prompt":
        args.append("Hello")
    return args


def run(command: str, option: str, value: str, server: FakeOpenAI, store_url: str) -> subprocess.CompletedProcess[str]:
    args = command_line(command, [f"{option}={value}"])
    return run_cli(
        *args,
        store_url=store_url,
        env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-non-finite-0123456789"},
        stdin="Hello\n",
    )


@pytest.mark.parametrize(("command", "option"), float_options())
def test_infinity_and_nan_are_refused_with_one_line_and_nothing_is_sent_or_stored(
    command: str, option: str, openai: FakeOpenAI, tmp_path: Path
) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    for value in SPELLINGS:
        openai.reply("never sent")
        done = run(command, option, value, openai, store_url)
        assert done.returncode == 2, (value, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1, done.stderr
        assert option in errors[0] and "finite number" in errors[0], errors[0]
        assert openai.requests == [], value  # before: --temperature inf was sent as "temperature": null
    with open_store(store_url) as store:
        assert store.list_conversations() == []


@pytest.mark.parametrize(
    ("command", "option"), [found for found in float_options() if found[0] not in NOT_MODEL_COMMANDS]
)
def test_a_finite_value_still_works(command: str, option: str, openai: FakeOpenAI, tmp_path: Path) -> None:
    openai.reply("Hi!")
    done = run(command, option, "0.5", openai, f"sqlite:///{tmp_path / 'store.db'}")
    assert done.returncode == 0, done.stderr
    assert "Hi!" in done.stdout
    if option == "--temperature":
        assert openai.requests[0].json["temperature"] == 0.5
