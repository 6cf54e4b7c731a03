"""The README's approval round trip, run as written on the embedded model in a fresh process: the forced call
waits, is approved from a conversation loaded anew, and runs once when the conversation resumes. What the tiny
model says after that is its own; what is checked is what threadline guarantees (the wait, the decision, one run,
a valid stored log)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from threadline import ApprovalMessage, ToolMessage
from threadline.store import open_store

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Tool calls that wait") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_approval_example_runs_as_written(tmp_path: Path) -> None:
    code = readme_example()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.strip().splitlines()
    assert printed and printed[0].startswith("[('pay', {")  # the waiting call, as the comment shows it

    with open_store(str(tmp_path / "approvals.db")) as store:
        [info] = store.list_conversations()
        log = store.load(info.id)
    log.validate()
    entries = [m for m in log if isinstance(m, ApprovalMessage)]
    first = entries[0].tool_call_id
    assert [(e.tool_call_id, e.state, e.by) for e in entries[:2]] == [
        (first, "requested", None),
        (first, "approved", "alice"),
    ]
    results = [m for m in log if isinstance(m, ToolMessage) and m.tool_call_id == first]
    assert len(results) == 1 and not results[0].is_error and results[0].content.startswith("paid ")
