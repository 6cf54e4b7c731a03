"""The viewer shows each durable turn's state beside its messages: queued (no worker yet), running on which worker,
waiting for a person, done, failed (its error escaped, secrets masked), made by real ``threadline worker`` processes
on a SQLite store with the fake OpenAI server as the model; the list marks conversations with a turn queued or
running; an open page follows the states (live ``durable`` events) and, in Chromium, sees a queued turn become done.
A store that never ran a durable turn shows none and never imports DBOS; without DBOS installed the viewer starts
and shows none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.durable._workers import Workers, wait_for
from tests.providers.servers._base import Answer, Status, ToolUse
from tests.providers.servers.openai import FakeOpenAI
from tests.web.conftest import screenshot
from threadline.durable import Client
from threadline.store import Store, open_store

SHOP = """
import time
from pathlib import Path

import threadline

HERE = Path(__file__).parent


@threadline.tool(idempotent=True)
def slow(x: int) -> int:
    \"\"\"Wait until the test lets it go.\"\"\"
    (HERE / "started").write_text("")
    deadline = time.monotonic() + 60
    while not (HERE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return x


@threadline.tool(approval=True)
def refund(amount: int) -> str:
    \"\"\"Refund an order (a person approves it first).\"\"\"
    return f"refunded {amount}"


chat = threadline.llm.model("openai:gpt-4o-mini").tools(slow, refund)
"""

KEY = "sk-live-0123456789abcdefghijKLMN"  # shaped like an API key: it must never reach a page


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def workers(tmp_path: Path, server: FakeOpenAI) -> Iterator[Workers]:
    made = Workers(tmp_path, server)
    (tmp_path / "shop.py").write_text(textwrap.dedent(SHOP), encoding="utf-8")
    try:
        yield made
    finally:
        (tmp_path / "go").write_text("")  # let a blocked tool end, so the worker stops at once
        made.stop_all()


@pytest.fixture
def store(workers: Workers) -> Iterator[Store]:
    opened = open_store(workers.url)
    try:
        yield opened
    finally:
        opened.close()


def stop(workers: Workers) -> None:
    """Stop every worker: what is queued now stays queued."""
    workers.stop_all()
    workers.running.clear()


def strip(html: str) -> str:
    """The strip of durable turns of a conversation page."""
    start = html.index('<section id="durable-turns"')
    return html[start : html.index("</section>", start)]


def badges(html: str) -> dict[str, list[str]]:
    section = strip(html)
    start = section.index("data-badges='") + len("data-badges='")
    return dict(json.loads(section[start : section.index("'", start)]))


def durable_event(http: httpx.Client, cid: str, until: str) -> str:
    """The HTML of the first live ``durable`` event of the page's stream that contains ``until``."""
    with http.stream("GET", f"/c/{cid}/events", params={"after": 1_000_000}) as events:
        event = None
        for line in events.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: ") and event == "durable":
                html = str(json.loads(line[len("data: ") :])["html"])
                if until in html:
                    return html
    raise AssertionError(f"the stream ended without a durable event with {until!r}")


def test_a_turn_is_shown_queued_running_on_its_worker_and_done(
    workers: Workers, server: FakeOpenAI, store, serve
) -> None:
    server.add(
        Answer(text="Hello."),
        Answer(tool_calls=(ToolUse("slow", '{"x": 3}'),)),
        Answer(text="Slow is done."),
    )
    workers.start("shop:chat", worker_id="w1")
    served = serve(store)
    with Client(workers.url) as client, httpx.Client(base_url=served.url, timeout=30) as http:
        first = client.submit("Hi", app="chat")
        assert first.result(timeout=60).text == "Hello."
        cid = first.conversation_id
        page = http.get(f"/c/{cid}").text
        assert "durable-title" in strip(page) and ">done<" in strip(page)
        assert badges(page) == {f"req-{first.id}": ["done", "done"]}

        # No worker runs: the next turn waits in the queue, and the list says so.
        stop(workers)
        second = client.submit("Run slow", app="chat", conversation_id=cid)
        shown = strip(http.get(f"/c/{cid}").text)
        assert f'data-turn="{second.id}"' in shown
        assert "turn-queued" in shown and "waiting for a worker" in shown
        assert '<span class="badge turn-state turn-queued"' in http.get("/").text

        # A worker takes it: running, on that worker.
        workers.start("shop:chat", worker_id="w7")
        wait_for(lambda: (workers.dir / "started").exists(), "the tool to start")
        shown = strip(http.get(f"/c/{cid}").text)
        assert "running on w7" in shown and "turn-queued" not in shown
        assert "turn running" in http.get("/").text
        assert badges(http.get(f"/c/{cid}").text)[f"req-{second.id}"] == ["running", "running on w7"]

        (workers.dir / "go").write_text("")
        assert second.result(timeout=60).text == "Slow is done."
        page = http.get(f"/c/{cid}").text
        assert badges(page) == {f"req-{first.id}": ["done", "done"], f"req-{second.id}": ["done", "done"]}
        assert "running on" not in strip(page)
        assert "turn running" not in http.get("/").text and "turn queued" not in http.get("/").text


def test_a_turn_waiting_for_a_person_and_a_failed_one_whose_error_hides_the_key(
    workers: Workers, server: FakeOpenAI, store, serve
) -> None:
    server.add(Answer(tool_calls=(ToolUse("refund", '{"amount": 30}'),)))
    workers.start("shop:chat")
    served = serve(store)
    with Client(workers.url) as client, httpx.Client(base_url=served.url, timeout=30) as http:
        waits = client.submit("Refund order 7", app="chat")
        assert waits.result(timeout=60).stop_reason == "awaiting"
        cid = waits.conversation_id
        shown = strip(http.get(f"/c/{cid}").text)
        assert "waiting for a person" in shown and "a tool call waits for a decision" in shown

        # A turn whose model call is refused ends with an error (ModelError), here one whose text carries something
        # shaped like a key.
        server.add(Status(400, {"error": {"message": f"bad request <b>{KEY}</b>", "type": "invalid_request_error"}}))
        failed = client.submit("Again", app="chat")
        with pytest.raises(Exception, match="bad request"):
            failed.result(timeout=60)
        page = http.get(f"/c/{failed.conversation_id}").text
        shown = strip(page)
        assert f'data-turn="{failed.id}"' in shown and "turn-failed" in shown
        assert "ModelError:" in shown
        assert "&lt;b&gt;sk-***&lt;/b&gt;" in shown  # escaped, and the key masked
        assert KEY not in page and KEY[8:] not in page and "<b>" not in shown
        assert "waiting for a person" in strip(http.get(f"/c/{cid}").text)  # a failed turn elsewhere decided nothing
        # An open page learns of it through its live updates, masked there too.
        live = durable_event(http, failed.conversation_id, "turn-failed")
        assert "ModelError" in live and KEY[8:] not in live and "<b>" not in live


def test_a_store_without_durable_turns_shows_none_and_never_imports_dbos(tmp_path: Path) -> None:
    """Run as a user runs it, in a process of its own: a store that never ran a durable turn, then the same store
    once it has DBOS state but DBOS is not installed."""
    script = textwrap.dedent(
        f"""
        import sys
        if sys.argv[1] == "missing":
            sys.modules["dbos"] = None  # as if the durable extra were not installed

        import httpx
        from tests.web.conftest import Served
        from threadline import UserMessage
        from threadline.store import open_store
        from threadline.web import create_app

        store = open_store("sqlite:///{tmp_path / "plain.db"}")
        conversation = store.create_conversation("Plain")
        store.append(conversation.id, [UserMessage(content="Hi", id="req-abc")])
        served = Served(create_app(store))
        with httpx.Client(base_url=served.url, timeout=30) as http:
            page = http.get(f"/c/{{conversation.id}}")
            listed = http.get("/")
            with http.stream("GET", f"/c/{{conversation.id}}/events") as events:
                for line in events.iter_lines():
                    if line.startswith("event: message"):
                        break
        served.stop()
        assert page.status_code == listed.status_code == 200
        assert '<section id="durable-turns" class="durable-turns" hidden' in page.text
        assert "durable-turn " not in page.text and "turn-state" not in listed.text
        print("dbos imported" if sys.modules.get("dbos") else "no dbos")
        """
    )
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}

    def run(mode: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, mode], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("installed") == "no dbos"
    (tmp_path / "plain.db.dbos.sqlite").write_bytes(b"")  # DBOS state beside the store...
    assert run("missing") == "no dbos"  # ...and no DBOS to read it with: nothing shown, nothing fails


