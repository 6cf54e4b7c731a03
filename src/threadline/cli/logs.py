"""``threadline logs list`` and ``threadline logs show ID``: the stored conversations, in the terminal (``logs fork``,
``logs delete`` and ``logs search`` live in modules of their own and join the group here).

Both read the store named by ``--store`` (default: ``THREADLINE_STORE``, else the default SQLite file). What the
store holds came from models, tools and files: it is printed with its control characters escaped.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from ..pricing.prices import Spending, cost_text, stored_spending
from ._errors import EXIT_USAGE, CommandError, friendly_errors
from ._terminal import visible, visible_json
from .store_option import open_cli_store, store_option

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ..context import BuiltContext
    from ..message_list import MessageList
    from ..store import ConversationInfo, PageInfo, Store

__all__ = ["logs", "open_cli_store", "store_option"]


def _when(value: datetime) -> str:
    """A timestamp in the local time zone, to the minute, with a four-digit year (not strftime: glibc's ``%Y``
    writes the year 5 as ``5``)."""
    try:
        local = value.astimezone()
    except (OverflowError, ValueError):  # within hours of year 1 or 9999, the local time is out of range: stay
        local = value
    return local.replace(tzinfo=None).isoformat(sep=" ", timespec="minutes")


@click.group("logs")
def logs() -> None:
    """Stored conversations: list them, search them, show, fork or delete one."""


@logs.command("list")
@click.option("-n", "--limit", default=50, show_default=True, type=click.IntRange(min=1), help="How many to show.")
@click.option("--offset", default=0, type=click.IntRange(min=0), help="Skip this many (the most recent first).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@store_option
@friendly_errors
def list_(limit: int, offset: int, as_json: bool, store_url: str | None) -> None:
    """List conversations, most recently updated first, with the tokens, cached tokens and cost of their model
    calls (a cost without a price is "unknown", never $0)."""
    with open_cli_store(store_url, reading=True) as store:
        infos = store.list_conversations(limit=limit, offset=offset)
        tallies = [stored_spending(store, info.id) for info in infos]
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
                "tokens": tally.tokens,
                "cached_tokens": tally.cached,
                "cost_usd": None if tally.cost.usd is None else str(tally.cost.usd),
                "cost_unknown": list(tally.cost.unknown),
            }
            for info, tally in zip(infos, tallies, strict=True)
        ]
        click.echo(visible_json(json.dumps(rows, ensure_ascii=False, indent=2)))
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
    table.add_column("tokens", justify="right")
    table.add_column("cached", justify="right")
    table.add_column("cost", justify="right")
    for info, tally in zip(infos, tallies, strict=True):
        table.add_row(
            info.id,
            Text(visible(info.title or "(untitled)")),
            _when(info.updated_at),
            str(info.message_count),
            info.active_mode or "",
            f"{tally.tokens:,}" if tally.calls else "",
            f"{tally.cached:,}" if tally.calls else "",
            cost_text(tally.cost) if tally.calls else "",  # no model call: nothing spent, nothing unknown
        )
    console.print(table)


DEFAULT_PAGE = 100


@logs.command("show")
@click.argument("conversation_id", metavar="ID")
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"Show the newest N messages (default: {DEFAULT_PAGE}; --json prints the whole log unless a page is asked).",
)
@click.option(
    "--offset", type=click.IntRange(min=0), default=None, metavar="K", help="Show messages from position K (0 = first)."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="With --offset: at most N messages."
)
@click.option("--all", "show_all", is_flag=True, help="Show every message, however long the log.")
@click.option("--json", "as_json", is_flag=True, help="Print the log (and, with --context, the request) as JSON.")
@click.option(
    "--context",
    "with_context",
    is_flag=True,
    help="Also print the exact request the next turn would send, and what it kept and dropped.",
)
@click.option(
    "--mode",
    type=click.Choice(["chat", "agent", "run"]),
    default=None,
    help="Build the request for this mode instead of the conversation's active one (implies --context).",
)
@click.option(
    "--show-reasoning", is_flag=True, help="Also print each assistant message's thinking (reasoning models), dimmed."
)
@store_option
@friendly_errors
def show(
    conversation_id: str,
    last: int | None,
    offset: int | None,
    limit: int | None,
    show_all: bool,
    as_json: bool,
    with_context: bool,
    mode: str | None,
    show_reasoning: bool,
    store_url: str | None,
) -> None:
    """Show one conversation: tool calls grouped with their results, failures with their partial output, and the
    pages it made (Pages.generate_ui). --show-reasoning adds the model's thinking (--json always has it).

    A long log is shown a page at a time: the newest 100 messages unless --last, --offset/--limit or --all say
    otherwise; the output says how many were left out and how to see them.
    """
    if show_all and (last is not None or offset is not None or limit is not None):
        raise click.UsageError("--all shows every message: leave out --last, --offset and --limit")
    if last is not None and (offset is not None or limit is not None):
        raise click.UsageError("use --last N, or --offset K [--limit N], not both")
    if limit is not None and offset is None:
        offset = 0
    paged = last is not None or offset is not None
    if as_json and not paged:
        show_all = True  # JSON is for programs: the whole log unless a page was asked for
    if show_all and not as_json and not (with_context or mode):
        _stream_log(conversation_id, store_url, show_reasoning)
        return
    with open_cli_store(store_url, reading=True) as store:
        info = store.get_conversation(conversation_id)
        page, start, total = _read_page(store, info, last, offset, limit, show_all)
        pages = store.list_pages(conversation_id)
        built = _next_request(conversation_id, store, mode) if (with_context or mode) else None
    if offset is not None and offset > 0 and not page:
        raise CommandError(
            f"--offset {offset} is past the end: the conversation has {total:,} message(s), at positions "
            f"0–{max(total - 1, 0)}",
            EXIT_USAGE,
        )
    end = start + len(page)
    if as_json:
        if built is None:
            click.echo(visible_json(page.to_json()))
        else:
            click.echo(visible_json(json.dumps(_context_json(page, built), ensure_ascii=False, indent=2)))
        return
    from rich.console import Console
    from rich.text import Text

    from ._log_printer import render_log

    console = Console()
    console.print(_header(info))
    if start > 0:
        console.print(Text(_more_text(conversation_id, start, end, total, before=True), style="yellow"))
    render_log(console, page, show_reasoning=show_reasoning)
    _print_total(console, Spending(page), whole=start == 0 and end >= total)
    if end < total:
        console.print(Text(_more_text(conversation_id, start, end, total, before=False), style="yellow"))
    if pages:
        console.print(_pages_text(pages), highlight=False)
    if built is not None:
        console.print(Text(visible(_request_text(built))), highlight=False)
        console.print(Text(visible(_report_text(built, total))), highlight=False)


STREAM_PAGE = 500
"""How many messages ``logs show --all`` reads from the store at a time."""


def _stream_log(conversation_id: str, store_url: str | None, show_reasoning: bool) -> None:
    """``logs show ID --all``: the log read from the store a page at a time, each page printed as it is read, so a
    long log starts showing at once and memory holds one page (a log of 100,000 messages was read whole first, then
    shown)."""
    from rich.console import Console

    from ._log_printer import LogPrinter

    console = Console()
    with open_cli_store(store_url, reading=True) as store:
        console.print(_header(store.get_conversation(conversation_id)))
        printer = LogPrinter(console, show_reasoning=show_reasoning)
        after = -1
        while True:
            page = store.read_after(conversation_id, after, STREAM_PAGE)
            if not page.messages:
                break
            printer.feed(page.messages)
            after = page.seqs[-1]
        printer.finish()
        _print_total(console, printer.total, whole=True)
        pages = store.list_pages(conversation_id)
    if pages:
        console.print(_pages_text(pages), highlight=False)


def _print_total(console: Console, tally: Spending, *, whole: bool) -> None:
    """The line under a log: what its model calls spent (of the messages shown, when a page was)."""
    if not tally.calls:
        return
    from rich.text import Text

    console.print(Text(f"{'total' if whole else 'shown'}: {tally.text()}", style="dim"), highlight=False)


def _header(info: ConversationInfo) -> Text:
    """The line above a log: its title, id, size, last activity and mode."""
    from rich.text import Text

    header = Text(visible(info.title or "(untitled)"), style="bold")
    active = f" · mode {info.active_mode}" if info.active_mode else ""
    header.append(
        f"  {info.id} · {info.message_count} messages · updated {_when(info.updated_at)}{active}", style="dim"
    )
    return header


def _pages_text(pages: list[PageInfo]) -> Text:
    """The pages the conversation made (``Pages.generate_ui``), with the web viewer's URL of each."""
    from rich.text import Text

    from ..toolboxes.pages import page_url

    text = Text(f"\nPAGES ({len(pages)})", style="bold")
    for page in pages:
        # Titles are the model's text: a Text object keeps rich from reading "[...]" in them as markup.
        text.append(f"\n  {page.id}  {_when(page.created_at)}  ")
        text.append(visible(page.title or "(untitled)"))
        text.append(f"  {page_url(page.id)}", style="cyan")
    return text


