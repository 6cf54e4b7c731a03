"""``threadline prompt TEXT`` (one turn, the answer streamed to stdout) and ``threadline chat`` (a conversation
typed line by line), with the options they share and how they open, reserve and configure the conversation.

Loading ``-T`` tools and ``-m`` models is `threadline.cli.loading`; showing a turn as it happens is
`threadline.cli.turn_printer` (their names are importable from here too, as other commands use them).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from .._numbers import finite_problem
from ..pricing.prices import Spending
from ._asking import settle_waiting
from ._errors import EXIT_USAGE, CommandError, conversation_id, friendly_errors
from ._params import FiniteFloatRange
from .loading import check_model, check_tool_choice, load_tool, load_tools, prepare_model, resolve_model
from .otlp import otlp_option
from .store_option import open_cli_store, store_option
from .turn_printer import (
    EXIT_INTERRUPTED,
    AnswerNotSaved,
    TurnInterrupted,
    TurnPrinter,
    interrupted,
    not_saved,
    run_printed_turn,
    stderr_console,
    stdout_writer,
)

if TYPE_CHECKING:
    from rich.console import Console

    from ..attachments import Attachment
    from ..builder import PromptBuilder
    from ..conversation import Conversation
    from ..engine import TurnResult
    from ..models.base import Model
    from ..store import Store

__all__ = [
    "EXIT_INTERRUPTED",
    "TurnInterrupted",
    "TurnPrinter",
    "attachments_of",
    "chat",
    "check_model",
    "check_tool_choice",
    "interrupted",
    "load_tool",
    "load_tools",
    "open_conversation",
    "prepare_model",
    "prompt",
    "resolve_model",
    "run_printed_turn",
    "stderr_console",
    "stdout_writer",
]


Options = tuple[tuple[str, str], ...]
"""``-o NAME VALUE`` pairs as click gives them."""


def _settings(max_tokens: int | None, temperature: float | None, options: Options = ()) -> dict[str, Any]:
    """The keyword settings of a turn: ``-o`` pairs, then the options that have a flag of their own.

    Raises:
        CommandError: for a ``-o`` setting given twice (or also by its own flag), or a value that is not finite.
    """
    settings: dict[str, Any] = {}
    for name, text in options:
        if name in settings:
            raise CommandError(f"-o {name} is given twice", EXIT_USAGE)
        settings[name] = _option_value(name, text)
    for name, flag, value in (
        ("max_tokens", "--max-tokens", max_tokens),
        ("temperature", "--temperature", temperature),
    ):
        if value is None:
            continue
        if name in settings:
            raise CommandError(f"{name} is given twice: by {flag} and by -o {name}", EXIT_USAGE)
        settings[name] = value
    return settings


def _option_value(name: str, text: str) -> Any:
    """``-o``'s VALUE: JSON when it parses as JSON (``40``, ``true``, ``{"2": -100}``), else the text itself.

    JSON cannot carry NaN or infinities, and no provider takes them: ``NaN``, ``Infinity`` and numbers too large
    for a float (``1e999``) are refused (the check of `threadline._numbers`, as for every float option) rather than
    sent as something else.
    """
    try:
        value = json.loads(text)  # reads NaN, Infinity and 1e999 as floats, which the check below refuses
    except ValueError:
        return text
    problem = finite_problem(value)
    if problem is not None:
        raise CommandError(f"-o {name} {text}: the value {problem}", EXIT_USAGE)
    return value


ReasoningChoice = tuple[str | bool, int | None] | None
"""``--reasoning`` and ``--reasoning-budget`` as the builder's ``.reasoning`` takes them (None: not asked for)."""


def _check_settings(
    max_tokens: int | None, temperature: float | None, reasoning: ReasoningChoice, options: Options = ()
) -> dict[str, Any]:
    """The model settings `check_model` asks the model about: the per-turn ones and the reasoning of the config."""
    settings = _settings(max_tokens, temperature, options)
    if reasoning is not None:
        from ..conversation.config import reasoning_settings

        settings["reasoning"] = reasoning_settings(*reasoning)
    return settings


def _reasoning(effort: str | None, budget: int | None) -> ReasoningChoice:
    if effort is None and budget is None:
        return None
    return (effort if effort is not None else True, budget)


