"""``python -m threadline.llama_cpp_server``: llama-cpp-python's server, made to survive CPUs with AMX, and the
failure a test shows when that server crashes anyway.

On a CPU with AMX the plain server dies with SIGSEGV on its first generation (ggml-org/llama.cpp#20824); the
launcher loads models without llama.cpp's extra buffer types there (``THREADLINE_LLAMA_EXTRA_BUFFERS``: ``auto``,
``off``, ``on``) and says so in one line of the server's log.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from threadline.models.local._runtime import cpu_has_amx

from .llama_server import (
    LLAMA_CPP_MODEL,
    RunningServer,
    ServerDidNotStart,
    exit_cause,
    extra_buffer_types,
    free_port,
    server_command,
    start_server,
)


def chat(base_url: str, text: str) -> dict[str, object]:
    body = {
        "model": LLAMA_CPP_MODEL,
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 8,
        "min_tokens": 4,  # llama-cpp-python's extension: a generation of a few tokens, whatever the model would say
        "temperature": 0.0,
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        answer: dict[str, object] = json.loads(response.read())
    return answer


def start_with(setting: str, tmp_path: Path) -> RunningServer:
    """A second server, with ``THREADLINE_LLAMA_EXTRA_BUFFERS=setting`` and llama.cpp's own loading log."""
    port = free_port()
    return start_server(
        server_command(port, "--verbose", "True"),
        f"http://127.0.0.1:{port}/v1",
        tmp_path / "server.log",
        env={"THREADLINE_LLAMA_EXTRA_BUFFERS": setting},
    )


@pytest.fixture
def forced_off(tmp_path: Path) -> Iterator[RunningServer]:
    """A second server whose models load without extra buffer types whatever the CPU has."""
    server = start_with("off", tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_the_session_server_says_which_kernels_it_runs_with(
    llama_cpp_server: str, llama_cpp_process: RunningServer
) -> None:
    answer = chat(llama_cpp_server, "Say hi.")  # a generation: the step that crashes on AMX without the launcher
    assert answer["usage"]["completion_tokens"] > 0  # type: ignore[index]
    log = llama_cpp_process.log_path.read_text(errors="replace")
    if cpu_has_amx():
        assert "llama.cpp extra CPU buffer types off (this CPU has AMX" in log
    else:
        assert "llama.cpp extra CPU buffer types on (this CPU has no AMX)" in log


def test_a_server_forced_off_generates(forced_off: RunningServer) -> None:
    answer = chat(forced_off.base_url, "Say hi.")
    assert answer["usage"]["completion_tokens"] > 0  # type: ignore[index]
    assert forced_off.process.poll() is None
    log = forced_off.log_path.read_text(errors="replace")
    assert "llama.cpp extra CPU buffer types off (THREADLINE_LLAMA_EXTRA_BUFFERS=off)" in log
    # llama.cpp itself placed the weights in plain host memory, considering no extra buffer type: AMX's is one of
    # them, and only through it do the AMX kernels run.
    assert "model buffer size" in log
    assert extra_buffer_types(log) == set()


def test_a_server_forced_on_offers_llama_cpp_its_extra_buffer_types(tmp_path: Path) -> None:
    """The other side of the check above: loaded with extra buffer types, llama.cpp's log names those it has for
    this CPU and this build (AMX where the CPU has it and llama.cpp was built with its kernels, CPU_REPACK where its
    repacking kernels are built), so an empty set there means they were switched off. Nothing is generated: on a
    CPU with AMX that could crash this server."""
    server = start_with("on", tmp_path)
    try:
        log = server.log_path.read_text(errors="replace")
    finally:
        server.stop()
    assert "model buffer size" in log
    if cpu_has_amx():
        assert (
            "llama.cpp extra CPU buffer types on (THREADLINE_LLAMA_EXTRA_BUFFERS=on, although this CPU has AMX, whose"
            " kernels crash llama.cpp (ggml-org/llama.cpp#20824))" in log
        )
    else:
        assert "llama.cpp extra CPU buffer types on (THREADLINE_LLAMA_EXTRA_BUFFERS=on)" in log
    # llama.cpp's system line says what it was built with: it differs between machines (llama-cpp-python compiles
    # for the CPU it is installed on) and builds (one made for AVX2 only has no AMX kernels on an AMX CPU).
    offered = extra_buffer_types(log)
    built_amx = "AMX_INT8 = 1" in log and cpu_has_amx()
    if not built_amx and "REPACK = 1" not in log:
        pytest.fail(f"llama.cpp offers no extra buffer type on this CPU, so the check cannot tell on from off:\n{log}")
    if built_amx:  # then the AMX buffer type, which takes the weights CPU_REPACK would have
        assert "AMX" in offered, offered
    else:
        assert "CPU_REPACK" in offered, offered


def test_an_unknown_setting_is_one_clear_line(tmp_path: Path) -> None:
    done = subprocess.run(
        server_command(free_port()),
        env={"PATH": "/usr/bin:/bin", "THREADLINE_LLAMA_EXTRA_BUFFERS": "maybe"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == "THREADLINE_LLAMA_EXTRA_BUFFERS must be auto, on or off, got 'maybe'"


def test_a_server_killed_by_a_signal_is_named(tmp_path: Path) -> None:
    crash = [sys.executable, "-c", "import os, signal; print('loading', flush=True); os.kill(os.getpid(), 11)"]
    with pytest.raises(ServerDidNotStart) as caught:
        start_server(crash, "http://127.0.0.1:9/v1", tmp_path / "crash.log", timeout=30)
    message = str(caught.value)
    assert "was killed by SIGSEGV (exit status 139)" in message
    assert message.endswith("loading")  # the end of the server's own log follows
    if cpu_has_amx():
        assert "this CPU has AMX" in message and "python -m threadline.llama_cpp_server" in message
    else:
        assert "this CPU has no AMX" in message


def test_exit_causes_read_as_words() -> None:
    assert exit_cause(2) == "exited with status 2"
    assert exit_cause(-9) == "was killed by SIGKILL (exit status 137)"
