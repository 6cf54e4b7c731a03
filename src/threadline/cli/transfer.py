"""``threadline export`` and ``threadline import``: logs in and out of the store.

Two forms: a single ``MessageList`` JSON file (version 2.0; import also reads fluent_llm 1.0 and OpenAI message
lists), and the JSON-file layout ``conversations/index.json`` + ``conversations/<id>/messages.json``. An import reads
and checks everything first and then writes it in one transaction: it either completes or writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UserError
from ._errors import conversation_id as check_conversation_id
from ._errors import friendly_errors
from .store_option import open_cli_store, store_option

__all__ = ["export", "import_"]


@click.command("export")
# "[ID]": the ID is optional, as --all takes its place (click would print a bare metavar as if it were required).
@click.argument("conversation_id", metavar="[ID]", required=False)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="File (json) or directory (files); json: stdout.")
@click.option(
    "--layout",
    type=click.Choice(["json", "files"]),
    default="json",
    show_default=True,
    help="json: one MessageList file; files: conversations/index.json + conversations/<id>/messages.json.",
)
@click.option("--all", "export_all", is_flag=True, help="Every conversation (with --layout files).")
@store_option
@friendly_errors
def export(
    conversation_id: str | None, output: Path | None, layout: str, export_all: bool, store_url: str | None
) -> None:
    """Export conversation ID, or with --all every conversation (--all needs --layout files); give ID or --all,
    not both."""
    if export_all == (conversation_id is not None):
        raise UserError("give a conversation ID or --all (not both)")
    if export_all and layout != "files":
        raise UserError("--all needs --layout files (a single JSON file holds one conversation)")
    if layout == "files" and output is None:
        raise UserError("--layout files needs -o DIRECTORY")
    with open_cli_store(store_url) as store:
        if export_all:
            infos, offset = [], 0
            while batch := store.list_conversations(limit=500, offset=offset):
                infos.extend(batch)
                offset += len(batch)
        else:
            assert conversation_id is not None
            infos = [store.get_conversation(conversation_id)]
        logs = [(info, list(store.load(info.id))) for info in infos]
    if layout == "json":
        from ..message_list import MessageList

        text = MessageList(logs[0][1]).to_json()
        if output is None:
            from ._terminal import visible_json

            click.echo(visible_json(text))  # the same JSON value; nothing in it a terminal obeys
            return
        from ..store.jsonfiles import write_atomic

        write_atomic(output, text.encode())
        click.echo(f"Exported {infos[0].id} ({len(logs[0][1])} messages) to {output}", err=True)
        return
    from ..store.jsonfiles import export_layout

    assert output is not None
    root = export_layout(output, logs)
    click.echo(f"Exported {len(logs)} conversation(s) to {root}", err=True)


@click.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path), metavar="FILE|DIR")
@click.option(
    "--cid",
    "conversation_id",
    callback=check_conversation_id,
    help="The id of the imported conversation (FILE only; default: a new id).",
)
@store_option
@friendly_errors
def import_(source: Path, conversation_id: str | None, store_url: str | None) -> None:
    """Import a MessageList JSON FILE, or a DIR holding conversations/index.json + <id>/messages.json."""
    from ..store.jsonfiles import read_layout, read_log_file

    if source.is_dir():
        if conversation_id is not None:
            raise UserError("--cid applies to a single file; a layout keeps the ids of its index.json")
        items = read_layout(source)
    else:
        items = [read_log_file(source, conversation_id)]
    with open_cli_store(store_url) as store:
        infos = store.import_conversations(items)
        url = store.url
    total = sum(info.message_count for info in infos)
    for info in infos:
        click.echo(info.id)
    click.echo(f"Imported {len(infos)} conversation(s), {total} messages, into {url}", err=True)
