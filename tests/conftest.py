"""Shared test configuration.

Tests never reach a remote LLM API: providers are tested against fake servers on 127.0.0.1; everything above the
provider layer uses `ScriptedModel`; the embedded model runs for real. PostgreSQL tests use the server named by
``THREADLINE_TEST_POSTGRES`` (default: the local server of this kind of machine) and fail, never skip, if it is
unreachable.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

POSTGRES_DSN = os.environ.get("THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own THREADLINE_HOME, so nothing touches the user's real store; and no test picks up a
    THREADLINE_MODEL from the environment by accident."""
    home = tmp_path_factory.mktemp("threadline-home")
    monkeypatch.setenv("THREADLINE_HOME", str(home))
    monkeypatch.delenv("THREADLINE_MODEL", raising=False)
    for key in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "THREADLINE_OPENAI_SERVER",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(key, raising=False)
    yield home


@pytest.fixture(scope="module", autouse=True)
def _no_event_loop_left_running() -> None:
    """A fixture that outlives its module and leaves this thread marked as running an event loop (a sync Playwright
    does, between its calls) breaks every later async test with an unrelated-looking error ("Runner.run() cannot be
    called from a running event loop"): fail at the start of the next module, naming the cause."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    pytest.fail(f"an earlier test module left an event loop running in this thread: {loop!r}")


@pytest.fixture
def postgres_dsn() -> str:
    return POSTGRES_DSN
