"""``threadline demo``: the main job, end to end, on the embedded model with no key and no network.

A conversation with a tool (an object whose method becomes ``Units.celsius_to_fahrenheit``) runs with the first call
forced; each message is shown as it happens and kept in the store the moment it exists. The log is also written to
a JSON file; it is read back from the file with `MessageList.from_json` into a new `Conversation` (checked against
what the store holds), continued with a follow-up question, and saved again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import ThreadlineError
from ._errors import friendly_errors
from .prompt import TurnInterrupted, TurnPrinter, interrupted, prepare_model, resolve_model, run_printed_turn
from .store_option import open_cli_store, store_option
from .turn_printer import AnswerNotSaved, not_saved

if TYPE_CHECKING:
    from rich.console import Console

    from ..conversation import Conversation
    from ..models.base import Model
    from ..store import Store

__all__ = ["FOLLOW_UP", "QUESTION", "Units", "default_demo_path", "demo", "run_demo"]

QUESTION = "What is 37 degrees Celsius in Fahrenheit?"
FOLLOW_UP = "And 100 degrees Celsius?"
SYSTEM = "You are a helpful assistant. Use the tools to convert temperatures."
# Greedy decoding, so the demo shows the same conversation on every run of a machine.
SETTINGS: dict[str, Any] = {"temperature": 0, "max_tokens": 256}


class Units:
    """A unit converter; `Toolset.from_object` turns its public methods into tools named ``Units.<method>``."""

    name = "Units"

    def celsius_to_fahrenheit(self, celsius: float) -> str:
        """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
        return f"{celsius:g} °C = {celsius * 9 / 5 + 32:g} °F"


def default_demo_path() -> Path:
    """``$THREADLINE_HOME/demo.json``, else ``demo.json`` in the user data directory."""
    home = os.environ.get("THREADLINE_HOME")
    if home:
        return Path(home).expanduser() / "demo.json"
    import platformdirs

    return Path(platformdirs.user_data_dir("threadline", appauthor=False)) / "demo.json"


def _save(conversation: Conversation, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(conversation.messages.to_json(), encoding="utf-8")
    tmp.replace(path)


def run_demo(model: Model, out: Path, console: Console, status: Console, store: Store | None = None) -> Conversation:
    """Run the demo on ``model``, printing to ``console`` (progress on ``status``); return the continued
    conversation. The file at ``out`` — and ``store``, when given — hold the whole log when this returns."""
    from .. import llm
    from ..conversation import Conversation
    from ..message_list import MessageList
    from ..tools import Toolset
    from ._render import render_message

    def printer() -> TurnPrinter:
        def write(text: str) -> None:
            console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

        return TurnPrinter(write, console, label="assistant › ")

    def show_request(conversation: Conversation) -> None:
        console.print(render_message(conversation.messages[-1]))

    units = Toolset.from_object(Units())
    console.rule(f"threadline demo · {model.name} · running on this machine, no network")
    prepare_model(model, status)

    builder = llm.model(model)
    if store is not None:
        builder = builder.store(store)
    first = (
        builder.agent(SYSTEM)
        .tools(units)
        .tool_choice("required")
        .max_tool_rounds(2)
        .request(QUESTION)
        .prompt_conversation(**SETTINGS)
    )
    console.print("[dim]The first request forces a tool call (tool_choice='required').[/]")
    show_request(first)
    run_printed_turn(first, printer())
    _save(first, out)
    where = f" and in the store as conversation {first.id}" if store is not None else ""
    console.print(f"[dim]Saved {len(first.messages)} messages to {out}{where}.[/]")

    loaded = MessageList.from_json(out.read_text(encoding="utf-8"))
    loaded.validate()
    if store is not None and store.load(first.id) != loaded:
        raise ThreadlineError("the saved file and the store disagree about the conversation")
    # The reloaded log continues as a conversation of its own (a new id), kept in the store as well.
    second = Conversation(messages=loaded, store=store)
    console.print(
        f"[dim]Read them back with MessageList.from_json into a new conversation ({second.id}); asking a follow-up.[/]"
    )
    second.continuation.model(model).tools(units).tool_choice("required").max_tool_rounds(2).request(
        FOLLOW_UP
    ).prompt_conversation(**SETTINGS)
    show_request(second)
    run_printed_turn(second, printer())
    _save(second, out)
    return second


@click.command("demo")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to save the conversation (JSON). Default: demo.json in $THREADLINE_HOME or the user data directory.",
)
@click.option("-m", "--model", "model_name", default="local", show_default=True, help="The model to run the demo on.")
@store_option
@friendly_errors
def demo(out: Path | None, model_name: str, store_url: str | None) -> None:
    """Run a tool-using conversation on the embedded model; save it, reload it, continue it."""
    from rich.console import Console

    from .prompt import stderr_console

    path = (out or default_demo_path()).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)  # fail before the model runs, not after
    model = resolve_model(model_name)
    console = Console(highlight=False)
    with open_cli_store(store_url) as store:
        try:
            conversation = run_demo(model, path, console, stderr_console(), store)
        except TurnInterrupted as stop:  # Ctrl-C: the interrupted turn is in the store; say where, in one line
            raise interrupted(stop.conversation, "threadline logs show {id}") from None
        except AnswerNotSaved as lost:
            raise not_saved(lost, "threadline logs show {id}") from None
        console.print(
            f"The conversation ({len(conversation.messages)} messages) is saved in {path} and in {store.url} "
            f"(threadline logs show {conversation.id})",
            soft_wrap=True,
        )