# -- the commands ---------------------------------------------------------------------------------------------
_model_option = click.option(
    "-m",
    "--model",
    "model_name",
    default=None,
    metavar="MODEL",
    help=(
        "local, local:/path/file.gguf, openai:<model>, openai-responses:<model>, anthropic:<model>; "
        "default $THREADLINE_MODEL, else the one of threadline models default, else local."
    ),
)
_system_option = click.option("-s", "--system", default=None, help="A system prompt.")
_tool_option = click.option(
    "-T",
    "--tool",
    "tool_specs",
    multiple=True,
    metavar="TOOL",
    help="Offer tools: MODULE:NAME (a function, Tool, Toolset or object whose methods become tools), pages "
    "(Pages.generate_ui), mcp:COMMAND (a stdio MCP server) or mcp+http://URL. Repeatable.",
)
_max_tokens_option = click.option(
    "--max-tokens", type=click.IntRange(min=1), default=None, help="Token limit per model call."
)
_temperature_option = click.option(
    "--temperature", type=FiniteFloatRange(min=0), default=None, help="Sampling temperature."
)
_setting_option = click.option(
    "-o",
    "--option",
    "options",
    type=(str, str),
    multiple=True,
    metavar="NAME VALUE",
    help="A model setting without a flag of its own, as -o local_top_k 40 or -o openai_seed 7 (provider-prefixed "
    "extras reach that provider's request): VALUE is read as JSON when it is JSON (a number, true, an object), "
    "else as text. Repeatable.",
)


_show_reasoning_option = click.option(
    "--show-reasoning",
    is_flag=True,
    help="Show the model's thinking as it streams, dimmed, on stderr before the answer (reasoning models).",
)


_reasoning_option = click.option(
    "--reasoning",
    "reasoning_effort",
    type=click.Choice(["low", "medium", "high"]),
    default=None,
    help="Turn the model's thinking on, with this effort (reasoning models; others refuse it). "
    "Anthropic: a thinking budget derived from it; OpenAI: reasoning_effort.",
)
_reasoning_budget_option = click.option(
    "--reasoning-budget",
    "reasoning_budget",
    type=click.IntRange(min=1),
    default=None,
    metavar="TOKENS",
    help="Turn the model's thinking on, with at most TOKENS tokens of it (Anthropic's budget_tokens; "
    "OpenAI: the nearest effort at or above it).",
)


_continue_option = click.option(
    "-c", "--continue", "continue_latest", is_flag=True, help="Continue the most recently updated conversation."
)
_cid_option = click.option(
    "--cid", default=None, metavar="ID", callback=conversation_id, help="Continue the conversation with this id."
)
_mode_option = click.option(
    "--mode", type=click.Choice(["chat", "agent", "run"]), default=None, help="Switch the conversation's mode."
)
_no_log_option = click.option("--no-log", is_flag=True, help="Do not keep this conversation in the store.")
_wait_option = click.option(
    "--wait",
    "wait",
    type=FiniteFloatRange(min=0),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait while another turn (another process or host) runs on the conversation.",
)


def open_conversation(
    store: Store | None, continue_latest: bool, cid: str | None, model: Model
) -> tuple[Conversation, PromptBuilder]:
    """The conversation a command works on: a new one (kept in ``store`` when given), the latest one (``-c``), or
    the one with id ``cid``; and a builder for it with ``model`` chosen.

    Raises:
        CommandError: for ``-c`` with ``--cid``, ``-c`` on an empty store, an unknown id, or either without a store.
    """
    from ..conversation import Conversation
    from ..errors import StoreError
    from ..store import latest_conversation_id

    if continue_latest and cid:
        raise CommandError("use either -c (the latest conversation) or --cid ID, not both", EXIT_USAGE)
    if (continue_latest or cid) and store is None:
        raise CommandError("-c and --cid continue a stored conversation; they cannot be used with --no-log", EXIT_USAGE)
    if continue_latest:
        assert store is not None
        cid = latest_conversation_id(store)
        if cid is None:
            raise CommandError(f"there is no conversation to continue in {store.url}", EXIT_USAGE)
    if cid:
        assert store is not None
        try:
            conversation = Conversation.load(cid, store)
        except StoreError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
    else:
        conversation = Conversation(store=store)
    return conversation, conversation.continuation.model(model)


def wait_for_turn(conversation: Conversation, console: Console, seconds: float) -> None:
    """Reserve the conversation for this command's turn; while another turn (another process, another host) holds
    it, say so on ``console`` and wait, up to ``seconds``.

    Raises:
        ConversationBusy: when the other turn did not end in time (shown as one line by the CLI).
    """

    def waiting() -> None:
        console.print(f"waiting for another turn on conversation {conversation.id} to finish…", highlight=False)

    conversation.acquire(max_wait=seconds, on_wait=waiting)


