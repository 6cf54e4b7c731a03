"""Storage: `open_store(url)` gives a `Store` (SQLite by default, PostgreSQL for many hosts, memory for tests).

What each user needs of a store is a protocol of `threadline.store.capabilities`: a `Conversation` needs a
`ConversationStore`; the viewer and the command line a `BrowsableStore` too; artifacts an `ArtifactStore`, the cache
of ``generate_text`` a `CacheStore`, ``toolboxes.Pages`` a `PageStore`. Every `Store` is all of them; a backend of
your own may be a `ConversationStore` only.

URLs:

- ``None``: the SQLite file ``threadline.db`` in ``THREADLINE_HOME`` (default: the platform's user data directory);
- ``sqlite:///relative/path.db`` (three slashes: relative to the working directory), ``sqlite:////absolute/path.db``
  (four: absolute), as SQLAlchemy and most tools read them, or a bare file path (``?synchronous=full`` syncs every
  commit to disk);
- ``postgresql://user:password@host:port/db`` (or ``postgres://``), with optional ``?schema=NAME``,
  ``pool_min=N``, ``pool_max=N`` — needs the ``postgres`` extra;
- ``memory://``: a new, empty in-memory store.

Backends are imported only when opened: ``import threadline.store`` loads neither sqlite3 nor psycopg.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from ..errors import UserError
from .base import (
    ConversationInfo,
    ConversationSummary,
    ImportItem,
    MessagePage,
    PageInfo,
    Store,
    stored_awaiting,
    whole_tool_groups,
)
from .capabilities import ArtifactStore, BrowsableStore, CacheStore, ConversationStore, PageStore

__all__ = [
    "ArtifactStore",
    "BrowsableStore",
    "CacheStore",
    "ConversationInfo",
    "ConversationStore",
    "ConversationSummary",
    "ImportItem",
    "MessagePage",
    "PageInfo",
    "PageStore",
    "Store",
    "default_path",
    "default_store",
    "latest_conversation_id",
    "open_store",
    "stored_awaiting",
    "whole_tool_groups",
]

STORE_ENV = "THREADLINE_STORE"
HOME_ENV = "THREADLINE_HOME"
DB_NAME = "threadline.db"


def default_path() -> Path:
    """Where the default store lives: ``threadline.db`` in threadline's home directory (``$THREADLINE_HOME``, else
    the user data directory: `threadline.models.settings.home_dir`, where the key file and settings are too)."""
    from ..models.settings import home_dir

    return home_dir() / DB_NAME


def open_store(url: str | os.PathLike[str] | None = None, *, create: bool = True) -> Store:
    """Open a store by URL (see the module docstring for the forms).

    Args:
        url: The store's URL or file path; None for the default SQLite file.
        create: Whether a SQLite file that does not exist yet is made (with its directory). A caller that only
            reads passes False, so a misspelt path is refused instead of becoming a new, empty store.

    Raises:
        UserError: for a URL this function does not understand, a backend whose extra is not installed, or (with
            ``create=False``) a SQLite file that does not exist, named in the message (nothing is created).
        StoreError: if the database cannot be opened or has a newer schema than this threadline knows.
    """
    if url is None:
        from .sqlite import SQLiteStore

        path = default_path()
        _refuse_missing(path, None, create)
        return SQLiteStore(path)
    text = os.fspath(url)
    if not isinstance(text, str) or not text.strip():
        raise UserError("a store URL must be a non-empty string")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme:
        _check_url(text)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresStore

        return PostgresStore(text)
    if scheme == "memory":
        from .memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite" or not scheme:
        return _open_sqlite(text, scheme, create)
    raise UserError(
        f"unknown store URL scheme {scheme!r}: use sqlite:///path/to/file.db, postgresql://…, memory:// or a file path"
    )


def _check_url(text: str) -> None:
    """Refuse a URL the standard parser cannot read (e.g. ``postgresql://[::1``) with a clear error that never shows
    a password."""
    from ._common import redact_url

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - reading the port is what validates it
    except ValueError as exc:
        raise UserError(f"malformed store URL {redact_url(text)!r}: {exc}") from None


def _sqlite_url_path(url: str) -> str:
    """The file a ``sqlite://`` URL names, read as SQLAlchemy reads it: ``sqlite:///file.db`` is ``file.db`` in the
    working directory (three slashes), ``sqlite:////srv/file.db`` is ``/srv/file.db`` (four); ``sqlite://dir/file.db``
    is ``dir/file.db``. Empty when the URL names no file."""
    parts = urlsplit(url)
    if parts.netloc:
        return parts.netloc + parts.path
    return parts.path[1:] if parts.path.startswith("/") else parts.path


def _refuse_missing(path: Path, text: str | None, create: bool) -> None:
    """With ``create=False``, refuse a SQLite file that does not exist, naming it (and the absolute file a URL of
    three slashes meant before 0.2, when there is one)."""
    if create or path.expanduser().exists():
        return
    where = path.expanduser().absolute()
    hint = ""
    if text is not None and not path.is_absolute() and Path("/", path).exists():
        hint = f" (/{path} exists: an absolute path takes four slashes, sqlite:////{path})"
    raise UserError(f"no store at {where}: the file does not exist{hint}; nothing was created")


def _open_sqlite(text: str, scheme: str, create: bool) -> Store:
    from ._common import redact_url
    from .sqlite import SQLiteStore

    if not scheme:
        _refuse_missing(Path(text), None, create)
        return SQLiteStore(text)
    parts = urlsplit(text)
    path = _sqlite_url_path(text)
    if not path:
        raise UserError(f"{redact_url(text)!r} names no file: use sqlite:///path/to/file.db")
    options = dict(parse_qsl(parts.query))
    unknown = set(options) - {"synchronous"}
    if unknown:
        names = ", ".join(sorted(unknown))
        raise UserError(f"unknown SQLite option(s) {names} in {redact_url(text)!r} (known: synchronous)")
    _refuse_missing(Path(path), text, create)
    try:
        return SQLiteStore(path, synchronous=options.get("synchronous", "normal"))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def default_store(*, create: bool = True) -> Store:
    """The store the command line uses: ``THREADLINE_STORE`` if set, else the default SQLite file (``create`` as
    `open_store` takes it)."""
    return open_store(os.environ.get(STORE_ENV) or None, create=create)


def latest_conversation_id(store: Store) -> str | None:
    """The id of the most recently updated conversation (what ``threadline prompt -c`` continues), or None."""
    latest = store.list_conversations(limit=1)
    return latest[0].id if latest else None