def _read_page(
    store: Store, info: ConversationInfo, last: int | None, offset: int | None, limit: int | None, show_all: bool
) -> tuple[MessageList, int, int]:
    """The part of the log to show, its position in the log and the log's length; reads only what it shows where
    the store can (the newest messages, by sequence number). A page never starts on a tool result whose call is on
    the page before: it starts at that call, so each result is shown in the box of its call."""
    from ..message_list import MessageList
    from ..store import whole_tool_groups

    conversation_id = info.id
    if show_all:
        messages = store.load(conversation_id)
        return messages, 0, len(messages)
    if offset is not None:
        # Positions count from the start, and the store reads by sequence number: read up to the page's end.
        head = store.read_after(conversation_id, -1, None if limit is None else offset + limit)
        messages = MessageList.unchecked(head.messages)
        start = _owning_call(messages, min(offset, len(messages)))
        total = len(messages) if limit is None else info.message_count
        return messages[start:], start, max(total, len(messages))
    tail = whole_tool_groups(store, conversation_id, store.read_tail(conversation_id, last or DEFAULT_PAGE))
    shown = MessageList.unchecked(tail.messages)
    if not tail.has_older:
        return shown, 0, len(shown)
    total = max(info.message_count, len(shown))
    return shown, total - len(shown), total


