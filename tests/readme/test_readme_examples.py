"""Every ```python block of README.md runs as written, so an example can no longer rot (as pydantic-ai tests its
documentation's examples).

What a block runs against is substituted, never its code: the models it names answer from fake OpenAI and Anthropic
servers on 127.0.0.1 that speak the real wire formats and answer any request (`tests.readme.responder`), through
``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL`` and a fake key, as a user's environment would configure them; the default
model is ``openai:gpt-4o-mini`` there (``THREADLINE_MODEL``), and each block runs in an empty working directory.
Addresses of servers a reader runs themselves (Ollama, llama.cpp's server, OpenRouter, a PostgreSQL host) are
replaced by the fake servers and the test PostgreSQL server. MCP servers run for real (``mcp-server-time``).

HTML comments before a block say what it needs: ``<!-- continues: NAME -->`` runs it after the block marked
``<!-- example: NAME -->`` (and whatever that one continues), in the same namespace; ``<!-- file: NAME.py -->`` marks
a block that is a file of the reader's (written to every block's working directory, e.g. the app a worker runs);
``<!-- with: threadline … -->`` starts that command beside the block (a worker) and stops it after. Blocks are named
by their section and their place in it, so other sections can change without these tests changing.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import certifi
import pytest

from tests.durable._workers import stop_processes
from tests.readme.responder import AnyAnthropic, AnyOpenAI

README = Path(__file__).resolve().parents[2] / "README.md"
SRC = README.parent / "src"
_MARK = re.compile(r"<!--\s*(example|continues|file|with):\s*(.+?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One ```python block: its test id, its code, its own name (``example``), the block it continues, the file it
    is (``file``: written to the working directory of every block) and the command that runs beside it (``with``:
    a ``threadline`` command started before it and stopped after it, such as a worker)."""

    id: str
    code: str
    line: int
    name: str | None
    continues: str | None
    file: str | None = None
    beside: str | None = None


def readme_blocks(text: str) -> list[Block]:
    """Every ```python block of the README, with the markers in the lines just before it."""
    blocks: list[Block] = []
    heading = "top"
    counts: dict[str, int] = {}
    marks: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = re.sub(r"[^a-z0-9]+", "-", line.lstrip("#").strip().lower()).strip("-")
            marks = {}
        elif line.strip().startswith("<!--"):
            marks.update(dict(_MARK.findall(line)))
        elif line.startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            if line.strip() == "```python":
                counts[heading] = counts.get(heading, 0) + 1
                code = "\n".join(lines[index + 1 : end]) + "\n"
                block_id = f"{heading}-{counts[heading]}"
                named = marks.get("example"), marks.get("continues"), marks.get("file"), marks.get("with")
                blocks.append(Block(block_id, code, index + 2, *named))
            marks = {}
            index = end
        elif line.strip():
            marks = {}
        index += 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
NAMED = {block.name: block for block in BLOCKS if block.name}
FILES = [block for block in BLOCKS if block.file]


def chain(block: Block) -> list[Block]:
    """The blocks to run for ``block``: those it continues, oldest first, then itself."""
    order = [block]
    while order[0].continues is not None:
        earlier = NAMED.get(order[0].continues)
        assert earlier is not None, (
            f"README line {order[0].line}: no block is marked <!-- example: {order[0].continues} -->"
        )
        assert earlier not in order, f"README line {block.line}: the blocks continue each other in a circle"
        order.insert(0, earlier)
    return order


def run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Run one block as the ``python -m asyncio`` prompt would: top-level ``await`` runs on an event loop of its own,
    other code as a script runs it."""
    code = compile(block.code, f"README.md:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)  # the README's own code: running it is the point of this test
    if asyncio.iscoroutine(result):
        asyncio.run(_then_close_connections(result))


async def _then_close_connections(block: Any) -> None:
    """Await a block, then close the connections its models pooled on this event loop, as a program does before
    its loop ends (the sync API's private loop closes its own)."""
    from threadline.models import close_cached_models

    try:
        await block
    finally:
        await close_cached_models()


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[AnyOpenAI, AnyAnthropic]]:
    """Fake providers configured as a user's environment configures real ones, and an empty working directory."""
    with AnyOpenAI() as openai, AnyAnthropic() as anthropic:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-0123456789abcdef")
        monkeypatch.setenv("OPENAI_BASE_URL", openai.base_url)  # type: ignore[attr-defined]
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-0123456789abcdef")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.base_url)  # type: ignore[attr-defined]
        monkeypatch.setenv("THREADLINE_MODEL", "openai:gpt-4o-mini")
        monkeypatch.delenv("THREADLINE_OPENAI_SERVER", raising=False)
        monkeypatch.chdir(tmp_path)
        yield openai, anthropic  # type: ignore[misc]


