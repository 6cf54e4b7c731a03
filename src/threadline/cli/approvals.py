"""Tool calls that wait, from the command line: ``threadline awaiting [ID]`` lists them, ``approve``, ``deny`` and
``submit`` decide them, ``resume`` goes on with the conversation (docs/architecture.md#tool-calls-that-wait).

Each decision loads the conversation from the store and is logged there (under the store's writer lease), so it
works from any shell while the conversation's own process is gone. What a call holds came from a model: its
arguments and reasons are printed with their control characters escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from ..store import stored_awaiting
from ._errors import EXIT_USAGE, CommandError, friendly_errors
from ._terminal import visible, visible_json
from .store_option import open_cli_store, store_option

if TYPE_CHECKING:
    from rich.console import Console

    from ..conversation import Conversation
    from ..message_list import AwaitingCall
    from ..store import Store

__all__ = [
    "approve",
    "awaiting",
    "default_by",
    "deny",
    "describe_waiting",
    "next_step",
    "resume",
    "submit",
]

SHORT_HASH = 12
"""How many hex digits of an arguments hash the text output shows (``--sha256`` takes that many or more)."""

"""How many messages are read at a time from the end of a log to find its latest tool calls."""

LIST_PAGE = 100
"""How many conversations ``awaiting`` lists from the store at a time."""


def default_by() -> str:
    """Who decides when ``--by`` is not given: the user name of the OS, else ``cli``."""
    import getpass

    try:
        return getpass.getuser() or "cli"
    except (OSError, KeyError, ImportError):  # no user name in the environment nor in the password database
        return "cli"


def _all_waiting(store: Store) -> Iterator[tuple[str, list[AwaitingCall]]]:
    """Every conversation of the store whose log ends with calls that wait, most recently updated first."""
    offset = 0
    while True:
        infos = store.list_conversations(limit=LIST_PAGE, offset=offset)
        for info in infos:
            waiting = stored_awaiting(store, info.id)
            if waiting:
                yield info.id, waiting
        if len(infos) < LIST_PAGE:
            return
        offset += len(infos)


def _arguments_text(waiting: AwaitingCall) -> str:
    call = waiting.call
    if call.raw_arguments is not None:
        return visible(call.raw_arguments)
    return visible_json(json.dumps(call.arguments, ensure_ascii=False))


def describe_waiting(waiting: AwaitingCall) -> str:
    """A waiting call in a few lines, safe to print: id, tool, kind, short hash, reason, arguments."""
    what = "waits for approval" if waiting.kind == "approval" else "waits for a result from outside"
    lines = [
        f"{visible(waiting.call.id)}  {visible(waiting.tool)}  {waiting.kind} ({what})  "
        f"sha256 {waiting.arguments_sha256[:SHORT_HASH]}",
        f"  arguments: {_arguments_text(waiting)}",
    ]
    if waiting.reason:
        lines.append(f"  reason: {visible(waiting.reason)}")
    return "\n".join(lines)


def _as_json(conversation_id: str, waiting: AwaitingCall) -> dict[str, Any]:
    call = waiting.call
    return {
        "conversation": conversation_id,
        "call": call.id,
        "tool": waiting.tool,
        "kind": waiting.kind,
        "reason": waiting.reason,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
        "arguments_sha256": waiting.arguments_sha256,
    }


def next_step(conversation_id: str, waiting: list[AwaitingCall]) -> str:
    """What to type next for a conversation: how to decide the calls that wait, or how to resume it."""
    if not waiting:
        return f"resume with: threadline resume {conversation_id} -T … (the tools the conversation uses)"
    lines = []
    for item in waiting:
        call = visible(item.call.id)
        if item.kind == "external":
            lines.append(f"  threadline submit {conversation_id} {call} --content TEXT")
        else:
            lines.append(
                f"  threadline approve {conversation_id} {call}   or   "
                f"threadline deny {conversation_id} {call} --reason TEXT"
            )
    return "decide with:\n" + "\n".join(lines)


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _err_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


@click.command("awaiting")
@click.argument("conversation_id", metavar="[ID]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of calls) instead of text.")
@store_option
@friendly_errors
def awaiting(conversation_id: str | None, as_json: bool, store_url: str | None) -> None:
    """List the tool calls that wait for a decision or a result: of conversation ID, or of every stored
    conversation whose log ends with such calls. Only the end of each log is read."""
    with open_cli_store(store_url) as store:
        if conversation_id is not None:
            found = [(conversation_id, stored_awaiting(store, conversation_id))]
        else:
            found = list(_all_waiting(store))
        url = store.url
    found = [(cid, waiting) for cid, waiting in found if waiting]
    if as_json:
        rows = [_as_json(cid, item) for cid, waiting in found for item in waiting]
        click.echo(visible_json(json.dumps(rows, ensure_ascii=False, indent=2)))
        return
    from rich.text import Text

    console = _console()
    if not found:
        where = f"conversation {conversation_id}" if conversation_id else url
        console.print(Text(f"No tool calls wait in {where}."), soft_wrap=True)
        return
    for cid, waiting in found:
        console.print(Text(f"conversation {cid}", style="bold"), soft_wrap=True)
        for item in waiting:
            console.print(Text(describe_waiting(item)), soft_wrap=True)
        console.print(Text(next_step(cid, waiting), style="dim"), soft_wrap=True)


# -- deciding ------------------------------------------------------------------------------------------------
_by_option = click.option(
    "--by", default=None, metavar="NAME", help="Who decides (logged); default: your user name on this computer."
)
_sha_option = click.option(
    "--sha256",
    "sha256",
    default=None,
    metavar="HASH",
    help="The hash of the arguments you saw (as `threadline awaiting` shows it, at least 12 digits): refused if "
    "the call's arguments differ.",
)
_tool_option = click.option(
    "-T",
    "--tool",
    "tool_specs",
    multiple=True,
    metavar="TOOL",
    help="The conversation's tools, as for `threadline prompt -T` (MODULE:NAME, mcp:COMMAND…). Repeatable.",
)


def _load(store: Store, conversation_id: str, tools: list[Any] | None = None) -> Conversation:
    from ..conversation import Conversation, ConversationConfig
    from ..errors import StoreError

    try:
        return Conversation.load(conversation_id, store, ConversationConfig(tools=list(tools or [])))
    except StoreError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _full_hash(conversation: Conversation, call_id: str, given: str | None) -> str | None:
    """``--sha256`` as given, or the whole hash of the waiting call it is the start of.

    Raises:
        CommandError: for a hash too short to mean anything.
    """
    if given is None:
        return None
    given = given.strip().lower()
    if len(given) < SHORT_HASH:
        raise CommandError(f"--sha256 needs at least {SHORT_HASH} hex digits of the hash, got {len(given)}", EXIT_USAGE)
    for item in conversation.awaiting:
        if item.call.id == call_id and item.arguments_sha256.startswith(given):
            return item.arguments_sha256
    return given  # not the call's: the decision refuses it, naming both


def _edited_arguments(text: str | None, tool_specs: tuple[str, ...]) -> dict[str, Any] | None:
    """``--arguments`` read as a JSON object (checked against the tool's schema later, which needs ``-T``)."""
    if text is None:
        return None
    if not tool_specs:
        raise CommandError(
            "--arguments are checked against the tool's schema, so the tool must be loaded: pass -T MODULE:NAME "
            "(as for threadline prompt)",
            EXIT_USAGE,
        )
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CommandError(f"--arguments is not JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(value, dict):
        raise CommandError(f"--arguments must be a JSON object, got {type(value).__name__}", EXIT_USAGE)
    return value


def _check_tool_loaded(conversation: Conversation, call_id: str, tools: list[Any]) -> None:
    """Edited arguments need the called tool among the ``-T`` tools: say so in the CLI's words."""
    from ..tools import resolve_tools

    item = next((item for item in conversation.awaiting if item.call.id == call_id), None)
    if item is None:
        return  # the decision refuses the call, naming those that wait
    names = sorted(resolve_tools(tools).tools)
    if item.tool not in names:
        offered = ", ".join(names) or "none"
        raise CommandError(
            f"call {call_id!r} is to tool {item.tool!r}, which no -T option loads (loaded: {offered}); "
            "--arguments are checked against its schema, so pass -T with it",
            EXIT_USAGE,
        )


def _report(conversation: Conversation, logged: str) -> None:
    """Print what was logged (stdout) and what to do next (stderr)."""
    from rich.text import Text

    _console().print(Text(logged), soft_wrap=True)
    _err_console().print(Text(next_step(conversation.id, conversation.awaiting), style="dim"), soft_wrap=True)


@click.command("approve")
@click.argument("conversation_id", metavar="ID")
@click.argument("call_id", metavar="CALL")
@_by_option
@click.option("--reason", default=None, metavar="TEXT", help="Why (logged).")
@click.option(
    "--arguments",
    "arguments_text",
    default=None,
    metavar="JSON",
    help="Run the call with these arguments (a JSON object) instead of the model's; needs -T for the tool.",
)
@click.option(
    "--scope",
    type=click.Choice(["call", "conversation"]),
    default="call",
    show_default=True,
    help="conversation: also approve this tool's later calls in this conversation.",
)
@_sha_option
@_tool_option
@store_option
@friendly_errors
def approve(
    conversation_id: str,
    call_id: str,
    by: str | None,
    reason: str | None,
    arguments_text: str | None,
    scope: str,
    sha256: str | None,
    tool_specs: tuple[str, ...],
    store_url: str | None,
) -> None:
    """Approve tool call CALL of conversation ID; `threadline resume ID` then runs it."""
    arguments = _edited_arguments(arguments_text, tool_specs)
    with open_cli_store(store_url) as store:
        from .loading import load_tools

        tools = load_tools(tool_specs, store)
        conversation = _load(store, conversation_id, tools)
        if arguments is not None:
            _check_tool_loaded(conversation, call_id, tools)
        entry = conversation.approve(
            call_id,
            by=by or default_by(),
            reason=reason,
            arguments=arguments,
            scope=scope,
            arguments_sha256=_full_hash(conversation, call_id, sha256),
        )
        logged = f"approved {entry.tool_call_id} ({entry.tool_name}) by {entry.by}"
        if entry.scope == "conversation":
            logged += ", and its later calls in this conversation"
        if entry.reason:
            logged += f": {entry.reason}"
        if entry.arguments is not None:
            logged += f"\n  with arguments {json.dumps(entry.arguments, ensure_ascii=False)}"
        _report(conversation, visible(logged))


@click.command("deny")
@click.argument("conversation_id", metavar="ID")
@click.argument("call_id", metavar="CALL")
@click.option("--reason", required=True, metavar="TEXT", help="Why (logged, and read by the model).")
@_by_option
@_sha_option
@store_option
@friendly_errors
def deny(
    conversation_id: str, call_id: str, reason: str, by: str | None, sha256: str | None, store_url: str | None
) -> None:
    """Deny tool call CALL of conversation ID: the model reads "denied by NAME: REASON" as the call's result."""
    if not reason.strip():
        raise click.BadParameter("give a reason: the model reads it", param_hint="--reason")
    with open_cli_store(store_url) as store:
        conversation = _load(store, conversation_id)
        entry = conversation.deny(
            call_id, by=by or default_by(), reason=reason, arguments_sha256=_full_hash(conversation, call_id, sha256)
        )
        result = conversation.messages[-1]
        content = getattr(result, "content", "")
        _report(conversation, visible(f"denied {entry.tool_call_id} ({entry.tool_name}); its result: {content}"))


@click.command("submit")
@click.argument("conversation_id", metavar="ID")
@click.argument("call_id", metavar="CALL")
@click.option("--content", required=True, metavar="TEXT", help="The call's result, as the model will read it.")
@click.option("--error", "is_error", is_flag=True, help="The result is a failure (the model reads it as one).")
@store_option
@friendly_errors
def submit(conversation_id: str, call_id: str, content: str, is_error: bool, store_url: str | None) -> None:
    """Give the result of tool call CALL (a tool that runs outside: @tool(external=True)) of conversation ID."""
    with open_cli_store(store_url) as store:
        conversation = _load(store, conversation_id)
        result = conversation.submit_result(call_id, content, is_error=is_error)
        kind = "an error result" if result.is_error else "a result"
        _report(conversation, visible(f"submitted {kind} for {result.tool_call_id} ({result.tool_name})"))


def _has_results_unread(conversation: Conversation) -> bool:
    """Whether the log ends with tool results the model has not read (a denial, a submitted result)."""
    from ..message_types import ApprovalMessage, ToolMessage

    for message in reversed(conversation.messages):
        if not isinstance(message, ApprovalMessage):
            return isinstance(message, ToolMessage)
    return False


@click.command("resume")
@click.argument("conversation_id", metavar="ID")
@click.option(
    "-m",
    "--model",
    "model_name",
    default=None,
    metavar="MODEL",
    help="The model to go on with (as for threadline prompt); default $THREADLINE_MODEL, else the one of "
    "threadline models default, else local.",
)
@_tool_option
@click.option("--show-reasoning", is_flag=True, help="Show the model's thinking as it streams, dimmed, on stderr.")
@store_option
@friendly_errors
def resume(
    conversation_id: str,
    model_name: str | None,
    tool_specs: tuple[str, ...],
    show_reasoning: bool,
    store_url: str | None,
) -> None:
    """Go on with conversation ID after its waiting calls were decided: run the approved calls (with -T, their
    tools), then the model, streaming its answer as `threadline prompt` does. Nothing new is asked."""
    from ..message_list import call_waits
    from ..tools import resolve_tools
    from .loading import check_model, load_tools, prepare_model, resolve_model
    from .turn_printer import TurnInterrupted, TurnPrinter, interrupted, run_printed_turn, stderr_console, stdout_writer

    with open_cli_store(store_url) as store:
        tools = load_tools(tool_specs, store)
        model = resolve_model(model_name)
        check_model(model, tools)
        conversation = _load(store, conversation_id)
        waits = call_waits(conversation.messages)
        if waits.waiting:
            raise CommandError(
                f"conversation {conversation_id} still has calls that wait; "
                + next_step(conversation_id, waits.waiting),
                EXIT_USAGE,
            )
        if not waits.unsettled and not _has_results_unread(conversation):
            raise CommandError(
                f"conversation {conversation_id} has nothing to go on with: no call was decided or answered since "
                f"the model's last answer (ask something new with: threadline prompt --cid {conversation_id} TEXT)",
                EXIT_USAGE,
            )
        offered = resolve_tools(tools).tools
        missing = sorted({call.name for call, _ in waits.approved if call.name not in offered})
        if missing:
            raise CommandError(
                f"approved calls run tool(s) {', '.join(missing)}: pass -T with them (nothing was run)", EXIT_USAGE
            )
        events = stderr_console()
        prepare_model(model, events)
        builder = conversation.continuation.model(model)
        if tools:
            builder = builder.tools(*tools)
        builder.prompt_conversation()
        printer = TurnPrinter(stdout_writer(), events, thinking=events if show_reasoning else None)
        try:
            result = run_printed_turn(conversation, printer)
        except TurnInterrupted:
            raise interrupted(conversation, "threadline resume {id}") from None
        if result.stop_reason == "awaiting":
            from rich.text import Text

            for item in conversation.awaiting:
                events.print(Text(describe_waiting(item)), soft_wrap=True)
            events.print(Text(next_step(conversation.id, conversation.awaiting), style="dim"), soft_wrap=True)
        else:
            events.print(
                f"[dim]conversation {conversation.id} (continue with: threadline prompt --cid {conversation.id} …)[/]"
            )
