"""``threadline prompt TEXT`` (one turn, the answer streamed to stdout) and ``threadline chat`` (a conversation
typed line by line), plus the pieces other commands reuse: loading ``-T`` tools (``module:name``, ``pages``,
``mcp:COMMAND``, ``mcp+http://URL``), resolving ``-m`` with
a clear error, a progress line while a local model loads, and `TurnPrinter` / `run_printed_turn`, which run one
turn and show it as it happens (answer text streamed; each tool call printed with its result in one box).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import UserError
from ..messages import AssistantMessage, Message, ToolCall, ToolMessage
from ._errors import EXIT_USAGE, CommandError, friendly_errors
from .store_option import open_cli_store, store_option

if TYPE_CHECKING:
    from rich.console import Console

    from ..builder import PromptBuilder
    from ..conversation import Conversation
    from ..engine import TurnResult
    from ..models.base import Model
    from ..store import Store

__all__ = [
    "EXIT_INTERRUPTED",
    "TurnInterrupted",
    "TurnPrinter",
    "chat",
    "check_tool_choice",
    "interrupted",
    "load_tool",
    "load_tools",
    "open_conversation",
    "prepare_model",
    "prompt",
    "resolve_model",
    "run_printed_turn",
]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a program stopped by Ctrl-C


# -- tools and models from the command line --------------------------------------------------------------------
def load_tool(spec: str, store: Store | None = None) -> Any:
    """The tool a ``-T`` option names.

    - ``MODULE:NAME``: ``MODULE`` is a module importable from the current directory (``mytools``, ``pkg.tools``) or
      a ``.py`` file; ``NAME`` is a function, a `Tool`, a `Toolset`, or an object whose public methods become tools.
    - ``pages``: the `threadline.toolboxes.Pages` toolset, saving pages in ``store``.
    - ``mcp:COMMAND LINE``: the tools of a stdio MCP server (``mcp:uvx mcp-server-time``), started now so a
      server that cannot start is reported at once.
    - ``mcp+http://…`` (or ``mcp+https://…``): the tools of a streamable-HTTP MCP server.

    Raises:
        CommandError: with one line saying what is wrong with the spec.
    """
    from ..tools import Tool, Toolset

    if spec == "pages":
        if store is None:
            raise CommandError("-T pages saves pages in the store; it cannot be used with --no-log", EXIT_USAGE)
        from ..toolboxes import Pages

        return Pages(store)
    if spec.startswith(("mcp:", "mcp+http://", "mcp+https://")):
        return _load_mcp(spec)
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise CommandError(
            f"bad tool {spec!r}: expected MODULE:NAME (e.g. mytools:get_weather), pages, mcp:COMMAND or mcp+http://URL",
            EXIT_USAGE,
        )
    module = _import_tool_module(module_name, spec)
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise CommandError(f"bad tool {spec!r}: {module_name} has no attribute {attribute!r}", EXIT_USAGE) from None
    if isinstance(target, (Tool, Toolset)):
        return target
    if inspect.isclass(target) or inspect.ismodule(target):
        kind = "a class" if inspect.isclass(target) else "a module"
        raise CommandError(f"bad tool {spec!r}: {attribute} is {kind}; name a function or an object", EXIT_USAGE)
    if callable(target):
        return target
    if type(target).__module__ == "builtins":  # 42 or "text": its methods are not tools anyone meant to offer
        kind = type(target).__name__
        raise CommandError(
            f"bad tool {spec!r}: {attribute} is a {kind} value; name a function or an object", EXIT_USAGE
        )
    return Toolset.from_object(target)


def _load_mcp(spec: str) -> Any:
    """``-T mcp:COMMAND`` or ``-T mcp+http://…``: an MCP server's toolset, connected now."""
    import shlex

    from ..mcp_toolset import MCPConnectionError
    from ..tools import Toolset

    if spec.startswith("mcp:"):
        try:
            command = shlex.split(spec[len("mcp:") :])
        except ValueError as exc:
            raise CommandError(f"bad tool {spec!r}: {exc}", EXIT_USAGE) from None
        if not command:
            raise CommandError(
                f"bad tool {spec!r}: give the server's command, e.g. mcp:uvx mcp-server-time", EXIT_USAGE
            )
        target: dict[str, Any] = {"command": command}
    else:
        target = {"url": spec[len("mcp+") :]}
    try:
        return Toolset.from_mcp(**target).connect()
    except (MCPConnectionError, UserError) as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def load_tools(specs: Iterable[str], store: Store | None = None) -> list[Any]:
    """`load_tool` for each ``-T`` option (``store`` is where ``-T pages`` saves pages)."""
    return [load_tool(spec, store) for spec in specs]


def _import_tool_module(module_name: str, spec: str) -> Any:
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise CommandError(f"bad tool {spec!r}: no file {path}", EXIT_USAGE)
        name = f"_threadline_tools_{path.stem}"
        file_spec = importlib.util.spec_from_file_location(name, path)
        if file_spec is None or file_spec.loader is None:
            raise CommandError(f"bad tool {spec!r}: cannot import {path}", EXIT_USAGE)
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[name] = module
        loader = file_spec.loader

        def execute() -> Any:
            loader.exec_module(module)
            return module

        return _run_import(execute, module_name, spec)
    # The console script does not put the working directory on sys.path, but "-T mytools:f" means ./mytools.py.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return _run_import(lambda: importlib.import_module(module_name), module_name, spec)


