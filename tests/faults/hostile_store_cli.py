"""Hostile rounds of issue 31 for the stores and the CLI: PostgreSQL going away while ``prompt -c`` runs a streamed
tool loop, float options given infinity or NaN, and ``logs show --all`` of long logs read while they grow.

Each function tries its fault ``cases`` times, varied at random (``seed``), and counts in a `Row` what a user would
lose: an answer shown but not saved without a word (``lost``), a message missing from the log (``lost``), a stored
log that does not validate (``invalid``), and anything else that went wrong (a traceback, the driver's own log lines
on the terminal, a wrong exit code) as a failed case.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tests.cli._dropping_server import DropDuring, DroppingOpenAI
from tests.cli.test_non_finite_options_cli import command_line, float_options
from tests.providers.servers import Answer, FakeOpenAI, ToolUse
from tests.store._pg_drops import POSTGRES_DSN, PrivateServer, application_name, terminate, with_query
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    MessageList,
    ProtocolError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    llm,
)
from threadline.messages import Message
from threadline.store import open_store
from threadline.testing import ScriptedModel

from .campaign import Row
from .processes import ROOT, child_env

TOOLS = '''
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}, 21 degrees"
'''
NOISE = ("Traceback", "psycopg", "discarding", "error connecting", "WARNING")
NOT_SAVED = "the answer shown above was not saved"
WORDS = ("sunny", "rain", "over the fjord", "21 degrees", "wind from the west", "Oslo", "tomorrow", "clouds")


def _threadline(
    args: list[str], directory: Path, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    full = {**child_env(), "COLUMNS": "120", "PYTHONIOENCODING": "utf-8", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=directory,
        env=full,
        input=stdin,
        timeout=300,
    )


def _problem(log: MessageList) -> str | None:
    """Why a stored log is invalid (it does not validate, or holds an id twice), or None."""
    try:
        log.validate()
    except ProtocolError as exc:
        return str(exc)
    ids = [message.id for message in log]
    return None if len(ids) == len(set(ids)) else "a message id is stored twice"


# -- PostgreSQL connections ended under prompt -c ---------------------------------------------------------------------
@contextmanager
def _schema(dsn: str) -> Iterator[str]:
    """A URL naming a fresh schema on the server at ``dsn``, dropped afterwards."""
    schema = f"tl_faults_drop_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    try:
        yield with_query(dsn, f"schema={schema}")
    finally:
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        except psycopg.OperationalError:
            pass  # the private server is down: it is removed whole at the end


def postgres_connection_drops(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``prompt -c`` running a tool loop (0-2 rounds of 1-2 calls, then a streamed answer) while PostgreSQL ends its
    connections at a random point of a random answer's stream: on the shared server by ``pg_terminate_backend`` of
    the command's connections (a restart, once or twice per turn), and in every fourth case by stopping a private
    server, which stays down until the command has ended.

    After a restart the turn must end normally, its answer and every message of it stored. With the server down
    the command must end with one ``Error:`` line, saying so when the answer it showed was not saved. Either way the
    stored log must validate, nothing the driver logs may reach the terminal, and the next ``prompt -c`` must
    continue (repairing what the turn left unanswered) and send the saved answer back.
    """
    rng = random.Random(seed)
    row = Row("PostgreSQL restarts and outages during prompt -c")
    (directory / "droptools.py").write_text(TOOLS, encoding="utf-8")
    private: PrivateServer | None = None
    try:
        for number in range(cases):
            down = number % 4 == 3
            if down and private is None:
                private = PrivateServer()
                private.start()
            with DroppingOpenAI() as server:
                _drop_case(server, private if down else None, directory, rng, row)
    finally:
        if private is not None:
            private.close()
    return row


Verdict = tuple[str | None, int, str | None]
"""What one command of a case came to: why it failed (or None), messages lost, why the stored log is invalid."""


