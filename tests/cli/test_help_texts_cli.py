"""Help texts that say what the commands do: ``export``'s usage shows ID as optional (``--all`` takes its place), and
``logs fork --help`` names the title a fork really gets without ``--title``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from threadline import Conversation, MessageList, assistant, user
from threadline.store import open_store

from ._run import run_cli


def threadline(*args: str, store_url: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, store_url=store_url, columns=120)


def test_export_usage_shows_id_as_optional_and_says_id_or_all(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    shown = threadline("export", "--help", store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "Usage: threadline export [OPTIONS] [ID]"
    assert "give ID or --all, not both" in " ".join(shown.stdout.split())

    both = threadline("export", "someid", "--all", store_url=store_url)
    assert both.returncode == 2 and "give a conversation ID or --all (not both)" in both.stderr


def test_fork_help_names_the_default_title_a_fork_gets(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    shown = threadline("logs", "fork", "--help", store_url=store_url)
    assert shown.returncode == 0, shown.stderr
    assert "the original's title with '(fork)' added" in " ".join(shown.stdout.split())

    with open_store(store_url) as store:
        original = Conversation(messages=MessageList([user("Plan a trip"), assistant("Where to?")]), store=store)
        store.update_metadata(original.id, title="Trip")
    forked = threadline("logs", "fork", original.id, store_url=store_url)
    assert forked.returncode == 0, forked.stderr
    with open_store(store_url) as store:
        assert store.get_conversation(forked.stdout.strip()).title == "Trip (fork)"
