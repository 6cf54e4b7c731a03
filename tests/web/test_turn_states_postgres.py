"""Durable turns' states in the viewer on a PostgreSQL store: DBOS's state is in a schema of the store's database
(found once a worker made it, after the viewer started), and a conversation shows its own turns only (DBOS filters
by the turns' attributes there), not those of other conversations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.durable._workers import PostgresWorkers, wait_for
from tests.providers.servers._base import Answer, Status
from tests.providers.servers.openai import FakeOpenAI
from tests.web.test_turn_states import badges, strip
from threadline.durable import Client
from threadline.store import open_store


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def pg_workers(tmp_path: Path, server: FakeOpenAI) -> Iterator[PostgresWorkers]:
    made = PostgresWorkers(tmp_path, server)
    try:
        yield made
    finally:
        made.stop_all()
        made.drop()


def test_a_postgres_store_shows_a_conversations_own_turns_once_a_worker_ran(
    pg_workers: PostgresWorkers, server: FakeOpenAI, serve
) -> None:
    store = open_store(pg_workers.url)
    try:
        conversation = store.create_conversation("Durable on PostgreSQL")
        served = serve(store)
        with httpx.Client(base_url=served.url, timeout=30) as http:
            page = http.get(f"/c/{conversation.id}")
            assert page.status_code == 200 and "durable-turn " not in strip(page.text)  # no DBOS schema yet

            server.add(Answer(text="Hello from PostgreSQL."))
            pg_workers.start()
            with Client(pg_workers.url) as client:
                turn = client.submit("Hi", app="chat", conversation_id=conversation.id)
                assert turn.result(timeout=60).text == "Hello from PostgreSQL."
                server.add(Status(400, {"error": {"message": "no such model", "type": "invalid_request_error"}}))
                elsewhere = client.submit("Bill me", app="chat")  # another conversation: fails, not shown here
                with pytest.raises(Exception, match="no such model"):
                    elsewhere.result(timeout=60)

            wait_for(lambda: "durable-turn " in strip(http.get(f"/c/{conversation.id}").text), "the turns to show")
            page = http.get(f"/c/{conversation.id}")
            assert badges(page.text) == {f"req-{turn.id}": ["done", "done"]}
            shown = strip(page.text)
            assert f'data-turn="{turn.id}"' in shown and elsewhere.id not in shown and "turn-failed" not in shown
    finally:
        store.close()