def _drop_case(
    server: DroppingOpenAI, private: PrivateServer | None, directory: Path, rng: random.Random, row: Row
) -> None:
    name = application_name()
    with _schema(POSTGRES_DSN if private is None else private.dsn) as schema_url:
        url = with_query(schema_url, f"application_name={name}&connect_timeout=3")
        with open_store(url) as store:
            conversation_id = store.create_conversation("weather").id
            store.append(conversation_id, [UserMessage(content="Hello"), AssistantMessage(content="Hi!")])
        rounds = [rng.randint(1, 2) for _ in range(rng.randint(0, 2))]
        final = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))) + "."
        answers = [
            Answer(tool_calls=tuple(ToolUse("lookup", f'{{"city": "C{r}{c}"}}', id=f"call_{r}_{c}") for c in range(n)))
            for r, n in enumerate(rounds)
        ]
        answers.append(Answer(final))
        stops = {rng.randrange(len(answers))}
        if private is None and rng.random() < 0.3:
            stops.add(rng.randrange(len(answers)))  # a second restart in the same turn

        def end_connections() -> None:
            if private is None:
                terminate(name)
            else:
                private.stop()

        server.add(
            *(DropDuring(a, rng.randint(0, 10), end_connections) if i in stops else a for i, a in enumerate(answers))
        )
        kind = "server down" if private is not None else "restart"
        note = f"{kind} during answer(s) {sorted(n + 1 for n in stops)} of {len(answers)}"
        row.saw(kind)
        done = _threadline(
            ["prompt", "-m", "openai:gpt-4o-mini", "--store", url, "-c", "-T", "droptools:lookup", "Weather?"],
            directory,
            _openai_env(server),
        )
        if private is not None:
            private.start()
        expected = 4 + sum(n + 1 for n in rounds)
        first = _judge_turn(done, url, conversation_id, final, private is not None, expected, row)
        with FakeOpenAI() as fresh:  # a server of its own: the faulted turn may have left answers unasked for
            fresh.add(Answer("Anything else?"))
            follow = _threadline(
                ["prompt", "-m", "openai:gpt-4o-mini", "--store", url, "-c", "Thanks."], directory, _openai_env(fresh)
            )
            second = _judge_follow_up(follow, url, conversation_id, fresh, final)
        crashed = first[0] or second[0]
        problem = first[2] or second[2]
        row.case(
            crashed=crashed, lost=first[1] + second[1], invalid=int(problem is not None), note=f"{note} {problem or ''}"
        )


