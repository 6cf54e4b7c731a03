"""Printing a log as it is read: `LogPrinter` takes the messages a page at a time and prints each one as soon as
it can, every tool result inside the box of the call it answers. Used by ``logs show``, whose ``--all`` reads a long
log from the store in pages, so the first messages show at once and memory stays bounded."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..message_types import AssistantMessage, Message, ToolMessage, UserMessage
from ..pricing.prices import Spending
from ._plain_boxes import MIN_WIDTH, PlainBoxes
from ._render import message_box, panel

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LogPrinter", "render_log"]


class LogPrinter:
    """Prints messages on ``console`` in log order, as boxes; each tool result is shown inside the box of the call
    it answers, so a message with calls waits until the next user or assistant message (or `finish`) shows that
    every result there is has come. A result answering no call before it is shown on its own.

    Args:
        console: Where to print. When it carries no styles (not a terminal, or no colour), the boxes are drawn as
            plain text by `threadline.cli._plain_boxes`, line for line what rich draws, faster.
        show_reasoning: Also show each assistant message's thinking, dimmed.
    """

    def __init__(self, console: Console, *, show_reasoning: bool = False) -> None:
        self.console = console
        self.show_reasoning = show_reasoning
        self.total = Spending()  # what every model call shown spent
        self._turn = Spending()  # what the calls of the turn being shown spent
        plain = console.color_system is None and console.width >= MIN_WIDTH
        self._plain = PlainBoxes(console) if plain else None
        self._held: AssistantMessage | None = None  # a message with calls, waiting for its results
        self._results: dict[str, ToolMessage] = {}
        self._later: list[Message] = []  # messages after it that are not its results, shown after it

    def feed(self, messages: Iterable[Message]) -> None:
        """Print the next messages of the log (those that must wait for later ones are held)."""
        for message in messages:
            held = self._held
            if held is not None:
                if isinstance(message, ToolMessage):
                    call_id = message.tool_call_id
                    if call_id not in self._results and any(call.id == call_id for call in held.tool_calls):
                        self._results[call_id] = message
                    else:
                        self._later.append(message)
                    continue
                if not isinstance(message, (AssistantMessage, UserMessage)):
                    self._later.append(message)  # a system message between the results
                    continue
                self._release()
            if isinstance(message, UserMessage):
                self._end_turn()
            elif isinstance(message, AssistantMessage):
                self._turn.add((message,))
                self.total.add((message,))
            if isinstance(message, AssistantMessage) and message.tool_calls:
                self._held = message
            else:
                self._show(message, {})

    def finish(self) -> None:
        """The log ended: print what was held, and what its last turn spent."""
        if self._held is not None:
            self._release()
        self._end_turn()

    def _end_turn(self) -> None:
        """Under a turn of more than one model call: what its calls spent together (each call's is on its box)."""
        turn, self._turn = self._turn, Spending()
        if turn.calls > 1:
            from rich.text import Text

            self.console.print(Text(f"turn: {turn.text()}", style="dim"), highlight=False)

    def _release(self) -> None:
        held, results, later = self._held, self._results, self._later
        self._held, self._results, self._later = None, {}, []
        assert held is not None
        self._show(held, results)
        for message in later:
            self._show(message, {})

    def _show(self, message: Message, results: dict[str, ToolMessage]) -> None:
        box = message_box(message, results, show_reasoning=self.show_reasoning)
        if self._plain is not None:
            self.console.file.write(self._plain.draw(box))
        else:
            self.console.print(panel(box))


def render_log(console: Console, messages: Iterable[Message], *, show_reasoning: bool = False) -> None:
    """Print a whole log (see `LogPrinter`)."""
    printer = LogPrinter(console, show_reasoning=show_reasoning)
    printer.feed(messages)
    printer.finish()
