"""``threadline serve`` run as a user runs it (a subprocess on a free port), and raw-socket clients that send their
request slowly; shared by the slow-client test and the fault campaign (``tests/faults/hostile_web.py``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# The server's limit is 10 s for a whole request (threadline.web.request_deadline); this only proves it ended.
DEADLINE = 40.0
TRICKLE = 0.4  # seconds between two bytes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Serving:
    """A running ``threadline serve``: its address, and (once stopped) what it wrote to stderr and its exit code."""

    url: str
    port: int
    process: subprocess.Popen[str]
    errors: str = ""
    returncode: int | None = None
    interrupted: bool = False

    def interrupt(self) -> None:
        """Press Ctrl+C, once (the server is waited for when the block ends)."""
        self.interrupted = True
        self.process.send_signal(signal.SIGINT)


@contextmanager
def threadline_serve(store_url: str) -> Iterator[Serving]:
    """``threadline serve`` on ``store_url`` in a subprocess, on a free port; stopped with Ctrl+C on leaving."""
    port = free_port()
    command = [sys.executable, "-m", "threadline", "serve", "--store", store_url, "--port", str(port)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}
    ) as process:
        serving = Serving(f"http://127.0.0.1:{port}", port, process)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if f"http://127.0.0.1:{port}/" not in line:
                raise RuntimeError(f"threadline serve did not start: {line}")
            yield serving
        finally:
            if not serving.interrupted:
                serving.interrupt()
            _, serving.errors = process.communicate(timeout=30)
            serving.returncode = process.returncode


class SlowClient(threading.Thread):
    """A raw connection that sends ``first`` at once, then ``then`` one byte every ``interval`` seconds (repeating
    it), reading whatever comes back, until the server closes the connection, `DEADLINE` passes or ``done`` is set."""

    def __init__(self, port: int, first: bytes, then: bytes, interval: float = TRICKLE) -> None:
        super().__init__(daemon=True)
        self.port, self.first, self.then, self.interval = port, first, then, interval
        self.closed_after: float | None = None
        self.received = b""
        self.done = threading.Event()  # set to hang up

    def run(self) -> None:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.settimeout(self.interval)
            try:
                sock.sendall(self.first)
                position = 0
                while time.monotonic() - started < DEADLINE and not self.done.is_set():
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        if self.then:
                            sock.sendall(self.then[position % len(self.then) : position % len(self.then) + 1])
                            position += 1
                        continue
                    if not data:
                        break
                    self.received += data
                else:
                    return  # still open at the deadline, or hung up
            except OSError:  # reset by the server while sending
                pass
        self.closed_after = time.monotonic() - started