def _openai_env(server: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-faults-drops-0123456789"}


def _judge_turn(
    done: subprocess.CompletedProcess[str],
    url: str,
    conversation_id: str,
    final: str,
    down: bool,
    expected: int,
    row: Row,
) -> Verdict:
    """The turn run while the connections went away."""
    with open_store(url) as store:
        log = store.load(conversation_id)
    saved = bool(log) and log[-1].content == final
    shown = final in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    crashed = next((f"{noise!r} on stderr" for noise in NOISE if noise in done.stderr), None)
    lost = 0
    if shown and not saved and not any(NOT_SAVED in line for line in errors):
        lost += 1  # an answer shown and not saved, and nobody said so
    if not down:
        lost += max(0, expected - len(log))
        if crashed is None and (done.returncode != 0 or not saved):
            crashed = f"exit {done.returncode}: {errors[-1:] or done.stderr[-300:]!r}"
    elif crashed is None and (done.returncode == 0 or len(errors) != 1):
        crashed = f"server down, yet exit {done.returncode} with {len(errors)} Error line(s): {done.stderr[-300:]!r}"
    if down and shown and not saved:
        row.saw("answer shown, said not saved")
    return crashed, lost, _problem(log)


def _judge_follow_up(
    follow: subprocess.CompletedProcess[str], url: str, conversation_id: str, server: FakeOpenAI, final: str
) -> Verdict:
    """The next ``-c``: it answers, the log validates with nothing unanswered, and the answer the faulted turn saved
    (if it did) was sent back."""
    with open_store(url) as store:
        log = store.load(conversation_id)
    problem = _problem(log) or ("calls left unanswered" if log.pending_tool_calls() else None)
    crashed = None if follow.returncode == 0 else f"the next -c failed: {follow.stderr[-300:]!r}"
    saved = any(message.content == final for message in log)
    sent = [m.get("content") for m in server.requests[-1].json["messages"] if m["role"] == "assistant"]
    return crashed, int(saved and final not in sent), problem


# -- float options given infinity or NaN -------------------------------------------------------------------------------
def _spelling(rng: random.Random) -> str:
    sign = rng.choice(["", "-", "+"])
    word = rng.choice(["inf", "Inf", "INF", "infinity", "Infinity", "nan", "NaN", "NAN"])
    big = f"{rng.randint(1, 9)}e{rng.randint(309, 99_999)}"
    return rng.choice([sign + word, sign + word, sign + big, f" {sign}{word} "])


def _library_attempts() -> list[tuple[str, Callable[[float, ScriptedModel], Any]]]:
    """Ways the library takes a float setting, each given the value and a model that must never be asked."""

    def prompt(setting: str) -> Callable[[float, ScriptedModel], Any]:
        return lambda value, model: llm.model(model).request("x").prompt(**{setting: value})

    return [
        ("prompt(temperature=…)", prompt("temperature")),
        ("prompt(timeout=…)", prompt("timeout")),
        ("prompt(tool_timeout=…)", prompt("tool_timeout")),
        ("prompt(openai_top_p=…)", prompt("openai_top_p")),
        ("prompt(openai_logit_bias={…})", lambda value, model: llm.model(model).prompt(openai_logit_bias={"1": value})),
        ("ConversationConfig(temperature=…)", lambda value, model: ConversationConfig(model=model, temperature=value)),
        ("ConversationConfig(busy_timeout=…)", lambda value, model: ConversationConfig(busy_timeout=value)),
        ("acquire(max_wait=…)", lambda value, model: Conversation().acquire(max_wait=value)),
    ]


def non_finite_options(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """Infinity and NaN, spelt at random (``inf``, ``-Infinity``, ``NAN``, `` nan ``, ``7e4242``), given to a random
    float option of a random command (every other case) or to a random float setting of the library (the others).

    The command must refuse it with exit code 2 and one ``Error:`` line naming the option and saying it needs a
    finite number, sending nothing to the model and storing nothing; the library must raise `UserError` (a
    ``ValueError``) saying so, before the model is asked.
    """
    rng = random.Random(seed)
    row = Row("infinity and NaN in float options and settings")
    options = float_options()
    attempts = _library_attempts()
    with FakeOpenAI() as server:
        for number in range(cases):
            if number % 2 == 0:
                command, option = rng.choice(options)
                _option_case(command, option, _spelling(rng), server, directory, number, row)
            else:
                what, attempt = rng.choice(attempts)
                _setting_case(what, attempt, float(_spelling(rng)), row)
    return row


def _option_case(
    command: str, option: str, value: str, server: FakeOpenAI, directory: Path, number: int, row: Row
) -> None:
    store_url = f"sqlite:///{directory / f'finite-{number}.db'}"
    given = [f"{option}={value}"] if value.startswith("-") or " " in value else [option, value]
    args = [*command_line(command, given), "--store", store_url]
    before = server.count  # nothing is scripted: a request sent anyway is answered 500, and counted
    done = _threadline(args, directory, _openai_env(server), stdin="Hello\n")
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    crashed = None
    if done.returncode != 2 or "Traceback" in done.stderr:
        crashed = f"exit {done.returncode}"
    elif len(errors) != 1 or option not in errors[0] or "finite number" not in errors[0]:
        crashed = f"not one clear line: {done.stderr[-300:]!r}"
    with open_store(store_url) as store:
        stored = len(store.list_conversations())
    sent = server.count - before
    if crashed is None and (sent or stored):
        crashed = f"{sent} request(s) sent, {stored} conversation(s) stored"
    row.saw("command")
    row.case(crashed=crashed, note=f"{command} {option} {value!r}")


def _setting_case(what: str, attempt: Callable[[float, ScriptedModel], Any], value: float, row: Row) -> None:
    model = ScriptedModel(["never"])
    crashed = None
    try:
        attempt(value, model)
        crashed = "taken"
    except (UserError, ValueError) as exc:
        if "finite number" not in str(exc):
            crashed = f"refused, but not saying why: {exc}"
    except Exception as exc:
        crashed = f"{type(exc).__name__}: {exc}"
    if model.requests:
        crashed = crashed or "the model was asked"
    row.saw("library")
    row.case(crashed=crashed, note=f"{what} {value!r}")


# -- logs show --all of long logs that grow while shown ---------------------------------------------------------------
def _random_log(rng: random.Random, size: int) -> list[Message]:
    """Turns of random shapes: tool groups of 1-6 calls (some unanswered, some answered twice or by a result whose
    call is not in the log), system messages, failures, multi-line and wide text."""
    messages: list[Message] = []
    turn = 0
    while len(messages) < size:
        turn += 1
        messages.append(UserMessage(content=f"question {turn}: " + " ".join(rng.choice(WORDS) for _ in range(5))))
        for round_ in range(rng.randint(0, 2)):
            calls = [
                ToolCall(id=f"c{turn}_{round_}_{n}", name="lookup", arguments={"n": n})
                for n in range(rng.randint(1, 6))
            ]
            messages.append(AssistantMessage(content=rng.choice(["", "Looking.", "漢字 🙂\nnext"]), tool_calls=calls))
            for call in calls:
                if rng.random() < 0.1:
                    messages.append(SystemMessage(content="between results"))
                messages.append(ToolMessage(tool_call_id=call.id, tool_name="lookup", content=f"result {call.id}"))
            if rng.random() < 0.05:
                messages.append(ToolMessage(tool_call_id=f"gone_{turn}", tool_name="lookup", content="orphan"))
        messages.append(AssistantMessage(content=f"answer {turn}\n" + rng.choice(WORDS) * rng.randint(1, 20)))
    return messages


def streamed_logs(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``logs show ID --all`` of random logs of 600-2,400 messages (tool groups falling across the store's pages),
    on SQLite and PostgreSQL in turn, its stdout a pipe read one line first: a message appended after that line
    must be shown at the end (the log is read while it is shown, not whole first), and the whole output must be
    what ``logs show ID --last N`` shows of the same log, line for line (the log shown in one piece)."""
    rng = random.Random(seed)
    row = Row("logs show --all of long logs that grow while shown")
    for number in range(cases):
        backend = "sqlite" if number % 2 == 0 else "postgres"
        with _store_url(backend, directory) as url:
            _stream_case(url, _random_log(rng, rng.randint(600, 2_400)), directory, row, backend)
    return row


@contextmanager
def _store_url(backend: str, directory: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{directory / f'stream-{uuid.uuid4().hex[:8]}.db'}"
    else:
        with _schema(POSTGRES_DSN) as url:
            yield url


def _stream_case(url: str, messages: list[Message], directory: Path, row: Row, backend: str) -> None:
    with open_store(url) as store:
        conversation_id = store.create_conversation("long").id
        store.append(conversation_id, messages)
    late = UserMessage(content=f"appended while shown {uuid.uuid4().hex}")
    env = {**child_env(), "THREADLINE_STORE": url, "COLUMNS": "100", "PYTHONIOENCODING": "utf-8"}
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline", "logs", "show", conversation_id, "--all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        bufsize=0,  # unbuffered: the first line read leaves the rest to communicate(), which reads the pipe itself
        cwd=ROOT,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    with open_store(url) as store:
        store.append(conversation_id, [late])
    rest, err = process.communicate(timeout=600)
    streamed = (first + rest).decode("utf-8", errors="replace")
    whole = _threadline(
        ["logs", "show", conversation_id, "--last", str(len(messages) + 1), "--store", url], directory, env
    )
    crashed = None
    if process.returncode != 0 or whole.returncode != 0:
        crashed = f"exit {process.returncode}/{whole.returncode}: {err.decode(errors='replace')[-300:]}"
    lost = 0 if late.content in streamed else 1  # shown only if read after the first line was printed
    different = streamed.splitlines()[1:] != whole.stdout.splitlines()[1:]  # the headers' counts differ by one
    if crashed is None and different:
        crashed = "not what the log shown in one piece shows"
    row.saw(backend)
    row.case(crashed=crashed, lost=lost, note=f"{backend}, {len(messages)} messages")
