"""``threadline logs search WORDS``: the stored conversations whose title or messages hold every word, from the
store's full-text index (SQLite FTS5, PostgreSQL full-text search), most recently active first, each with the
message that matched and an excerpt of it."""

from __future__ import annotations

import json

import click

from ._errors import EXIT_USAGE, CommandError, friendly_errors
from ._terminal import visible, visible_json
from .store_option import open_cli_store, store_option

__all__ = ["search"]


@click.command("search")
@click.argument("words", nargs=-1, required=True)
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(min=1), help="How many to show.")
@click.option("--offset", default=0, type=click.IntRange(min=0), help="Skip this many (the most recent first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@store_option
@friendly_errors
def search(words: tuple[str, ...], limit: int, offset: int, as_json: bool, store_url: str | None) -> None:
    """Find conversations whose title or messages hold every one of WORDS (each matches as a word prefix, in any
    case); shows each one's id, title, matching messages and an excerpt."""
    query = " ".join(words)
    if not query.strip():
        raise CommandError("give the words to search for", EXIT_USAGE)
    with open_cli_store(store_url) as store:
        found = store.search_conversations(query, limit=limit, offset=offset)
        url = store.url
    if as_json:
        rows = [
            {
                "id": summary.info.id,
                "title": summary.info.title,
                "updated_at": summary.info.updated_at.isoformat(),
                "matches": summary.matches,
                "message_id": summary.match_id,
                "snippet": summary.snippet,
            }
            for summary in found
        ]
        click.echo(visible_json(json.dumps(rows, ensure_ascii=False, indent=2)))
        return
    if not found:
        click.echo(f"no conversation in {url} holds {query!r}", err=True)
        return
    for summary in found:
        info = summary.info
        where = (
            f"{summary.matches} matching message{'s' if summary.matches != 1 else ''}" if summary.matches else "title"
        )
        click.echo(f"{info.id}  {visible(info.title or '(untitled)')}  ({where})")
        if summary.snippet:
            click.echo(f"    {visible(' '.join(summary.snippet.split()))}")
        if summary.match_id:
            click.echo(f"    threadline logs show {info.id}  (message {visible(summary.match_id)})")
