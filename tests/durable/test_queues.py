"""Turns queue per provider (``threadline_turns.<provider>``) with the rate limits given as ``--limit``, a worker that
stops hands back what it cannot finish, and a worker refuses to start where it would recover turns of an app it does
not have. Real ``threadline worker`` processes on a SQLite store, the fake OpenAI server as the model."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from tests.durable._workers import PostgresWorkers, Workers, wait_for
from tests.providers.servers._base import Answer, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from threadline.durable import Client
from threadline.durable.config import parse_limit
from threadline.errors import UserError
from threadline.message_types import UserMessage

ANTHROPIC_APP = """
import threadline

notes = threadline.llm.model("anthropic:claude-haiku-4-5")
"""


@pytest.fixture(autouse=True)
def anthropic_app(tmp_path: Path) -> None:
    """An app on another provider, beside the workers' own (``otherapp:notes``)."""
    (tmp_path / "otherapp.py").write_text(ANTHROPIC_APP, encoding="utf-8")


def run(workers: Workers, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=workers.dir, env=workers.env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [("openai=500/60", ("openai", 500, 60.0)), (" anthropic = 5/0.5", ("anthropic", 5, 0.5))],
)
def test_a_limit_is_provider_count_per_seconds(text: str, expected: tuple[str, int, float]) -> None:
    rate = parse_limit(text)
    assert (rate.provider, rate.limit, rate.period) == expected


@pytest.mark.parametrize(
    "text", ["openai", "openai=500", "=5/60", "openai=0/60", "openai=5/0", "openai=5/-1", "openai=x/60", "openai=5/nan"]
)
def test_a_malformed_limit_is_refused_with_the_form_it_takes(text: str) -> None:
    with pytest.raises(UserError, match=r"provider=N/seconds .*e\.g\. openai=500/60"):
        parse_limit(text)


def test_the_worker_refuses_a_bad_limit_before_it_starts(workers: Workers) -> None:
    bad = run(workers, workers.command(extra=["--limit", "openai=lots"]))
    assert bad.returncode == 2 and "provider=N/seconds" in bad.stderr, bad.stderr
    unserved = run(workers, workers.command(extra=["--limit", "anthropic=5/60"]))
    assert unserved.returncode == 2, unserved.stderr
    assert "names a provider none of this worker's apps is on (they are on: openai)" in unserved.stderr
    assert not (workers.dir / "store.db.dbos.sqlite").exists()  # nothing was started


def test_each_provider_has_its_queue_and_the_status_shows_its_limit(workers: Workers) -> None:
    workers.start("myapp:chat", "otherapp:notes", extra=["--limit", "openai=30/60", "--concurrency", "3"])
    with Client(workers.url) as client:
        assert client.queue_of("chat") == "threadline_turns.openai"
        assert client.queue_of("notes") == "threadline_turns.anthropic"
    shown = run(workers, workers.command(extra=["--status"]))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "queue threadline_turns.anthropic: no rate limit, 3 at once per worker",
        "queue threadline_turns.openai: at most 30 turns per 60 s, 3 at once per worker",
        "No turn is queued or running.",
    ]


def test_a_rate_limit_holds_across_workers_on_postgres(pg_workers: PostgresWorkers, server: FakeOpenAI) -> None:
    # On PostgreSQL: DBOS's SQLite queue counts and claims in two statements, so workers in several processes can
    # start more than a limit allows at once (README: one worker per SQLite store).
    rate_limited_turns(pg_workers, server)


def rate_limited_turns(workers: Workers, server: FakeOpenAI) -> None:
    server.add(*[Answer(text=f"Answer {n}.") for n in range(4)])
    workers.start(worker_id="w1", extra=["--limit", "openai=2/3", "--poll", "0.05"])
    workers.start(worker_id="w2", extra=["--limit", "openai=2/3"])
    with Client(workers.url) as client:
        handles = [client.submit(f"Question {n}", app="chat") for n in range(4)]
        assert all(handle.result(timeout=60).stop_reason == "end" for handle in handles)
        started = sorted(
            status.dequeued_at or 0 for status in client.dbos.list_workflows(workflow_ids=[h.id for h in handles])
        )
    # At most two turns start in any 3 seconds, whichever worker takes them: the third waits for the window.
    assert started[2] - started[0] >= 3000, started
    assert started[3] - started[1] >= 3000, started


def test_a_stopping_worker_hands_back_the_turn_it_cannot_finish(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 4}'),)), Answer(text="Done."))
    first = workers.start(worker_id="w1", extra=["--grace", "1"])
    with Client(workers.url) as client:
        handle = client.submit("Run slow", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        first.send_signal(signal.SIGTERM)
        assert first.wait(60) == 0
        assert first.stdout is not None
        said = first.stdout.read()
        assert "handed back 1 running turn(s) to their queues" in said, said
        assert handle.status() == "ENQUEUED"  # back on its queue, for any worker
        (workers.dir / "go").write_text("")
        workers.start(worker_id="w2")
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "Done.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant"]
    assert server.count == 2  # the model call that asked for the tool was not repeated
    assert (workers.dir / "runs").read_text().splitlines() == ["slow", "slow"]  # idempotent: run again


def test_a_stopping_worker_finishes_a_turn_that_ends_within_its_grace(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 4}'),)), Answer(text="Done."))
    first = workers.start(worker_id="w1", extra=["--grace", "60"])
    with Client(workers.url) as client:
        handle = client.submit("Run slow", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        first.send_signal(signal.SIGTERM)
        assert first.stdout is not None
        assert first.stdout.readline().startswith("worker w1 stopping: no new turns")
        (workers.dir / "go").write_text("")
        assert first.wait(60) == 0
        assert first.stdout.read().strip() == "worker w1 stopped"
        assert handle.status() == "SUCCESS"
        assert handle.result(timeout=5).text == "Done."
    assert (workers.dir / "runs").read_text().splitlines() == ["slow"]


def test_a_worker_refuses_to_recover_turns_of_an_app_it_lacks(workers: Workers, server: FakeOpenAI) -> None:
    server.add(Answer(tool_calls=(ToolUse("slow", '{"x": 9}'),)), Answer(text="Done."))
    first = workers.start("myapp:chat", worker_id="w1")
    with Client(workers.url) as client:
        handle = client.submit("Run slow", app="chat")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        (workers.dir / "go").write_text("")
        refused = run(workers, workers.command("myapp:billing", worker_id="w1"))
        assert refused.returncode == 2, refused.stderr
        assert (
            f"worker w1 was running 1 turn(s) of app(s) 'chat' when it stopped ({handle.id}), and this worker does "
            "not have them (its apps: billing); start it again with --app for module:chat"
        ) in refused.stderr
        assert handle.status() == "PENDING"  # untouched, for the worker that has the app
        workers.start("myapp:chat", "myapp:billing", worker_id="w1")
        outcome = handle.result(timeout=60)
        assert (outcome.stop_reason, outcome.text) == ("end", "Done.")
        log = client.store.load(handle.conversation_id)
    log.validate()
    assert [m.id for m in log if isinstance(m, UserMessage)] == [f"req-{handle.id}"]
    assert server.count == 2
