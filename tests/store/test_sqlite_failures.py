"""A failed SQLite write leaves the store usable (issue 8, item 16): a COMMIT that fails is rolled back, so the next
call on that thread works (before, the connection stayed inside the transaction and every later write failed with
"cannot start a transaction within a transaction"); a write that fails because the disk is full reports that cause
(before, SQLite had already rolled back and the store's own ROLLBACK failed, hiding it behind "cannot rollback")."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from threadline import StoreError, UserMessage
from threadline.store import open_store


def test_a_failed_commit_is_rolled_back_and_the_next_write_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SQLite built with SQLITE_DEFAULT_FOREIGN_KEYS=1 checks foreign keys on every connection; an audit table with a
    # deferred foreign key, filled by a trigger, then makes COMMIT itself fail for some messages.
    connect = sqlite3.connect

    def connect_with_foreign_keys(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect_with_foreign_keys)
    path = tmp_path / "store.db"
    store = open_store(f"sqlite:///{path}")
    try:
        info = store.create_conversation("audited")
        with connect(path) as admin:
            admin.executescript(
                """
                CREATE TABLE audit (conversation INTEGER REFERENCES conversations (key) DEFERRABLE INITIALLY DEFERRED);
                CREATE TRIGGER audit_poison AFTER INSERT ON messages
                WHEN CAST(NEW.data AS TEXT) LIKE '%poison%'
                BEGIN INSERT INTO audit (conversation) VALUES (-1); END;
                """
            )
        first = UserMessage(content="fine")
        store.append(info.id, [first])
        with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
            store.append(info.id, [UserMessage(content="poison")])
        # The same thread goes on: the failed transaction was rolled back, nothing of it was kept.
        second = UserMessage(content="after")
        store.append(info.id, [second])
        store.update_metadata(info.id, title="still works")
        assert store.load(info.id) == [first, second]
        assert store.get_conversation(info.id).message_count == 2
    finally:
        store.close()


CHILD = textwrap.dedent(
    """
    import os, resource, signal, sys
    from threadline import StoreError, UserMessage
    from threadline.store import open_store

    path = sys.argv[1]
    store = open_store("sqlite:///" + path)
    info = store.create_conversation("full disk")
    first = UserMessage(content="small")
    store.append(info.id, [first])
    # The disk is full: no file may grow past its size now (writes fail with EFBIG instead of a signal).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = max(os.path.getsize(path + suffix) for suffix in ("", "-wal")) + 4096
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        store.append(info.id, [UserMessage(content="x" * 20_000_000)])
    except StoreError as exc:
        print("ERROR", exc)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    second = UserMessage(content="after")
    store.append(info.id, [second])
    log = store.load(info.id)
    log.validate()
    print("STORED", [m.content for m in log])
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_reports_its_cause_and_the_next_write_works(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "store.db")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    error = next(line for line in lines if line.startswith("ERROR"))
    assert "disk I/O error" in error or "disk is full" in error, error
    assert "rollback" not in error
    assert lines[-1] == "STORED ['small', 'after']"
