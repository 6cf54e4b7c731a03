"""``threadline serve`` as a user runs it: it prints its URL (with the token), serves the store, stops on Ctrl+C, and
refuses, in one line, to listen beyond this machine without a token or on a port that is taken."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from tests.store._backends import run_cli
from tests.web._serve_process import threadline_serve
from threadline.store import open_store


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_non_loopback_bind_without_a_token_is_refused_in_one_line(tmp_path) -> None:
    done = run_cli("serve", "--host", "0.0.0.0", "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: refusing to listen on 0.0.0.0 without --token")
    assert "Traceback" not in done.stderr


def test_serve_prints_its_url_serves_and_stops_on_ctrl_c(tmp_path) -> None:
    store_url = f"sqlite:///{tmp_path / 's.db'}"
    open_store(store_url).close()  # serve only reads: it refuses a store that does not exist
    made = run_cli("prompt", "--help")  # the CLI works at all in this environment
    assert made.returncode == 0
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "threadline",
        "serve",
        "--store",
        store_url,
        "--port",
        str(port),
        "--token",
        "tok3n",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert f"http://127.0.0.1:{port}/?token=tok3n" in line, line
            with httpx.Client(follow_redirects=True, timeout=10) as http:
                opened = http.get(f"http://127.0.0.1:{port}/?token=tok3n")
                assert opened.status_code == 200 and "No conversations yet" in opened.text
                assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 401
        finally:
            process.send_signal(signal.SIGINT)
            started = time.monotonic()
            _, errors = process.communicate(timeout=20)
    assert time.monotonic() - started < 15
    assert process.returncode in (0, 130, -signal.SIGINT), process.returncode
    assert "Traceback" not in errors


def test_a_taken_port_is_one_clear_line(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", "--port", str(port), "--store", f"sqlite:///{tmp_path / 's.db'}")
    assert done.returncode != 0
    assert f"Error: the viewer could not listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_never_prints_a_password_given_in_the_store_url() -> None:
    from tests.store._backends import postgres_url

    with postgres_url() as url:
        secret_url = f"{url}&password=SEKRETPW&sslpassword=SEKRET2"
        port = free_port()
        command = [sys.executable, "-m", "threadline", "serve", "--store", secret_url, "--port", str(port)]
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}
        ) as process:
            try:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert f"http://127.0.0.1:{port}/" in line, line
                assert "password=***" in line and "sslpassword=***" in line, line
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10).text
            finally:
                process.send_signal(signal.SIGINT)
                _, errors = process.communicate(timeout=20)
    assert "SEKRET" not in line + page + errors


def test_ctrl_c_with_a_page_open_stops_quietly(sqlite_store) -> None:
    """A page open on a conversation holds a live-update stream that never ends by itself. Ctrl+C closes it as a
    client that went away (the page reconnects to the next server) and the server stops quietly; before, it waited
    out its graceful-shutdown time, cancelled the stream, and printed a CancelledError traceback, uvicorn's
    "Cancel 1 running task(s)" and "Error: interrupted"."""
    from threadline import Conversation, assistant, user

    conversation = Conversation(store=sqlite_store)
    conversation.add(user("Hello?"))
    conversation.add(assistant("Hi."))
    received = b""
    with threadline_serve(sqlite_store.url) as serving:
        with socket.create_connection(("127.0.0.1", serving.port), timeout=20) as sock:
            request = f"GET /c/{conversation.id}/events HTTP/1.1\r\nHost: 127.0.0.1:{serving.port}\r\n\r\n"
            sock.sendall(request.encode())
            while b"event: message" not in received:  # the stream is live
                received += sock.recv(65536)
            serving.interrupt()
            while chunk := sock.recv(65536):  # the server ends the stream; the client never hangs up
                received += chunk
    assert serving.returncode in (0, 130, -signal.SIGINT), serving.returncode
    # Ctrl+C's own one line, as without a page open, and nothing else.
    assert set(serving.errors.strip().splitlines()) <= {"Error: interrupted"}, serving.errors
