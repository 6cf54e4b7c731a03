"""Writer leases: one turn at a time per conversation, across threads, processes and hosts (see `Store.try_lease`).

A lease is held from the moment a writer applies its messages to the end of its turn, so another writer's messages
never land inside its tool group. Each backend keeps it where a dead holder cannot leave it stuck:

- in-process (`LocalLeases`: `MemoryStore`, and the default of any store): a table in memory;
- SQLite (`FileLease`): an exclusive ``flock`` on a small file beside the database, ``<db>-leases/<hash>``, which the
  kernel drops the moment the holding process dies, ``kill -9`` included; the file exists only while the lease is
  held (see `try_file_lease`);
- PostgreSQL: a session advisory lock on a connection kept for leases (see `threadline.store.postgres`), which the
  server drops when that connection ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from ..errors import ConversationBusy

__all__ = [
    "FileLease",
    "Lease",
    "LocalLeases",
    "appended_behind",
    "lease_file",
    "local_leases",
    "remove_lease_file",
    "try_file_lease",
]


class Lease:
    """A held writer lease on one conversation. `release` gives it up; releasing twice does nothing.

    Args:
        conversation_id: The conversation it holds.
        on_release: Called once, by the first `release`.
    """

    __slots__ = ("_lock", "_on_release", "conversation_id")

    def __init__(self, conversation_id: str, on_release: Callable[[], None]) -> None:
        self.conversation_id = conversation_id
        self._on_release: Callable[[], None] | None = on_release
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        """Whether the lease has not been released yet."""
        return self._on_release is not None

    def release(self) -> None:
        """Give the lease up (idempotent)."""
        with self._lock:
            action, self._on_release = self._on_release, None
        if action is not None:
            action()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<Lease on {self.conversation_id!r}{'' if self.held else ' (released)'}>"


class LocalLeases:
    """Leases that exclude writers of this process only (one table per store object)."""

    __slots__ = ("_held", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()

    def try_lease(self, conversation_id: str, on_release: Callable[[], None] | None = None) -> Lease | None:
        """A lease if no writer of this process holds one on the conversation, else None.

        Args:
            conversation_id: The conversation.
            on_release: Also called when the lease is released (before the table lets the next writer in).
        """
        with self._lock:
            if conversation_id in self._held:
                return None
            self._held.add(conversation_id)

        def release() -> None:
            try:
                if on_release is not None:
                    on_release()
            finally:
                with self._lock:
                    self._held.discard(conversation_id)

        return Lease(conversation_id, release)

    def held(self, conversation_id: str) -> bool:
        """Whether a writer of this process holds the conversation's lease."""
        with self._lock:
            return conversation_id in self._held


_tables: weakref.WeakKeyDictionary[object, LocalLeases] = weakref.WeakKeyDictionary()
_tables_lock = threading.Lock()


def local_leases(store: object) -> LocalLeases:
    """The in-process lease table of a store object (made on first use)."""
    with _tables_lock:
        table = _tables.get(store)
        if table is None:
            table = _tables[store] = LocalLeases()
        return table


class FileLease(Lease):
    """A lease held as an exclusive ``flock`` on a file; the kernel drops it when the process dies."""

    __slots__ = ()


def lease_file(database: Path, conversation_id: str) -> Path:
    """The lock file of a conversation: ``<database>-leases/<hash of the id>`` (any id maps to a safe name)."""
    digest = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return database.with_name(f"{database.name}-leases") / digest


def try_file_lease(database: Path, conversation_id: str) -> Lease | None:
    """Take the conversation's lease of a SQLite database without waiting: a lease, or None if held elsewhere.

    ``flock`` locks belong to an open file, so two holders in one process exclude each other as two processes do.
    Where ``fcntl`` does not exist (Windows), the lease excludes writers of this process only.

    The lock file lives only while a lease is held: `Lease.release` removes it (then the directory too, once
    empty), so ``<db>-leases/`` does not grow with every conversation ever run. Removing a lock file that another
    process may have open is safe here because a lease is held only on the file its path names:

    - a taker locks the file it opened, then checks that the path still names that file (same device and inode);
      if not, a releaser removed it in between, and the taker lets go and starts over on the path's new file;
    - a releaser removes the path while it still holds the lock, and only then closes the file.

    So the path names a holder's file for as long as it holds it (only a holder removes the path, and only its own
    file), and two holders of one conversation would need the path to name two files at once. A holder killed
    before it removes its file leaves it behind, unlocked by the kernel: the next lease of that conversation takes
    it and removes it on release (and `remove_lease_file` removes it when the conversation is deleted).

    Raises:
        OSError: if the lock file cannot be created.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return _fallback.try_lease(f"{database}\0{conversation_id}")
    path = lease_file(database, conversation_id)
    while True:
        fd = _open_lock_file(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _names(path, fd):
                break
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a releaser removed this file after we opened it: start over on the path's new file

    def release() -> None:
        # Remove the path while holding the lock (see above), then close the file, which drops the lock (it is
        # this file's only descriptor).
        try:
            _remove(path)
        finally:
            os.close(fd)

    return FileLease(conversation_id, release)


def remove_lease_file(database: Path, conversation_id: str) -> None:
    """Remove the conversation's lock file if a killed holder left one and no one holds it (a held lease removes its
    own file on release). Used when the conversation is deleted.

    Raises:
        OSError: if the file exists but cannot be opened or removed.
    """
    path = lease_file(database, conversation_id)
    if not path.exists():
        return
    lease = try_file_lease(database, conversation_id)
    if lease is not None:
        lease.release()


def _open_lock_file(path: Path) -> int:
    """Open a lock file, creating it and its directory if needed (a releaser may remove the directory between the
    two steps: it is made again)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            return os.open(path, flags, 0o600)
        except FileNotFoundError:
            # Made by another process meanwhile (and maybe removed again: then the loop makes it once more).
            with contextlib.suppress(FileExistsError):
                path.parent.mkdir()


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` names the open file ``fd``."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _remove(path: Path) -> None:
    """Remove a released lock file, then its directory if that leaves it empty. A file that cannot be removed stays
    (the next lease of its conversation uses it): releasing never fails for it."""
    try:
        path.unlink(missing_ok=True)
        path.parent.rmdir()
    except OSError:
        pass  # the directory is not empty (other leases are held) or is gone; or the file could not be removed


_fallback = LocalLeases()


def appended_behind(conversation_id: str, expected: int, found: int) -> ConversationBusy:
    """The error of an append whose writer expected ``expected`` messages in the conversation but found
    ``found``: another writer appended without holding the lease (or the lease was lost)."""
    return ConversationBusy(
        f"conversation {conversation_id!r} was changed by another writer: this one expected {expected} stored "
        f"messages and found {found}; nothing was appended (load the conversation again to continue it)"
    )
