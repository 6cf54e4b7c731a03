"""Spans over OTLP/HTTP to a real receiver on 127.0.0.1 (otlp_receiver.py decodes the protobuf with the official
``opentelemetry-proto``): `export_otlp` in a program, and ``threadline prompt/chat --otlp URL`` (or
``OTEL_EXPORTER_OTLP_ENDPOINT``) as a user runs them — subprocesses on the fake OpenAI server — which flush before
they exit, after an answer, an error or Ctrl-C; a missing SDK is one clear line."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.cli.test_interrupt_cli import interrupt_when_shown, start
from tests.providers.servers import Answer, FakeOpenAI, Stall, ToolUse
from tests.providers.servers import Status as HTTPStatus
from threadline import llm
from threadline.errors import UserError
from threadline.testing import ScriptedModel
from threadline.tracing import is_instrumented
from threadline.tracing.otlp import export_otlp, traces_url

from .otlp_receiver import OTLPReceiver

KEY = "sk-test-OTLP-0123456789abcdefghij"
TOOLS = '''
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22 C and sunny in {city}"
'''
ERROR = Status.STATUS_CODE_ERROR


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    made = OTLPReceiver()
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "weather.py").write_text(TOOLS, encoding="utf-8")
    return tmp_path


def environment(server: FakeOpenAI, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME"):
        env.pop(name, None)
    return {**env, **extra}


def threadline(
    *args: str, cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        input=stdin,
        timeout=300,
    )


def assert_no_key(receiver: OTLPReceiver) -> None:
    assert receiver.bodies
    for body in receiver.bodies:
        assert KEY.encode() not in body and KEY[10:].encode() not in body


def test_export_otlp_sends_a_programs_turns_and_flushes_on_close(receiver: OTLPReceiver) -> None:
    with export_otlp(receiver.url, service_name="weather-app"):
        assert is_instrumented()
        assert llm.model(ScriptedModel(["Sunny."])).request("Weather?").prompt() == "Sunny."
    assert not is_instrumented()
    (turn,) = receiver.named("invoke_agent threadline")
    (chat,) = receiver.children(turn)
    assert chat.name == "chat scripted" and chat.kind == Span.SPAN_KIND_CLIENT
    assert chat.trace_id == turn.trace_id
    assert turn.resource["service.name"] == "weather-app"
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert receiver.paths == ["/v1/traces"]


def test_an_endpoint_without_a_path_gets_the_traces_path_and_a_bad_one_is_refused() -> None:
    assert traces_url("http://localhost:4318") == "http://localhost:4318/v1/traces"
    assert traces_url("http://localhost:6006/v1/traces") == "http://localhost:6006/v1/traces"
    with pytest.raises(UserError, match="must be an http"):
        traces_url("localhost:4318")


def test_prompt_with_otlp_exports_the_turn_tree(receiver: OTLPReceiver, server: FakeOpenAI, workdir: Path) -> None:
    server.add(Answer(tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id="call_1"),)), Answer("Sunny."))
    done = threadline(
        "prompt",
        "-m",
        "openai:gpt-4o-mini",
        "-T",
        "weather:get_weather",
        "--otlp",
        receiver.url,
        "Weather in Paris?",
        cwd=workdir,
        env=environment(server),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Sunny."
    (turn,) = receiver.named("invoke_agent threadline")
    assert [span.name for span in receiver.children(turn)] == [
        "chat gpt-4o-mini",
        "execute_tool get_weather",
        "chat gpt-4o-mini",
    ]
    first, tool, _ = receiver.children(turn)
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.usage.input_tokens"] == 11
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first.attributes["server.address"] == "127.0.0.1"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert turn.resource["service.name"] == "threadline"
    assert isinstance(turn.attributes["gen_ai.conversation.id"], str)
    assert "gen_ai.input.messages" not in first.attributes  # content is opt-in
    assert_no_key(receiver)


def test_chat_exports_to_the_endpoint_the_environment_names(
    receiver: OTLPReceiver, server: FakeOpenAI, workdir: Path
) -> None:
    server.reply("Hello.", "Goodbye.")
    env = environment(
        server,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.root,  # the base URL: the exporter adds /v1/traces
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
    )
    done = threadline("chat", "-m", "openai:gpt-4o-mini", cwd=workdir, env=env, stdin="Hi\nBye\n")
    assert done.returncode == 0, done.stderr
    turns = receiver.named("invoke_agent threadline")
    assert len(turns) == 2
    assert turns[0].attributes["gen_ai.conversation.id"] == turns[1].attributes["gen_ai.conversation.id"]
    chats = receiver.named("chat gpt-4o-mini")
    assert sorted('"content":"Bye"' in chat.attributes["gen_ai.input.messages"] for chat in chats) == [False, True]
    assert set(receiver.paths) == {"/v1/traces"}
    assert_no_key(receiver)


def test_a_failed_turn_is_exported_before_the_command_exits(
    receiver: OTLPReceiver, server: FakeOpenAI, workdir: Path
) -> None:
    server.add(HTTPStatus(401))
    done = threadline(
        "prompt", "-m", "openai:gpt-4o-mini", "--otlp", receiver.url, "Hello", cwd=workdir, env=environment(server)
    )
    assert done.returncode == 3, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    (chat,) = receiver.named("chat gpt-4o-mini")
    assert chat.status_code == ERROR and chat.attributes["error.type"] == "auth"
    (turn,) = receiver.named("invoke_agent threadline")
    assert turn.status_code == ERROR
    assert_no_key(receiver)


def test_ctrl_c_during_a_turn_still_exports_its_spans(
    receiver: OTLPReceiver, server: FakeOpenAI, workdir: Path
) -> None:
    server.add(Stall(Answer("Once upon a time there was a dragon who loved long stories."), after=5))
    process = start(
        ["prompt", "-m", "openai:gpt-4o-mini", "--otlp", receiver.url, "Tell me a story."],
        workdir,
        {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY},
    )
    _, stderr = interrupt_when_shown(process, "Once upon a time")
    assert process.returncode == 130, stderr
    (chat,) = receiver.named("chat gpt-4o-mini")
    assert chat.status_code == ERROR and chat.attributes["error.type"] == "interrupted"
    (turn,) = receiver.named("invoke_agent threadline")
    assert turn.attributes["error.type"] == "interrupted"


def test_a_missing_sdk_is_one_line_naming_what_to_install(server: FakeOpenAI, workdir: Path, tmp_path: Path) -> None:
    # A directory first on the path whose opentelemetry.sdk cannot be imported: the SDK is "not installed".
    shadow = tmp_path / "shadow" / "opentelemetry" / "sdk"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry.sdk'\", name='opentelemetry.sdk')\n"
    )
    path = os.pathsep.join(filter(None, [str(tmp_path / "shadow"), os.environ.get("PYTHONPATH")]))
    done = threadline(
        "prompt",
        "-m",
        "openai:gpt-4o-mini",
        "--otlp",
        "http://127.0.0.1:9/v1/traces",
        "Hello",
        cwd=workdir,
        env=environment(server, PYTHONPATH=path),
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: ") and "opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http" in lines[0]
    assert "pip install 'threadline[otlp]'" in lines[0]
    assert server.count == 0  # nothing was sent: the command stopped before the turn


def test_a_bad_otlp_url_is_one_line(server: FakeOpenAI, workdir: Path) -> None:
    done = threadline(
        "prompt", "-m", "openai:gpt-4o-mini", "--otlp", "localhost:4318", "Hello", cwd=workdir, env=environment(server)
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: the OTLP endpoint must be an http(s) URL"), done.stderr


def test_a_receiver_that_is_down_is_one_line_at_the_end_and_the_answer_stands(
    server: FakeOpenAI, workdir: Path
) -> None:
    """Before, the exporter's own warnings came at each retry ("Transient error … retrying in 1.01s", then "Failed to
    export spans batch…"); now the command answers and says once which spans did not reach which URL."""
    with socket.socket() as probe:  # a port nothing listens on: the receiver is down
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1/traces"
    server.add(Answer("Hello!"))
    done = threadline(
        "prompt", "-m", "openai:gpt-4o-mini", "--otlp", url, "Hello", cwd=workdir, env=environment(server)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello!"
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("conversation ")]
    assert lines == [f"threadline: 2 spans could not be sent to {url} (is the receiver running?)"]


def test_a_receiver_that_refuses_the_spans_is_named_with_its_http_status(server: FakeOpenAI, workdir: Path) -> None:
    """Before: "(is the receiver running?)" also when it was running and answered 400 (not an OTLP/HTTP endpoint)."""

    class Refuses(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    refusing = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuses)
    threading.Thread(target=refusing.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{refusing.server_port}/v1/traces"
    server.add(Answer("Hello!"))
    try:
        done = threadline(
            "prompt", "-m", "openai:gpt-4o-mini", "--otlp", url, "Hello", cwd=workdir, env=environment(server)
        )
    finally:
        refusing.shutdown()
        refusing.server_close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello!"
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("conversation ")]
    assert lines == [
        f"threadline: 2 spans could not be sent to {url} (it answered HTTP 400: is this an OTLP/HTTP traces endpoint?)"
    ]
