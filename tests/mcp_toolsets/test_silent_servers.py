"""MCP servers that never answer (issue 31): ``Toolset.from_mcp(..., timeout=5)`` waited 60 to 72 s for a server
that did not answer ``initialize`` (the start waited at least a minute whatever ``timeout`` said, then up to 10 s
more for a session that had never opened). Now the start gives up after ``timeout`` (or ``start_timeout`` when
given), says so, and leaves no server process running: when the tools are listed (a clear `MCPConnectionError`,
before any model is called), when a tool is called and its server must be started again (an error result the model
reads), and when the toolset is closed while its server is starting.

The deadlines below only prove that nothing waited for the old minute; they are generous, never a measure of speed.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from threadline import Toolset
from threadline.tools.mcp.toolset import MCPConnectionError

from .conftest import Servers, toolset_processes, wait_for
from .test_failures import run_calls

SILENT_SERVER = Path(__file__).with_name("silent_server.py")
TINY_SERVER = Path(__file__).with_name("tiny_server.py")
TIMEOUT = 1.5
DEADLINE = TIMEOUT + 20  # the start's timeout, the SDK's stop sequence (stdin closed, SIGTERM, SIGKILL) and slack


def silent(servers: Servers, mode: str, **kwargs: Any) -> tuple[Any, str]:
    """A toolset on a silent server, and the mark its processes carry."""
    toolset = servers.stdio([sys.executable, str(SILENT_SERVER), mode], name="Silent", **kwargs)
    return toolset, servers.made[-1][1]


@pytest.mark.parametrize("mode", ["eof", "stubborn", "deaf"])
def test_listing_the_tools_of_a_server_that_never_answers_fails_after_the_timeout(servers: Servers, mode: str) -> None:
    toolset, mark = silent(servers, mode, timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(
        MCPConnectionError, match=rf"MCP server 'Silent': it did not finish starting within {TIMEOUT:g} s"
    ):
        toolset.names()
    assert time.monotonic() - started < DEADLINE
    assert toolset_processes(mark) == []  # stopped before the error was raised, even one that ignores SIGTERM


def test_start_timeout_is_the_start_s_own_limit_when_given(servers: Servers) -> None:
    toolset, mark = silent(servers, "stubborn", timeout=60, start_timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=rf"within {TIMEOUT:g} s"):
        toolset.connect()
    assert time.monotonic() - started < DEADLINE
    assert toolset_processes(mark) == []


async def test_aconnect_fails_after_the_timeout_too(servers: Servers) -> None:
    toolset, mark = silent(servers, "stubborn", timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match="did not finish starting"):
        await toolset.aconnect()
    assert time.monotonic() - started < DEADLINE
    assert toolset_processes(mark) == []


@pytest.fixture
def mute_listener() -> Iterator[str]:
    """The URL of a TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def test_a_url_that_accepts_and_never_answers_fails_after_the_timeout(mute_listener: str) -> None:
    toolset = Toolset.from_mcp(url=mute_listener, name="Mute", timeout=TIMEOUT)
    try:
        started = time.monotonic()
        with pytest.raises(
            MCPConnectionError, match=rf"MCP server 'Mute': it did not finish starting within {TIMEOUT:g} s"
        ):
            toolset.names()
        assert time.monotonic() - started < DEADLINE
    finally:
        toolset.close()


def test_a_tool_whose_server_restarts_silent_is_an_error_result_after_the_timeout(
    servers: Servers, tmp_path: Path
) -> None:
    # Serves once (a server written by hand, which starts at once); every later start is silent.
    timeout = 5.0  # the first start must succeed on a busy machine too
    tiny = servers.stdio([sys.executable, str(TINY_SERVER), str(tmp_path / "started")], name="Tiny", timeout=timeout)
    mark = servers.made[-1][1]
    started = time.monotonic()
    crashed, restart_failed = run_calls(tiny, [("Tiny.crash", {})], [("Tiny.crash", {})])
    assert crashed.is_error and "stopped during the call" in crashed.content
    assert restart_failed.is_error
    assert f"could not be restarted: it did not finish starting within {timeout:g} s" in restart_failed.content
    assert time.monotonic() - started < 2 * timeout + DEADLINE
    assert toolset_processes(mark) == []


def test_closing_while_the_server_is_starting_stops_it(servers: Servers) -> None:
    toolset, mark = silent(servers, "deaf", timeout=60)
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            toolset.connect()
        except BaseException as exc:  # what the waiting thread is told
            outcome.append(exc)
        else:
            outcome.append(None)

    waiting = threading.Thread(target=connect, daemon=True)
    waiting.start()
    assert wait_for(lambda: toolset_processes(mark) != [], 30)
    started = time.monotonic()
    toolset.close()
    assert time.monotonic() - started < DEADLINE
    waiting.join(DEADLINE)
    assert not waiting.is_alive()  # the thread waiting for the start is not left waiting for a minute
    assert isinstance(outcome[0], MCPConnectionError) and "closed" in str(outcome[0])
    assert toolset_processes(mark) == []