def _run_import(do_import: Callable[[], Any], module_name: str, spec: str) -> Any:
    try:
        return do_import()
    except ModuleNotFoundError as exc:
        raise CommandError(f"bad tool {spec!r}: cannot import {module_name!r} ({exc})", EXIT_USAGE) from None
    except Exception as exc:
        raise CommandError(
            f"bad tool {spec!r}: importing {module_name} failed: {type(exc).__name__}: {exc}", EXIT_USAGE
        ) from None


def check_tool_choice(choice: str | None, tools: list[Any]) -> None:
    """Refuse a ``--tool-choice`` that names no offered tool, before any model is loaded.

    Raises:
        CommandError: naming the offered tools.
    """
    if choice is None or choice in ("auto", "required", "none"):
        return
    from ..tools import resolve_tools

    names = sorted(resolve_tools(tools).tools)
    if choice not in names:
        offered = ", ".join(names) or "none"
        raise CommandError(f"tool_choice names {choice!r}, which is not offered (offered: {offered})", EXIT_USAGE)


def resolve_model(name: str | None) -> Model:
    """The model a ``-m`` option names (None: ``THREADLINE_MODEL``, else ``local``).

    Raises:
        CommandError: when the name is unknown or its provider cannot be loaded here.
    """
    from ..models import get_model

    try:
        return get_model(name)
    except UserError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except ImportError as exc:
        provider = (name or "").partition(":")[0] or "default"
        raise CommandError(f"the {provider!r} provider cannot be loaded here: {exc}", EXIT_USAGE) from None


def prepare_model(model: Model, console: Console) -> None:
    """Load a model's weights now, with a spinner (or, off a terminal, one progress line) on ``console``.

    Models without weights to load (HTTP providers, test models) return at once.
    """
    load = getattr(model, "load", None)
    if not callable(load) or getattr(model, "loaded", False):
        return
    message = f"Loading {model.name} …"
    if console.is_terminal:
        with console.status(message, spinner="dots"):
            load()
    else:
        console.print(message, highlight=False)
        load()
        console.print(f"Loaded {model.name}.", highlight=False)


# -- showing a turn as it happens --------------------------------------------------------------------------------
class TurnPrinter:
    """Shows one turn while it runs: answer text streamed through ``write``, each tool call with its result in one
    box on ``events`` (printed once every result of that assistant message is in), failures as a red line.

    Args:
        write: Where answer text goes, piece by piece (it should flush).
        events: The console for tool boxes and failures.
        label: Printed before each streamed answer (e.g. ``"assistant › "``).
    """

    def __init__(
        self,
        write: Callable[[str], Any],
        events: Console,
        *,
        label: str = "",
    ) -> None:
        self.write = write
        self.events = events
        self.label = label
        self._in_text = False
        self._streamed = False
        self._pending: list[ToolCall] = []
        self._results: dict[str, ToolMessage] = {}

    def on_text(self, piece: str) -> None:
        """A piece of the answer being streamed."""
        if not self._in_text:
            self._in_text = True
            if self.label:
                self.write(self.label)
        self._streamed = True
        self.write(piece)

    def on_message(self, message: Message) -> None:
        """A message the turn recorded."""
        if isinstance(message, AssistantMessage):
            if not self._streamed and message.content and message.error is None:
                self.on_text(message.content)  # the model did not stream it
            self._end_text()
            self._streamed = False
            if message.error is not None:
                self.events.print(f"[bold red]failed:[/] {message.error.type}: {message.error.message}", markup=True)
            self._flush_tools()
            self._pending = list(message.tool_calls)
            self._results = {}
        elif isinstance(message, ToolMessage):
            self._results[message.tool_call_id] = message
            if all(call.id in self._results for call in self._pending):
                self._flush_tools()

    def finish(self) -> None:
        """The turn is over (or failed): close the answer line and show calls still waiting for a result."""
        self._end_text()
        self._flush_tools()

    def _end_text(self) -> None:
        if self._in_text:
            self.write("\n")
            self._in_text = False

    def _flush_tools(self) -> None:
        if not self._pending:
            return
        from ._render import tool_group

        for call in self._pending:
            self.events.print(tool_group(call, self._results.get(call.id)))
        self._pending = []
        self._results = {}


class TurnInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a turn of ``conversation``; what the turn produced, the partial answer included, is in its log.

    A `KeyboardInterrupt`, so code that does not look for it still stops as for any Ctrl-C.
    """

    def __init__(self, conversation: Conversation) -> None:
        super().__init__()
        self.conversation = conversation


def run_printed_turn(conversation: Conversation, printer: TurnPrinter) -> TurnResult:
    """Run the conversation's armed turn, showing it through ``printer``; return how the turn ended.

    Ctrl-C cancels the turn (see `threadline._sync`): the model call in progress is logged as a failure of type
    ``interrupted`` with the text it had streamed, then `TurnInterrupted` is raised.

    Raises:
        ModelError: when a model call fails (the failure is in the log first).
        TurnInterrupted: after Ctrl-C, once the turn has recorded where it stopped.
    """
    from .._sync import run_sync

    async def drive() -> None:
        async for message in conversation.run(on_text=printer.on_text):
            printer.on_message(message)

    try:
        run_sync(drive())
    except KeyboardInterrupt:
        raise TurnInterrupted(conversation) from None
    finally:
        printer.finish()
    result = conversation.last_turn
    assert result is not None  # run() always sets it
    return result


def interrupted(conversation: Conversation | None, continue_with: str) -> CommandError:
    """The one line a command ends with after Ctrl-C (exit code 130), saying where the conversation is kept.

    Args:
        conversation: The interrupted conversation (None: nothing was kept yet).
        continue_with: The command that continues it, with ``{id}`` for its id.
    """
    if conversation is None or conversation.store is None or not len(conversation.messages):
        return CommandError("interrupted", EXIT_INTERRUPTED)
    hint = continue_with.format(id=conversation.id)
    return CommandError(
        f"interrupted; conversation {conversation.id} keeps everything up to here (continue with: {hint})",
        EXIT_INTERRUPTED,
    )


def stdout_writer() -> Callable[[str], None]:
    """Write answer text to stdout as it comes (flushed, so a pipe sees it at once)."""
    stream = sys.stdout

    def write(text: str) -> None:
        stream.write(text)
        stream.flush()

    return write


def stderr_console() -> Console:
    """The console for tool calls, progress and failures (stderr, so stdout carries only the answer)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _settings(max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    if temperature is not None:
        settings["temperature"] = temperature
    return settings


# -- the commands ---------------------------------------------------------------------------------------------
_model_option = click.option(
    "-m",
    "--model",
    "model_name",
    default=None,
    metavar="MODEL",
    help="local, local:/path/file.gguf, openai:<model>, anthropic:<model>; default $THREADLINE_MODEL, else local.",
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
    "--temperature", type=click.FloatRange(min=0), default=None, help="Sampling temperature."
)


_continue_option = click.option(
    "-c", "--continue", "continue_latest", is_flag=True, help="Continue the most recently updated conversation."
)
_cid_option = click.option("--cid", default=None, metavar="ID", help="Continue the conversation with this id.")
_mode_option = click.option(
    "--mode", type=click.Choice(["chat", "agent", "run"]), default=None, help="Switch the conversation's mode."
)
_no_log_option = click.option("--no-log", is_flag=True, help="Do not keep this conversation in the store.")
_wait_option = click.option(
    "--wait",
    "wait",
    type=click.FloatRange(min=0),
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
    builder: PromptBuilder, system: str | None, tools: list[Any], tool_choice: str | None, mode: str | None
) -> PromptBuilder:
    """The builder with the command line's system prompt, tools, tool choice and mode applied."""
    if system:
        builder = builder.agent(system)
    if tools:
        builder = builder.tools(*tools)
    if tool_choice:
        builder = builder.tool_choice(tool_choice)
    if mode:
        builder = builder.mode(mode)
    return builder


@click.command("prompt")
@click.argument("text", required=False)
@_model_option
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
@_no_log_option
@_wait_option
@store_option
@friendly_errors
def prompt(
    text: str | None,
    model_name: str | None,
    system: str | None,
    tool_specs: tuple[str, ...],
    tool_choice: str | None,
    continue_latest: bool,
    cid: str | None,
    mode: str | None,
    max_tokens: int | None,
    temperature: float | None,
    no_log: bool,
    wait: float,
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
        conversation, builder = open_conversation(store, continue_latest, cid, model)
        builder = configure(builder, system, tools, tool_choice, mode)
        events = stderr_console()
        prepare_model(model, events)  # before the reservation: another turn must not wait for our weights
        wait_for_turn(conversation, events, wait)
        builder.request(text).prompt_conversation(**_settings(max_tokens, temperature))
        try:
            run_printed_turn(conversation, TurnPrinter(stdout_writer(), events))
        except TurnInterrupted:
            raise interrupted(conversation, "threadline prompt --cid {id} …") from None
        except BaseException:
            _where(conversation, events)
            raise
        _where(conversation, events)
    finally:
        if store is not None:
            store.close()


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
@_no_log_option
@_wait_option
@store_option
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
        conversation, builder = open_conversation(store, continue_latest, cid, model)
        events = stderr_console()
        prepare_model(model, events)
        builder = configure(builder, system, tools, None, mode)
        interactive = sys.stdin.isatty()
        while True:
            try:
                line = input("you › " if interactive else "")
            except EOFError:
                break
            if not line.strip() or line.strip() in ("exit", "quit"):
                break
            wait_for_turn(conversation, events, wait)
            builder.request(line).prompt_conversation(**_settings(max_tokens, temperature))
            label = "assistant › " if interactive else ""
            run_printed_turn(conversation, TurnPrinter(stdout_writer(), events, label=label))
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