def _owning_call(messages: MessageList, start: int) -> int:
    from ..message_types import AssistantMessage, ToolMessage

    index = start
    while 0 < index < len(messages) and isinstance(messages[index], ToolMessage):
        index -= 1
    return index if index < start and isinstance(messages[index], AssistantMessage) else start


def _more_text(conversation_id: str, start: int, end: int, total: int, *, before: bool) -> str:
    """What a page leaves out, and the options that show it."""
    if before:
        return (
            f"… {start:,} earlier message(s) not shown (messages {start}–{end - 1} of {total:,}). "
            f"More: threadline logs show {conversation_id} --last N, --offset K --limit N, or --all"
        )
    return (
        f"… {total - end:,} later message(s) not shown. "
        f"More: threadline logs show {conversation_id} --offset {end}, or --all"
    )


def _next_request(conversation_id: str, store: Store, mode: str | None) -> BuiltContext:
    """What the next turn of a stored conversation would send (tools are not known here: none are offered)."""
    from ..conversation import Conversation

    return Conversation.load(conversation_id, store).build_context(mode=mode)


def _request_text(built: BuiltContext) -> str:
    """Every message of the request, in full, as it would be sent."""
    from ..message_types import AssistantMessage, ToolMessage

    lines = [f"\nREQUEST the next turn would send ({len(built.messages)} messages)"]
    for index, message in enumerate(built.messages):
        made = " (made by the context builder)" if index < built.report.prefix_messages else ""
        if isinstance(message, ToolMessage):
            head = f"[{index}] tool result for {message.tool_name} ({message.tool_call_id})"
            head += " error" if message.is_error else ""
        else:
            head = f"[{index}] {message.role}{made}"
        lines.append(head)
        content = getattr(message, "content", None)  # an approval entry has none (and is never in a request)
        if content:
            lines.extend(f"    {line}" for line in content.splitlines() or [""])
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
                lines.append(f"    -> {call.name}({arguments})  id={call.id}")
    return "\n".join(lines)


def _report_text(built: BuiltContext, total: int) -> str:
    """The report: what was kept, and each drop with its reason (runs of drops for one reason are grouped)."""
    report = built.report
    lines = [
        "\nREPORT",
        f"  kept {len(report.kept)} of {total} messages; ~{report.estimated_tokens:,} tokens, "
        f"{report.chars:,} characters" + (f"; window ended by {report.stopped_by}" if report.stopped_by else ""),
    ]
    if report.kept:
        lines.append(
            f"  kept: {report.kept[0]} … {report.kept[-1]}"
            if len(report.kept) > 2
            else f"  kept: {', '.join(report.kept)}"
        )
    for reason, first, last, count in report.dropped_runs():
        span = first if count == 1 else f"{first} … {last} ({count} messages)"
        lines.append(f"  dropped {span}: {reason}")
    if report.synthetic:
        lines.append(f"  {len(report.synthetic)} unanswered tool call(s) answered 'interrupted' in the request only")
    lines.extend(f"  preview sent, full output at {uri}" for uri in report.artifacts)
    if report.summary:
        lines.append("  a summary of the dropped messages is inserted after the system prefix")
    if report.over_budget:
        lines.append(
            "  over budget: what must be kept (the latest user message, the newest unit) exceeds it; sent anyway"
        )
    return "\n".join(lines)


def _context_json(messages: MessageList, built: BuiltContext) -> dict[str, Any]:
    from ..message_list import MessageList

    report = built.report
    return {
        "log": messages.to_dict(),
        "request": MessageList(built.messages).to_dict()["messages"],
        "report": {
            "kept": report.kept,
            "dropped": [{"id": d.id, "reason": d.reason} for d in report.dropped],
            "estimated_tokens": report.estimated_tokens,
            "chars": report.chars,
            "stopped_by": report.stopped_by,
            "over_budget": report.over_budget,
            "synthetic": report.synthetic,
            "artifacts": report.artifacts,
            "prefix_messages": report.prefix_messages,
        },
    }


def _add_commands() -> None:
    """``logs fork``, ``logs delete`` and ``logs search`` live in their own modules; they join the group here."""
    from .delete import delete
    from .fork import fork
    from .search import search

    logs.add_command(fork)
    logs.add_command(delete)
    logs.add_command(search)


_add_commands()