def substituted(code: str, openai_url: str, stack: ExitStack) -> str:
    """``code`` with the addresses of servers a reader runs themselves pointed at the test's own."""
    replacements = {
        "http://localhost:11434/v1": openai_url,  # Ollama
        "http://127.0.0.1:8000/v1": openai_url,  # llama.cpp's server
        # OpenRouter: its dialect, which the preset its host implies would choose, said outright.
        'base_url="https://openrouter.ai/api/v1"': f'base_url="{openai_url}", server="openrouter"',
        # A corporate CA bundle: the public one this machine has.
        "/etc/ssl/certs/corporate-ca.pem": certifi.where(),
        # The durable example's PostgreSQL host: a SQLite store here, which workers on one machine share.
        DURABLE_STORE: "sqlite:///shop.db",
    }
    for address, local in replacements.items():
        code = code.replace(address, local)
    if "postgresql://user@host/db" in code:
        from tests.store._backends import postgres_url

        code = code.replace("postgresql://user@host/db", stack.enter_context(postgres_url()))
    return code


def close_everything(namespace: dict[str, Any]) -> None:
    """Close the stores, MCP toolsets and models' connections a block opened (a reader's program closes them at
    exit): the connections the sync API pooled are closed on its event loop."""
    from threadline import MCPToolset
    from threadline._sync import run_sync
    from threadline.models import close_cached_models
    from threadline.models.base import Model
    from threadline.store import Store

    for value in list(namespace.values()):
        if isinstance(value, (Store, MCPToolset)):
            value.close()
        elif isinstance(value, Model) and hasattr(value, "aclose"):
            run_sync(value.aclose())
    run_sync(close_cached_models())


DURABLE_STORE = "postgresql://app@db/shop"


@contextmanager
def running_beside(command: str) -> Iterator[None]:
    """``threadline <command>`` (a worker) started in the working directory with this environment, once it printed
    its first line (a worker's "ready"); stopped on exit."""
    args = shlex.split(command)
    assert args[0] == "threadline", f"a <!-- with: --> command runs threadline, not {args[0]!r}"
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    environment["PYTHONPATH"] = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline", *args[1:]],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # blocks until it is ready, or has died (its output then says why)
        assert process.poll() is None, f"{command} stopped: {first}{process.stdout.read()}"
        yield
    finally:
        stop_processes([process])


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_readme_block_runs(block: Block, servers: tuple[AnyOpenAI, AnyAnthropic]) -> None:
    openai, _ = servers
    for file in FILES:
        Path(file.file or "").write_text(file.code, encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with ExitStack() as stack:
        try:
            for part in chain(block):
                code = substituted(part.code, openai.base_url, stack)  # type: ignore[attr-defined]
                if part.beside is not None:
                    stack.enter_context(running_beside(substituted(part.beside, openai.base_url, stack)))
                run_block(replace(part, code=code), namespace)
        finally:
            close_everything(namespace)


def test_every_continued_block_is_named() -> None:
    """A ``continues`` marker names a block that exists (a renamed or removed block fails here, not obscurely)."""
    for block in BLOCKS:
        assert chain(block)[-1] is block


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) > 20


REACTIVE = [block for block in BLOCKS if "reactive_generate_text(" in block.code]


@pytest.mark.parametrize("block", REACTIVE, ids=[block.id for block in REACTIVE])
def test_the_reactive_example_runs_when_its_run_fails(
    block: Block, servers: tuple[AnyOpenAI, AnyAnthropic], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a key for OpenAI's own API the reactive run fails before any request, and the example shows the
    failure (its last line spread ``done.messages``, None then: TypeError)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        for part in chain(block):
            if part is block:  # what it continues runs as configured; this block's own run fails
                monkeypatch.delenv("OPENAI_API_KEY")
                monkeypatch.delenv("OPENAI_BASE_URL")
            run_block(part, namespace)
    finally:
        close_everything(namespace)
    state = namespace["done"]
    assert state.error is not None and "no API key" in str(state.error)