def configure(
    builder: PromptBuilder,
    system: str | None,
    tools: list[Any],
    tool_choice: str | None,
    mode: str | None,
    reasoning: ReasoningChoice = None,
) -> PromptBuilder:
    """The builder with the command line's system prompt, tools, tool choice, mode and reasoning applied."""
    if reasoning is not None:
        effort, budget = reasoning
        builder = builder.reasoning(effort=effort if isinstance(effort, str) else None, budget_tokens=budget)
    if system:
        builder = builder.agent(system)
    if tools:
        builder = builder.tools(*tools)
    if tool_choice:
        builder = builder.tool_choice(tool_choice)
    if mode:
        builder = builder.mode(mode)
    return builder


_attachment_option = click.option(
    "-a",
    "--attach",
    "attach_paths",
    multiple=True,
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False, readable=True),
    help="Attach a file to the prompt: an image (png, jpeg, gif, webp) as an image, anything else (a PDF…) as a "
    "file. Read now, so the log holds it. Repeatable.",
)


def attachments_of(paths: tuple[str, ...]) -> list[Attachment]:
    """The ``-a`` files as attachments: images (by their type, else by their first bytes) as images, the rest as
    files; each is read now.

    Raises:
        CommandError: when a file cannot be read (it is named; nothing is stored).
    """
    import mimetypes
    from pathlib import Path

    from ..attachments import Attachment

    attached: list[Attachment] = []
    for path in paths:
        try:
            image = Attachment.image(path)
            if image.media_type is not None and image.media_type.startswith("image/"):
                attached.append(image)
            else:
                name = Path(path).name
                media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
                attached.append(Attachment("file", data=image.data, path=path, media_type=media_type, name=name))
        except OSError as exc:
            raise CommandError(f"cannot read the attachment {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    return attached


@click.command("prompt")
@click.argument("text", required=False)
@_model_option
@_attachment_option
@_system_option
@_tool_option
@click.option(
    "--tool-choice", default=None, metavar="CHOICE", help="auto, required, none or a tool name (first request)."
)
@_continue_option
@_cid_option
@_mode_option
@_max_tokens_option
@_temperature_option
@_setting_option
@_reasoning_option
@_reasoning_budget_option
@_show_reasoning_option
@_no_log_option
@_wait_option
@click.option(
    "--usage",
    "show_usage",
    is_flag=True,
    help="After the answer, show on stderr what the turn's model calls used and cost (tokens, cached, USD).",
)
@store_option
@otlp_option
@friendly_errors
def prompt(
    text: str | None,
    model_name: str | None,
    attach_paths: tuple[str, ...],
    system: str | None,
    tool_specs: tuple[str, ...],
    tool_choice: str | None,
    continue_latest: bool,
    cid: str | None,
    mode: str | None,
    max_tokens: int | None,
    temperature: float | None,
    options: Options,
    reasoning_effort: str | None,
    reasoning_budget: int | None,
    show_reasoning: bool,
    no_log: bool,
    wait: float,
    show_usage: bool,
    store_url: str | None,
) -> None:
    """Send TEXT (or stdin) to a model and stream the answer to stdout; tool calls are shown on stderr.

    Every conversation is kept in the store (see `threadline logs list`); -c or --cid continues one.
    """
    if text is None:
        if sys.stdin.isatty():
            raise click.UsageError("give the prompt as an argument, or pipe it to stdin")
        text = sys.stdin.read()
    if not text.strip():
        raise click.UsageError("the prompt is empty")
    store = None if no_log else open_cli_store(store_url)
    try:
        tools = load_tools(tool_specs, store)
        check_tool_choice(tool_choice, tools)
        model = resolve_model(model_name)
        reasoning = _reasoning(reasoning_effort, reasoning_budget)
        attached = attachments_of(attach_paths)
        # Before anything is stored: a missing key, reasoning asked of a model without it, or an image for a model
        # that cannot see keeps nothing.
        settings = _check_settings(max_tokens, temperature, reasoning, options)
        check_model(model, tools, tool_choice, settings, attached)
        conversation, builder = open_conversation(store, continue_latest, cid, model)
        builder = configure(builder, system, tools, tool_choice, mode, reasoning)
        events = stderr_console()
        prepare_model(model, events)  # before the reservation: another turn must not wait for our weights
        wait_for_turn(conversation, events, wait)
        builder.request(text, attached).prompt_conversation(**_settings(max_tokens, temperature, options))
        try:
            thinking = events if show_reasoning else None
            result = run_printed_turn(conversation, TurnPrinter(stdout_writer(), events, thinking=thinking))
        except TurnInterrupted:
            raise interrupted(conversation, "threadline prompt --cid {id} …") from None
        except AnswerNotSaved as lost:
            raise not_saved(lost, "threadline prompt --cid {id} …") from None
        except BaseException:
            if show_usage and conversation.last_turn is not None:
                _usage(conversation.last_turn, events)  # a failed call may have been billed too
            _where(conversation, events)
            raise
        if show_usage:
            _usage(result, events)
        _where(conversation, events)
    finally:
        if store is not None:
            store.close()


def _usage(result: TurnResult, events: Console) -> None:
    """``--usage``: what the turn's model calls used and cost, on stderr."""
    from rich.text import Text

    events.print(Text(f"usage: {Spending(result.new_messages).text()}", style="dim"), highlight=False)


def _where(conversation: Conversation, events: Console) -> None:
    if conversation.store is not None:
        events.print(f"[dim]conversation {conversation.id} (continue with: threadline prompt -c …)[/]")


@click.command("chat")
@_model_option
@_system_option
@_tool_option
@_continue_option
@_cid_option
@_mode_option
@_max_tokens_option
@_temperature_option
@_setting_option
@_reasoning_option
@_reasoning_budget_option
@_show_reasoning_option
@_no_log_option
@_wait_option
@store_option
@otlp_option
@friendly_errors
def chat(
    model_name: str | None,
    system: str | None,
    tool_specs: tuple[str, ...],
    continue_latest: bool,
    cid: str | None,
    mode: str | None,
    max_tokens: int | None,
    temperature: float | None,
    options: Options,
    reasoning_effort: str | None,
    reasoning_budget: int | None,
    show_reasoning: bool,
    no_log: bool,
    wait: float,
    store_url: str | None,
) -> None:
    """Talk with a model, one line at a time (an empty line, 'exit' or Ctrl-D ends the chat).

    The conversation is kept in the store; -c or --cid continues an earlier one.
    """
    store = None if no_log else open_cli_store(store_url)
    conversation: Conversation | None = None
    try:
        tools = load_tools(tool_specs, store)
        model = resolve_model(model_name)
        reasoning = _reasoning(reasoning_effort, reasoning_budget)
        check_model(model, tools, None, _check_settings(max_tokens, temperature, reasoning, options))  # before any line
        conversation, builder = open_conversation(store, continue_latest, cid, model)
        events = stderr_console()
        prepare_model(model, events)
        builder = configure(builder, system, tools, None, mode, reasoning)
        interactive = sys.stdin.isatty()
        label = "assistant › " if interactive else ""
        chatting = conversation  # for the closure below (mypy: not None)

        def run_turn() -> None:
            printer = TurnPrinter(stdout_writer(), events, label=label, thinking=events if show_reasoning else None)
            try:
                run_printed_turn(chatting, printer)
            except AnswerNotSaved as lost:
                raise not_saved(lost, "threadline chat --cid {id}") from None

        def go_on() -> None:  # after the waiting calls were decided: the turn goes on, nothing new asked
            wait_for_turn(chatting, events, wait)
            # The chat's model and tools (a conversation continued with --cid has neither before its first turn).
            going_on = chatting.continuation.model(model)
            going_on = going_on.tools(*tools) if tools else going_on
            going_on.prompt_conversation(**_settings(max_tokens, temperature, options))
            run_turn()

        # Calls that wait (of a conversation continued with --cid, or of the turn just run) are asked about here.
        while settle_waiting(conversation, events, go_on):
            try:
                line = input("you › " if interactive else "")
            except EOFError:
                break
            if not line.strip() or line.strip() in ("exit", "quit"):
                break
            wait_for_turn(conversation, events, wait)
            builder.request(line).prompt_conversation(**_settings(max_tokens, temperature, options))
            run_turn()
            builder = conversation.continuation
        if store is not None and len(conversation.messages):
            events.print(
                f"[dim]conversation {conversation.id} (continue with: threadline chat --cid {conversation.id})[/]"
            )
    except KeyboardInterrupt:  # during a turn (TurnInterrupted) or at the "you ›" prompt
        raise interrupted(conversation, "threadline chat --cid {id}") from None
    finally:
        if store is not None:
            store.close()
