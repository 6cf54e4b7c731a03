"""Running the ``threadline`` command in a subprocess, as a user would, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping


def run_cli(
    *args: str,
    store_url: str,
    env: Mapping[str, str] | None = None,
    unset: Iterable[str] = (),
    stdin: str | None = "",
    columns: int = 200,
    merged: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m threadline *args`` on the store at ``store_url``, with ``env`` added to this process's environment
    and ``unset`` removed from it; output captured as UTF-8 text (``merged``: stderr into stdout, as ``2>&1``);
    ``stdin`` given as the whole input (closed)."""
    environment = {
        **os.environ,
        "THREADLINE_STORE": store_url,
        "COLUMNS": str(columns),
        "PYTHONUNBUFFERED": "1",
        "PYTHONIOENCODING": "utf-8",
        **(env or {}),
    }
    for name in unset:
        environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "threadline", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=environment,
        input=stdin,
        timeout=120,
    )