def test_an_open_page_sees_a_queued_turn_become_done(workers: Workers, server: FakeOpenAI, store, serve, page) -> None:
    server.add(Answer(text="First answer."), Answer(text="Second answer."))
    workers.start("shop:chat")
    served = serve(store)
    with Client(workers.url) as client:
        first = client.submit("First question", app="chat")
        assert first.result(timeout=60).text == "First answer."
        cid = first.conversation_id
        stop(workers)
        second = client.submit("Second question", app="chat", conversation_id=cid)

        page.add_init_script("window.__noReload = 'still here';")
        page.goto(f"{served.url}/c/{cid}")
        turns = page.locator("#durable-turns")
        expect(turns.locator(f'[data-turn="{second.id}"] .turn-state')).to_have_text("queued")
        expect(page.locator(f'[id="m-req-{first.id}"] .turn-badge')).to_have_text("turn done")

        workers.start("shop:chat", worker_id="w2")
        expect(turns.locator(f'[data-turn="{second.id}"] .turn-state')).to_have_text("done", timeout=60_000)
        expect(page.locator("#items .msg").last).to_contain_text("Second answer.")
        expect(page.locator(f'[id="m-req-{second.id}"] .turn-badge')).to_have_text("turn done")
        screenshot(page, "durable-turn-done", full_page=True)
        assert page.evaluate("window.__noReload") == "still here"
        assert second.result(timeout=60).text == "Second answer."
