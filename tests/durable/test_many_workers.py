"""Durable turns under crashes: real ``threadline worker`` processes run many queued turns, each a three-round tool
loop against the fake OpenAI server, while one worker is killed with SIGKILL at random points and restarted with
the same ``--id`` (three workers on PostgreSQL, one on SQLite).

Whatever the kills, every turn ends, every log is valid and holds exactly its turns' messages in the order they
were queued, and no model call whose answer reached the log is made again: the fake server counts the requests per
conversation and number of messages sent, and only a turn the killed worker was running may repeat one request
per kill, whose earlier answer is then nowhere in the log. The tool (idempotent, so a call a kill interrupted runs
again) notes each run: it runs for every call in the logs and no other, again only under the same rule.

The randomness is seeded (``THREADLINE_CRASH_SEED`` replays a run); every failure message names the seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.conftest import POSTGRES_DSN
from tests.durable._workers import Workers
from tests.providers.servers._base import Answer, Recorded, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.durable import Client, TurnHandle
from threadline.durable.status import turns_in_flight
from threadline.message_types import AssistantMessage, ToolMessage, UserMessage

APP = """
import json
import os
import time
from pathlib import Path

import threadline

RUNS = Path(__file__).parent / "runs"


@threadline.tool(idempotent=True)
def add(a: int, b: int, note: str) -> int:
    \"\"\"Add two numbers.\"\"\"
    fd = os.open(RUNS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # one write per run: whole lines, whatever kills
    os.write(fd, (json.dumps([note, a, b]) + "\\n").encode())
    os.close(fd)
    time.sleep(0.01)  # long enough for some kills to land while a tool runs
    return a + b


chat = threadline.llm.model("openai:gpt-4o-mini").tools(add)
"""

VICTIM = "w1"
ROUNDS = 3  # model calls per turn: a tool call twice, then text


def conversation_tag(request: Recorded) -> str:
    """The conversation a request is for: its first user message is ``"c<N> t0"``."""
    first = next(m for m in request.json["messages"] if m["role"] == "user")
    return str(first["content"]).split()[0]


def request_key(request: Recorded) -> tuple[str, int]:
    """A model call: its conversation and how many of the conversation's messages it sends (one call per key,
    unless repeated); the system message the library writes into every request is not in the log."""
    sent = sum(1 for message in request.json["messages"] if message["role"] != "system")
    return conversation_tag(request), sent


def call_id(tag: str, sent: int, attempt: int) -> str:
    return f"call_{tag}_{sent}_{attempt}"


def answer_text(tag: str, sent: int, attempt: int) -> str:
    return f"{tag}: done after {sent} messages, attempt {attempt}"


class LoopingModel:
    """The fake server's answers: in each turn a call of ``add`` twice, then text; every answer names its
    conversation, the number of messages sent and which attempt of that request it answers."""

    def __init__(self) -> None:
        self.attempts: Counter[tuple[str, int]] = Counter()  # written on the server's thread only
        self.calls: Counter[str] = Counter()  # per conversation

    def __call__(self, request: Recorded) -> Answer:
        messages = request.json["messages"]
        key = request_key(request)
        self.attempts[key] += 1
        attempt = self.attempts[key]
        tag, sent = key
        self.calls[tag] += 1
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        results = sum(1 for m in messages[last_user:] if m["role"] == "tool")
        if results < ROUNDS - 1:
            arguments = json.dumps({"a": sent, "b": attempt, "note": tag})
            return Answer(tool_calls=(ToolUse("add", arguments, id=call_id(tag, sent, attempt)),))
        return Answer(text=answer_text(tag, sent, attempt))


class Fleet(Workers):
    """Worker processes on one store, started in ``directory`` (where the app module is, and the tool notes its
    runs), several at once and each known by its id."""

    def __init__(self, directory: Path, url: str, server: FakeOpenAI) -> None:
        super().__init__(directory, server)
        self.url = url
        (directory / "crashapp.py").write_text(textwrap.dedent(APP), encoding="utf-8")
        self.processes: dict[str, subprocess.Popen[str]] = {}

    def launch(self, *worker_ids: str, concurrency: int) -> None:
        """Start these workers at once and wait until each is ready."""
        for worker_id in worker_ids:
            args = self.command("crashapp:chat", worker_id=worker_id, extra=["--concurrency", str(concurrency)])
            process = subprocess.Popen(
                args, cwd=self.dir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
            )
            self.running.append(process)
            self.processes[worker_id] = process
        for worker_id in worker_ids:
            stdout = self.processes[worker_id].stdout
            assert stdout is not None
            line = stdout.readline()  # blocks until the worker is ready (or dies: an empty line)
            assert line.startswith(f"worker {worker_id} ready: apps "), line

    def kill(self, worker_id: str) -> None:
        process = self.processes.pop(worker_id)
        process.send_signal(signal.SIGKILL)
        process.wait(30)


@dataclass
class Plan:
    """What one crash run does: ``conversations`` each with ``turns`` turns, queued in ``kills`` waves, each
    followed by a SIGKILL of the victim at a random point."""

    seed: int
    conversations: int
    turns: int
    kills: int
    workers: int
    concurrency: int

    def waves(self) -> list[list[tuple[int, int]]]:
        """(conversation, turn) pairs in the order they are queued, cut into one wave per kill: a wave holds the
        first turns of some conversations, the next wave their second turns (queued while many of the first are
        still queued or running), and so on."""
        size = -(-self.conversations * self.turns // self.kills)
        pairs = [(c, t) for c in range(self.conversations) for t in range(self.turns)]
        order = sorted(pairs, key=lambda pair: (pair[0] // size, pair[1], pair[0]))
        return [order[i : i + size] for i in range(0, len(order), size)]


def run_with_kills(fleet: Fleet, server: FakeOpenAI, plan: Plan) -> None:
    """Start the workers, queue the turns wave by wave killing the victim once per wave, then check everything."""
    rng = random.Random(plan.seed)
    model = LoopingModel()
    server.responder = model
    seed = f"(seed {plan.seed}: THREADLINE_CRASH_SEED={plan.seed} replays it)"
    fleet.launch(VICTIM, concurrency=plan.concurrency)  # the first one alone: it creates DBOS's tables
    fleet.launch(*(f"w{number}" for number in range(2, plan.workers + 1)), concurrency=plan.concurrency)
    began = time.monotonic()
    kills: list[list[str]] = []  # per kill, the conversations whose turns the victim was running
    handles: dict[int, list[TurnHandle]] = {}
    tags: dict[str, str] = {}  # conversation id -> "c<N>"
    with Client(fleet.url) as client:
        for wave in plan.waves():
            for conversation, turn in wave:
                earlier = handles.setdefault(conversation, [])
                cid = earlier[0].conversation_id if earlier else None
                earlier.append(client.submit(f"c{conversation} t{turn}", app="chat", conversation_id=cid))
                tags[earlier[0].conversation_id] = f"c{conversation}"
            kill_at_a_random_point(fleet, client, model, rng, tags)
            kills.append(victim_running(client))  # DBOS says so until the victim is restarted
            fleet.launch(VICTIM, concurrency=plan.concurrency)
        answers: dict[int, list[str | None]] = {}
        for conversation, turns in handles.items():
            for handle in turns:
                outcome = handle.result(timeout=120)
                assert outcome.stop_reason == "end", f"c{conversation}: {outcome} {seed}"
                answers.setdefault(conversation, []).append(outcome.text)
        logs = {c: client.store.load(turns[0].conversation_id) for c, turns in handles.items()}
    attempts = server.tally(request_key)
    runs = Counter(tuple(json.loads(line)) for line in (fleet.dir / "runs").read_text().splitlines())
    repeats: Counter[str] = Counter()  # model calls and tool runs made again, per conversation
    for (tag, _), n in attempts.items():
        repeats[tag] += n - 1
    for (tag, _, _), n in runs.items():
        repeats[tag] += n - 1
    # Shown with -s: how long it took, and what the kills hit.
    print(
        f"\n{plan}: {time.monotonic() - began:.1f} s; turns the victim ran at each kill "
        f"{[len(kill) for kill in kills]}; model calls repeated {sum(attempts.values()) - len(attempts)}, tools run "
        f"again {sum(runs.values()) - len(runs)}"
    )
    for conversation, log in logs.items():
        tag = f"c{conversation}"
        try:
            log.validate()
        except Exception as exc:
            raise AssertionError(f"{tag}: the log is not valid: {exc} {seed}") from exc
        expected = expected_log(tag, handles[conversation], attempts)
        got = [describe(message) for message in log]
        assert got == expected, f"{tag}: messages lost, repeated or out of order {seed}"
        # Each turn's outcome is its own answer, the one in the log.
        assert answers[conversation] == [text for role, text in expected[5::6]], f"{tag} {seed}"
    # Every model call was made, none that was not needed, and every tool call of the logs ran, no other; a call
    # or a tool run was made again only when the worker making it was killed: for each conversation, at most once
    # per kill that found its turn running on the victim.
    needed = {
        (f"c{c}", 6 * t + sent) for c in range(plan.conversations) for t in range(plan.turns) for sent in (1, 3, 5)
    }
    assert set(attempts) == needed, f"requests nobody needed: {set(attempts) - needed} {seed}"
    logged_calls = {(tag, sent, attempts[(tag, sent)]) for tag, sent in needed if sent % 6 != 5}  # not the answers
    assert set(runs) == logged_calls, f"tool runs and logged calls differ: {set(runs) ^ logged_calls} {seed}"
    allowed = Counter(tags[cid] for kill in kills for cid in kill)
    too_many = {tag: (n, allowed[tag]) for tag, n in repeats.items() if n > allowed[tag]}
    assert not too_many, (
        f"finished model calls or tool runs repeated (repeats, kills that found the turn running): {too_many} {seed}"
    )


def kill_at_a_random_point(
    fleet: Fleet, client: Client, model: LoopingModel, rng: random.Random, tags: dict[str, str]
) -> None:
    """SIGKILL the victim at a random point of the turns it runs: once it has taken some, after a random number of
    their model calls (the last one then in flight) and a random few milliseconds more (often while an answer or a
    tool result is being logged, or a tool runs). If it takes no turn within a few seconds, it is killed idle."""
    deadline = time.monotonic() + 5
    while not (taken := {tags.get(cid, "") for cid in victim_running(client)}) and time.monotonic() < deadline:
        time.sleep(0.01)
    if taken:
        # Some of their calls may be made already: aim at most at half of all, and give up when they are done.
        target = sum(model.calls[tag] for tag in taken) + rng.randint(1, (ROUNDS * len(taken) + 1) // 2)
        deadline = time.monotonic() + 10
        checked = time.monotonic()
        while sum(model.calls[tag] for tag in taken) < target and time.monotonic() < deadline:
            if time.monotonic() - checked > 0.1:
                if not taken & {tags.get(cid, "") for cid in victim_running(client)}:
                    break
                checked = time.monotonic()
            time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.05))
    fleet.kill(VICTIM)


def victim_running(client: Client) -> list[str]:
    """The conversations whose turns DBOS says the victim is running."""
    return [turn.conversation_id or "" for turn in turns_in_flight(client.dbos) if turn.worker == VICTIM]


def describe(message: object) -> tuple[str, str]:
    """A message as the check compares it: its role and what identifies it."""
    if isinstance(message, UserMessage):
        return "user", f"{message.id} {message.content}"
    if isinstance(message, AssistantMessage):
        calls = [f"{call.id} {call.name}({json.dumps(call.arguments, sort_keys=True)})" for call in message.tool_calls]
        return "assistant", " ".join(calls) if calls else str(message.content)
    if isinstance(message, ToolMessage):
        return "tool", f"{message.tool_call_id} {message.content} error={message.is_error}"
    return type(message).__name__, ""


def expected_log(tag: str, turns: list[TurnHandle], attempts: Counter[tuple[str, int]]) -> list[tuple[str, str]]:
    """The log of conversation ``tag``: per turn, in the order queued, the request, two calls of ``add`` each with
    its result, and the answer; each model answer the last attempt of its request (an earlier one's answer never
    reached the log: its worker was killed before it could)."""
    expected: list[tuple[str, str]] = []
    for number, handle in enumerate(turns):
        expected.append(("user", f"req-{handle.id} {tag} t{number}"))
        for sent in (len(expected), len(expected) + 2):
            attempt = attempts[(tag, sent)]
            ident = call_id(tag, sent, attempt)
            expected.append(("assistant", f"{ident} add({json.dumps({'a': sent, 'b': attempt, 'note': tag})})"))
            expected.append(("tool", f"{ident} {sent + attempt} error=False"))
        sent = len(expected)
        expected.append(("assistant", answer_text(tag, sent, attempts[(tag, sent)])))
    return expected


def seed_of_run() -> int:
    return int(os.environ.get("THREADLINE_CRASH_SEED") or random.SystemRandom().randrange(1_000_000))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


def test_three_postgres_workers_lose_and_repeat_nothing_while_one_is_killed_ten_times(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    schema = f"tl_crash_{uuid.uuid4().hex[:12]}"
    fleet = Fleet(tmp_path, f"{POSTGRES_DSN}?schema={schema}", server)
    plan = Plan(seed_of_run(), conversations=50, turns=2, kills=10, workers=3, concurrency=3)
    try:
        run_with_kills(fleet, server, plan)
    finally:
        fleet.stop_all()
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as db:
            for each in (schema, f"{schema}_dbos"):
                db.execute(f'DROP SCHEMA IF EXISTS "{each}" CASCADE')


def test_one_sqlite_worker_loses_and_repeats_nothing_while_killed_five_times(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    fleet = Fleet(tmp_path, f"sqlite:///{tmp_path / 'store.db'}", server)
    plan = Plan(seed_of_run(), conversations=15, turns=2, kills=5, workers=1, concurrency=4)
    try:
        run_with_kills(fleet, server, plan)
    finally:
        fleet.stop_all()
