"""Fixtures of the MCP tests: real MCP servers (from PyPI, and our own `demo_server.py`) as child processes, and a
check of the process table that none of them outlives its toolset or the test session.

Every server started here carries ``THREADLINE_TEST_MCP_SESSION`` (one value per test session) and
``THREADLINE_TEST_MCP`` (one value per toolset) in its environment, so the process table tells which are ours.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from threadline import Toolset
from threadline.tools.mcp.toolset import MCPToolset

DEMO_SERVER = Path(__file__).with_name("demo_server.py")
SESSION_MARK = uuid.uuid4().hex


def marks(name: str | None = None) -> dict[str, str]:
    """The environment that tags a server as started by this test session (and, with ``name``, by one toolset)."""
    env = {"THREADLINE_TEST_MCP_SESSION": SESSION_MARK}
    if name is not None:
        env["THREADLINE_TEST_MCP"] = name
    return env


def processes_with(key: str, value: str) -> list[int]:
    """Live processes whose environment has ``key=value`` (read from /proc)."""
    needle = f"{key}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:  # gone, or a zombie being reaped
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def toolset_processes(toolset_mark: str) -> list[int]:
    return processes_with("THREADLINE_TEST_MCP", toolset_mark)


def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``condition()`` became true within ``seconds`` (checked at least once)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether the process is gone, checking until ``seconds`` have passed (at least once)."""
    deadline = time.monotonic() + seconds
    while is_running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="session", autouse=True)
def _no_server_outlives_the_session() -> Iterator[None]:
    yield
    leaked = processes_with("THREADLINE_TEST_MCP_SESSION", SESSION_MARK)
    for pid in leaked:
        os.kill(pid, signal.SIGKILL)
    assert leaked == [], f"MCP server processes outlived the test session: {leaked}"


class Servers:
    """Makes toolsets on real servers; each is closed at the end of the test, then checked to have stopped."""

    def __init__(self) -> None:
        self.made: list[tuple[MCPToolset, str]] = []

    def stdio(self, command: list[str], **kwargs: Any) -> MCPToolset:
        mark = uuid.uuid4().hex
        env = {**marks(mark), **kwargs.pop("env", {})}
        toolset = Toolset.from_mcp(command=command, env=env, **kwargs)
        self.made.append((toolset, mark))
        return toolset

    def demo(self, **kwargs: Any) -> MCPToolset:
        return self.stdio([sys.executable, str(DEMO_SERVER)], **kwargs)

    def time(self, **kwargs: Any) -> MCPToolset:
        return self.stdio([sys.executable, "-m", "mcp_server_time"], **kwargs)

    def git(self, repository: Path, **kwargs: Any) -> MCPToolset:
        return self.stdio([sys.executable, "-m", "mcp_server_git", "--repository", str(repository)], **kwargs)

    def close(self) -> None:
        for toolset, mark in self.made:
            toolset.close()
            assert toolset_processes(mark) == [], "a closed toolset left its server running"


@pytest.fixture
def servers() -> Iterator[Servers]:
    made = Servers()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def shared() -> Iterator[Servers]:
    """Like `servers`, for toolsets a module's tests share (tests that only call tools, never break the server)."""
    made = Servers()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def demo(shared: Servers) -> MCPToolset:
    """The demo server, started once for a test module."""
    return shared.demo()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpServer:
    """`demo_server.py` serving streamable HTTP on 127.0.0.1, as its own process."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = {**os.environ, **marks(f"http-{self.port}")}
        self.process = subprocess.Popen(
            [sys.executable, str(DEMO_SERVER), "--http", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the streamable-HTTP demo server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    """A repository with one commit, made with the git command line."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "notes.txt").write_text("first line\n", encoding="utf-8")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the notes file"], check=True)
    (repo / "notes.txt").write_text("first line\nsecond line\n", encoding="utf-8")
    return repo
