"""A server's tool schema that ``$ref``s an address is never fetched (docs/failure-rules.md#tool-grants: tools never
exceed their grant): the check of the arguments follows only references inside the schema, and a call past a remote
reference goes to the server unchecked (or is answered with the problems found before it), at once, with no request
made."""

from __future__ import annotations

import http.server
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from threadline import AssistantMessage, ToolCall, ToolMessage, llm
from threadline.testing import ScriptedModel

from .conftest import Servers

REF_SERVER = Path(__file__).with_name("ref_server.py")


class Recorder:
    """An HTTP server on 127.0.0.1 that answers every GET with a schema and records each connection made to it."""

    def __init__(self) -> None:
        hits: list[str] = []
        self.hits = hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = b'{"type": "string"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/schema.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    made = Recorder()
    try:
        yield made
    finally:
        made.stop()


def run_calls(toolset: Any, *items: tuple[str, dict[str, Any]]) -> list[ToolMessage]:
    call = AssistantMessage(
        tool_calls=[ToolCall(id=f"call_{i}", name=name, arguments=args) for i, (name, args) in enumerate(items)]
    )
    conversation = llm.model(ScriptedModel([call, "done"])).tools(toolset).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    return [message for message in conversation.messages if isinstance(message, ToolMessage)]


def test_a_remote_ref_in_a_schema_is_never_fetched(servers: Servers, recorder: Recorder) -> None:
    refs = servers.stdio([sys.executable, str(REF_SERVER), recorder.url], name="Refs", timeout=5, start_timeout=60)
    remote, bad, good = run_calls(
        refs, ("Refs.remote", {"x": "s"}), ("Refs.mixed", {"count": "many", "x": 1}), ("Refs.mixed", {"count": 2})
    )
    assert recorder.hits == []
    # Past the remote reference the server judges the arguments; what the local part of the schema says still holds.
    assert not remote.is_error and remote.content == 'remote got {"x": "s"}'
    assert bad.is_error and "count: 'many' is not of type 'integer'" in bad.content
    assert not good.is_error and good.content == 'mixed got {"count": 2}'


def test_a_remote_ref_to_an_address_that_never_answers_does_not_hang_the_call(servers: Servers) -> None:
    # Accepts connections and never answers: a fetch would wait forever, on the event loop, before any timeout.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        listener.settimeout(0)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        refs = servers.stdio([sys.executable, str(REF_SERVER), url], name="Refs", timeout=5, start_timeout=60)
        refs.connect()
        finished: list[list[ToolMessage]] = []
        worker = threading.Thread(target=lambda: finished.append(run_calls(refs, ("Refs.remote", {"x": "s"}))))
        worker.daemon = True
        worker.start()
        worker.join(30)
        with pytest.raises(BlockingIOError):  # nobody connected
            listener.accept()
    assert finished, "the call hung on the schema's remote reference"
    assert finished[0][0].content == 'remote got {"x": "s"}'
