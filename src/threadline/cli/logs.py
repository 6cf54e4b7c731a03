"""``threadline logs list`` and ``threadline logs show ID``: the stored conversations, in the terminal.

Both read the store named by ``--store`` (default: ``THREADLINE_STORE``, else the default SQLite file).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._errors import friendly_errors

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["logs", "open_cli_store", "store_option"]

F = TypeVar("F", bound=Callable[..., Any])


def store_option(fn: F) -> F:
    """The ``--store URL`` option shared by every command that reads or writes the store."""
    return click.option(
        "--store",
        "store_url",
        envvar="THREADLINE_STORE",
        default=None,
        metavar="URL",
        help="Store URL (sqlite:///file.db, postgresql://…); default: $THREADLINE_STORE, else threadline.db "
        "in $THREADLINE_HOME or the user data directory.",
    )(fn)


def open_cli_store(url: str | None) -> Store:
    """Open the store a command was pointed at."""
    from ..store import open_store

    return open_store(url or None)


def _when(value: datetime) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


@click.group("logs")
def logs() -> None:
    """Stored conversations: list them, show one."""


@logs.command("list")
@click.option("-n", "--limit", default=50, show_default=True, type=click.IntRange(min=1), help="How many to show.")
@click.option("--offset", default=0, type=click.IntRange(min=0), help="Skip this many (the most recent first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@store_option
@friendly_errors
def list_(limit: int, offset: int, as_json: bool, store_url: str | None) -> None:
    """List conversations, most recently updated first."""
    with open_cli_store(store_url) as store:
        infos = store.list_conversations(limit=limit, offset=offset)
        url = store.url
    if as_json:
        rows = [
            {
                "id": info.id,
                "title": info.title,
                "created_at": info.created_at.isoformat(),
                "updated_at": info.updated_at.isoformat(),
                "messages": info.message_count,
                "mode": info.active_mode,
            }
            for info in infos
        ]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not infos:
        console.print(f"No conversations in {url}.", highlight=False, markup=False)
        return
    from rich.text import Text

    # Titles and URLs are user data: Text objects keep rich from reading "[...]" in them as markup.
    table = Table(title=Text(f"Conversations in {url}"), title_justify="left", highlight=False)
    table.add_column("id", no_wrap=True, min_width=26, style="cyan")
    table.add_column("title", overflow="fold")
    table.add_column("updated", no_wrap=True)
    table.add_column("messages", justify="right")
    table.add_column("mode")
    for info in infos:
        table.add_row(
            info.id,
            Text(info.title or "(untitled)"),
            _when(info.updated_at),
            str(info.message_count),
            info.active_mode or "",
        )
    console.print(table)


@logs.command("show")
@click.argument("conversation_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the log as MessageList JSON (version 2.0).")
@click.option(
    "--context", "with_context", is_flag=True, help="Also report what the next request would send, and what it drops."
)
@store_option
@friendly_errors
def show(conversation_id: str, as_json: bool, with_context: bool, store_url: str | None) -> None:
    """Show one conversation: tool calls grouped with their results, failures with their partial output."""
    with open_cli_store(store_url) as store:
        info = store.get_conversation(conversation_id)
        messages = store.load(conversation_id)
        report = _context_report(conversation_id, store) if with_context else None
    if as_json:
        click.echo(messages.to_json())
        return
    from rich.console import Console
    from rich.text import Text

    from ._render import render_log

    console = Console()
    header = Text(info.title or "(untitled)", style="bold")
    mode = f" · mode {info.active_mode}" if info.active_mode else ""
    header.append(f"  {info.id} · {info.message_count} messages · updated {_when(info.updated_at)}{mode}", style="dim")
    console.print(header)
    render_log(console, messages)
    if report is not None:
        console.print(report, highlight=False)


def _context_report(conversation_id: str, store: Store) -> str:
    """The context builder's report for the next request of a stored conversation, as a few lines of text."""
    from collections import Counter

    from ..conversation import Conversation

    conversation = Conversation.load(conversation_id, store)
    report = conversation.build_context().report
    dropped = report.dropped
    lines = [
        "CONTEXT of the next request",
        f"  kept {len(report.kept)} of {len(conversation.messages)} messages; "
        f"~{report.estimated_tokens:,} tokens, {report.chars:,} characters"
        + (f"; window ended by {report.stopped_by}" if report.stopped_by else ""),
    ]
    if dropped:
        reasons = ", ".join(f"{reason} ×{count}" for reason, count in Counter(d.reason for d in dropped).items())
        lines.append(f"  dropped {len(dropped)}: {reasons}")
    if report.synthetic:
        lines.append(f"  {len(report.synthetic)} unanswered tool call(s) answered 'interrupted' in the request")
    lines.extend(f"  preview sent, full output at {uri}" for uri in report.artifacts)
    if report.over_budget:
        lines.append("  over budget: the latest user message alone exceeds it (sent anyway)")
    return "\n".join(lines)
