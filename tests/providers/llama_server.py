"""Starting llama-cpp-python's real OpenAI-compatible server for the tests, and saying clearly why it did not start.

The server is started through ``python -m threadline.llama_cpp_server``, which runs llama-cpp-python's own server
unchanged except that, on a CPU with AMX, models load without llama.cpp's extra buffer types (the plain server
crashes there with SIGSEGV on its first generation). A server that exits is a test failure naming the cause — for
a signal, which one and what this CPU has — with the end of the server's log; it never skips.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from threadline.models.local._runtime import AMX_ISSUE, EXTRA_BUFFERS_ENV, cpu_has_amx, smollm2_path

__all__ = [
    "LLAMA_CPP_MODEL",
    "RunningServer",
    "ServerDidNotStart",
    "check_alive",
    "exit_cause",
    "extra_buffer_types",
    "free_port",
    "server_command",
    "start_server",
]

LLAMA_CPP_MODEL = "smollm2"


class ServerDidNotStart(Exception):
    """The server exited or did not answer in time; the message says why, with the end of its log."""


@dataclass
class RunningServer:
    """A started server: its process, the base URL of its API (``…/v1``) and its log file."""

    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


# llama.cpp's own lines while it places a model's tensors (llama-model.cpp, verbose, as the server runs by default):
# "... cannot be used with preferred buffer type CPU_REPACK, using CPU instead" and "load_tensors: AMX model buffer
# size = ...". Plain host memory is "CPU" or "CPU_Mapped"; any other name is an extra buffer type.
_PREFERRED = re.compile(r"preferred buffer type (\w+)")
_MODEL_BUFFER = re.compile(r"load_tensors: +(\w+) model buffer size")


def extra_buffer_types(log: str) -> set[str]:
    """The extra CPU buffer types (``CPU_REPACK``, ``AMX``, ...) llama.cpp's log says it considered for a model's
    weights: none when the model was loaded without them."""
    names = set(_PREFERRED.findall(log)) | set(_MODEL_BUFFER.findall(log))
    return names - {"CPU", "CPU_Mapped"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(port: int, *extra: str) -> list[str]:
    """The command line of the server on the SmolLM2 file, ``--chat_format chatml-function-calling``."""
    return [
        sys.executable,
        "-m",
        "threadline.llama_cpp_server",
        "--model",
        str(smollm2_path()),
        "--model_alias",
        LLAMA_CPP_MODEL,
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--verbose",
        "False",
        *extra,
    ]


def exit_cause(returncode: int) -> str:
    """What an exit status says, for a person: the signal by name, and for a crash what the CPU has."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    cause = f"was killed by {name} (exit status {128 + number})"
    if number in (signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT):
        if cpu_has_amx():
            setting = os.environ.get(EXTRA_BUFFERS_ENV, "auto")
            cause += (
                f": this CPU has AMX, whose llama.cpp kernels crash ({AMX_ISSUE}); the server must be started through"
                f" python -m threadline.llama_cpp_server, which loads models without them unless "
                f"{EXTRA_BUFFERS_ENV}=on (here: {setting})"
            )
        else:
            cause += ": a crash inside llama.cpp (this CPU has no AMX, so not the AMX kernel crash)"
    return cause


def start_server(
    command: list[str], base_url: str, log_path: Path, *, timeout: float = 180.0, env: dict[str, str] | None = None
) -> RunningServer:
    """Start ``command`` and wait until ``{base_url}/models`` answers 200.

    Raises:
        ServerDidNotStart: when the process exits first (naming the cause) or ``timeout`` passes.
    """
    # Threads that wait passively: busy-waiting ones collapse when anything else runs on a 2-core machine.
    environment = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"), **(env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    server = RunningServer(process, base_url, log_path)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ServerDidNotStart(
                f"llama-cpp-python's server {exit_cause(process.returncode)} before it answered:\n{tail(log_path)}"
            )
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ServerDidNotStart(f"llama-cpp-python's server did not start in {timeout:g} s:\n{tail(log_path)}")
        time.sleep(0.2)


def check_alive(server: RunningServer) -> str | None:
    """Why a started server is gone (its exit cause and log), or None while it runs: a test that could not connect
    says this instead of "could not connect"."""
    code = server.process.poll()
    if code is None:
        return None
    return f"llama-cpp-python's server {exit_cause(code)}:\n{tail(server.log_path)}"


def tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
