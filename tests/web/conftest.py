"""Fixtures of the viewer tests: the real app served by uvicorn on 127.0.0.1, and Debian's Chromium driven by
Playwright (never a downloaded browser). Screenshots go to ``test-artifacts/`` (ignored by git)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from threadline.store import Store, open_store
from threadline.web import create_app

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium tries to reach Google's services, which this closed network
# refuses; headless, no sandbox (CI runs as root), no GPU.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"


class Served:
    """An ASGI app served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", ws="none", timeout_graceful_shutdown=1, access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        self.sock = sock

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(f"sqlite:///{tmp_path / 'viewer.db'}")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """``serve(store, **create_app options)`` starts the viewer; every server is stopped after the test."""
    started: list[Served] = []

    def start(store: Store, **options: Any) -> Served:
        served = Served(create_app(store, **options))
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, one per test module. Not one per session: while a sync Playwright is open, the thread that opened
    it counts as running an event loop (Playwright's loop, parked in a greenlet between calls), so ``asyncio.run``
    and every async test in this thread fail with "cannot be called from a running event loop" until it closes."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser page (its own cookies) that records every dialog (alert, confirm) it is shown."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.dialogs = []

    def on_dialog(dialog: Any) -> None:
        tab.dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.set_default_timeout(10_000)
    try:
        yield tab
    finally:
        context.close()


def screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    """Save a screenshot as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
