"""`open_store(url)`: which URL opens what, and clear errors for the ones it cannot open."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import threadline
from tests.conftest import POSTGRES_DSN
from threadline import StoreError, UserError, UserMessage
from threadline.store import default_path, default_store, open_store
from threadline.store.memory import MemoryStore
from threadline.store.postgres import PostgresStore
from threadline.store.sqlite import SQLiteStore


def test_default_store_is_sqlite_in_threadline_home(_isolated_home: Path) -> None:
    with threadline.open_store() as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == _isolated_home / "threadline.db"
        store.create_conversation("x")
    assert (_isolated_home / "threadline.db").is_file()
    assert default_path() == _isolated_home / "threadline.db"


def test_default_path_without_threadline_home_is_the_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("THREADLINE_HOME")
    assert default_path() == Path(platformdirs.user_data_dir("threadline", appauthor=False)) / "threadline.db"


def test_default_store_follows_threadline_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("THREADLINE_STORE", f"sqlite:///{tmp_path / 'chosen.db'}")
    with default_store() as store:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "chosen.db"


@pytest.mark.parametrize("form", ["sqlite:////{p}", "sqlite:///{p}", "{p}"])
def test_sqlite_url_forms_name_the_same_file(tmp_path: Path, form: str) -> None:
    """Four slashes are an absolute path (``sqlite:////`` + ``tmp/…``); an absolute path after three slashes gives
    four as well; a bare path is a path."""
    path = tmp_path / "sub" / "x.db"
    with open_store(form.format(p=str(path).lstrip("/") if form.startswith("sqlite:////") else path)) as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == path
        assert store.url == f"sqlite:///{path}"  # four slashes: the URL opens this same file again
    with open_store(store.url) as again:
        assert isinstance(again, SQLiteStore) and again.path == path


def test_three_slashes_are_relative_to_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sqlite:///file.db``, the form ``--help`` shows, is ``file.db`` here, as SQLAlchemy and most tools read it
    (it was ``/file.db`` at the filesystem root)."""
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///file.db") as store:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "file.db"
        store.create_conversation("here")
    assert (tmp_path / "file.db").is_file()
    assert not Path("/file.db").exists()


def test_relative_sqlite_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite://rel/x.db") as store:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "rel" / "x.db"


@pytest.mark.parametrize("form", ["sqlite:///{p}", "{p}"])
def test_a_missing_file_is_refused_when_not_creating(tmp_path: Path, form: str) -> None:
    """A reader (``create=False``) is told the file does not exist, with its path, and nothing is made: before,
    a misspelt path became a new directory and an empty database."""
    missing = tmp_path / "misspelt" / "store.db"
    with pytest.raises(UserError, match=re.escape(f"no store at {missing}: the file does not exist")):
        open_store(form.format(p=missing), create=False)
    assert list(tmp_path.iterdir()) == []  # no directory, no database, no lease folder


def test_a_missing_relative_file_names_the_absolute_one_it_may_have_meant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL written for the old reading (three slashes, absolute) points at the four-slash spelling."""
    existing = tmp_path / "old.db"
    with open_store(f"sqlite:///{existing}") as store:
        store.create_conversation("kept")
    monkeypatch.chdir(tmp_path)
    relative = str(existing).lstrip("/")
    hint = re.escape(f"/{relative} exists: an absolute path takes four slashes")
    with pytest.raises(UserError, match=hint) as caught:
        open_store(f"sqlite:///{relative}", create=False)
    assert f"sqlite:////{relative}" in str(caught.value)
    assert not (tmp_path / relative.split("/")[0]).exists()  # nothing was made under the working directory


def test_an_existing_file_opens_when_not_creating(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with open_store(path) as store:
        store.create_conversation(id="c")
    with open_store(f"sqlite:///{path}", create=False) as store:
        assert store.has_conversation("c")


def test_memory_stores_are_separate() -> None:
    first, second = open_store("memory://"), open_store("memory://")
    assert isinstance(first, MemoryStore)
    first.create_conversation(id="c")
    assert not second.has_conversation("c")


def test_postgres_url_opens_postgres_store(postgres_dsn: str) -> None:
    from tests.store._backends import postgres_url

    with postgres_url() as url, open_store(url.replace("postgresql://", "postgres://")) as store:
        assert isinstance(store, PostgresStore)
        store.create_conversation(id="c")
        assert store.schema is not None and store.schema.startswith("tl_test_")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://host/db", "unknown store URL scheme 'mysql'"),
        ("sqlite://", "names no file"),
        ("sqlite:///tmp/x.db?journal=off", "unknown SQLite option"),
        ("sqlite:///tmp/x.db?synchronous=sometimes", "synchronous must be one of"),
        ("", "non-empty"),
        (f"{POSTGRES_DSN}?schema=bad-name;drop", "invalid schema name"),
        (f"{POSTGRES_DSN}?pool_max=many", "must be integers"),
    ],
)
def test_bad_urls_are_user_errors(url: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        open_store(url)


def test_an_unknown_sqlite_option_is_refused_without_showing_a_password_in_the_url(tmp_path: Path) -> None:
    """Before, the error quoted the whole URL: a password given as a query parameter was shown with it."""
    with pytest.raises(UserError, match="unknown SQLite option") as caught:
        open_store(f"sqlite:///{tmp_path}/x.db?password=s3cretPW&journal=off")
    assert "s3cretPW" not in str(caught.value) and "password" in str(caught.value)


def test_unreachable_postgres_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as caught:
        open_store("postgresql://alice:s3cret@127.0.0.1:1/db")
    assert "s3cret" not in str(caught.value)
    assert "alice:***@127.0.0.1:1" in str(caught.value)


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(StoreError, match=r"notes\.txt"):
        open_store(f"sqlite:///{path}")
    assert path.read_text().startswith("these are my notes")


def test_an_unwritable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the directory"):
        open_store(f"sqlite:///{blocker / 'sub' / 'x.db'}")


def test_full_synchronous_mode_works(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'x.db'}?synchronous=full") as store:
        info = store.create_conversation()
        store.append(info.id, [UserMessage(content="durable")])
        assert store.load(info.id)[0].content == "durable"  # type: ignore[union-attr]


def test_using_the_sqlite_store_imports_no_database_driver(tmp_path: Path) -> None:
    code = (
        "import sys, threadline\n"
        "assert 'threadline.store.sqlite' not in sys.modules and 'sqlite3' not in sys.modules\n"
        f"s = threadline.open_store({str(tmp_path / 'x.db')!r}); s.create_conversation(); s.close()\n"
        "bad = [m for m in ('psycopg', 'psycopg_pool', 'click', 'rich') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
