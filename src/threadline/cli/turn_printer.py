"""Showing a turn as it happens: `TurnPrinter` (answer text streamed, the model's thinking dimmed before it when
asked for, each tool call with its result in one box, failures as a red line), `run_printed_turn`, and what a command
says after Ctrl-C (`TurnInterrupted`, `interrupted`, exit code 130). The model's text, thinking and errors are shown
with their control characters escaped (`threadline.cli._terminal`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ConversationBusy, StoreError
from ..message_types import ApprovalMessage, AssistantMessage, Message, ToolCall, ToolMessage
from ._errors import EXIT_OTHER, CommandError, silence_stdout
from ._terminal import VisibleStream, visible

if TYPE_CHECKING:
    from rich.console import Console

    from ..conversation import Conversation
    from ..engine import TurnResult

__all__ = [
    "EXIT_INTERRUPTED",
    "THINKING_LABEL",
    "AnswerNotSaved",
    "TurnInterrupted",
    "TurnPrinter",
    "interrupted",
    "not_saved",
    "run_printed_turn",
    "stderr_console",
    "stdout_writer",
]

THINKING_LABEL = "thinking › "
"""What marks a stretch of the model's thinking where it cannot be dimmed (off a terminal, ``NO_COLOR``)."""

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a program stopped by Ctrl-C


class TurnPrinter:
    """Shows one turn while it runs: answer text streamed through ``write``, each tool call with its result in one
    box on ``events`` (printed once every result of that assistant message is in), failures as a red line.

    The thinking never changes what goes through ``write``, which gets the answer alone, the same with or without
    ``thinking``: the line breaks that set the thinking apart go to ``thinking``. When both reach one screen, a
    thinking that follows answer text on its line starts on the next line, and the newlines the answer goes on with
    end the thinking's line (no blank lines are stacked around it).

    Args:
        write: Where answer text goes, piece by piece (it should flush).
        events: The console for tool boxes and failures.
        label: Printed before each streamed answer (e.g. ``"assistant › "``).
        thinking: Where the model's thinking is shown as it streams, dimmed (``--show-reasoning``); None: not
            shown. Off a terminal, or with ``NO_COLOR`` set, where it cannot be dimmed, each stretch of it is
            plain text marked ``thinking › ``, with a blank line after it.
        same_screen: Whether stdout and ``thinking`` end up on one terminal or in one file (``2>&1``), so their
            lines interleave; None: found out from their file descriptors. Only the layout depends on it.
    """

    def __init__(
        self,
        write: Callable[[str], Any],
        events: Console,
        *,
        label: str = "",
        thinking: Console | None = None,
        same_screen: bool | None = None,
    ) -> None:
        self.write = write
        self.events = events
        self.label = label
        self.thinking = thinking
        self.same_screen = _same_file(thinking) if same_screen is None else same_screen
        self._plain = thinking is not None and not _can_dim(thinking)
        self._in_thinking = False
        self._thinking_shown = False  # something of the current stretch of thinking is shown
        self._thinking_newlines = ""  # the newlines the thinking shown so far ends with, held back
        self._thinking_open = False  # a stretch of thinking is over and its line not ended yet
        self._in_text = False
        self._line_open = False  # what went through `write` does not end with a newline
        self._streamed = False
        self._pending: list[ToolCall] = []
        self._results: dict[str, ToolMessage] = {}
        self._approvals: list[ApprovalMessage] = []
        # The model's text may hold terminal controls (colours, window titles, clipboard writes): shown escaped.
        self._text_stream = VisibleStream()
        self._thinking_stream = VisibleStream()

    def on_reasoning(self, piece: str) -> None:
        """A piece of the model's thinking being streamed (shown only when a ``thinking`` console was given)."""
        if self.thinking is None:
            return
        if not self._in_thinking:
            self._close_thinking(0)
            self._in_thinking = True
            self._thinking_shown = False
            self._thinking_newlines = ""
        self._show_thinking(self._thinking_stream.feed(piece))

    def _show_thinking(self, text: str) -> None:
        # The newlines around a stretch of thinking (the "\n\n" between two thinking blocks, one after a tool box)
        # are not shown: the stretch gets one line break before and after it, here.
        text = self._thinking_newlines + text
        body = text.rstrip("\n")
        self._thinking_newlines = text[len(body) :]
        if not self._thinking_shown:
            body = body.lstrip("\n")
            if not body:
                return
            if self._line_open and self.same_screen:
                self._print_thinking("\n")  # after answer text, on the line's end: on a line of its own
            if self._plain:
                self._print_thinking(THINKING_LABEL)  # not dimmed: nothing else tells it from the answer
            self._thinking_shown = True
        self._print_thinking(body)

    def _print_thinking(self, text: str) -> None:
        if not text or self.thinking is None:
            return
        from ._render import thinking_style

        # soft_wrap: the pieces are parts of one text, which the terminal wraps; rich must not break lines itself.
        self.thinking.print(
            text, style=thinking_style(), end="", markup=False, highlight=False, emoji=False, soft_wrap=True
        )

    def on_text(self, piece: str) -> None:
        """A piece of the answer being streamed."""
        self._end_thinking()
        if not self._in_text:
            self._in_text = True
            self._write(self.label)
        self._streamed = True
        self._write(self._text_stream.feed(piece))

    def _write(self, text: str) -> None:
        """Write answer text; on one screen, the newlines it starts with end the line of the thinking before it."""
        if not text:
            return
        self._close_thinking(len(text) - len(text.lstrip("\n")))
        self.write(text)
        self._line_open = not text.endswith("\n")

    def on_message(self, message: Message) -> None:
        """A message the turn recorded."""
        if isinstance(message, AssistantMessage):
            self._end_thinking()
            if not self._streamed and message.content and message.error is None:
                self.on_text(message.content)  # the model did not stream it
            self._end_text()
            self._streamed = False
            if message.error is not None:
                from rich.text import Text

                self._close_thinking(0)
                line = Text("failed:", style="bold red")
                line.append(visible(f" {message.error.type}: {message.error.message}"))
                self.events.print(line)
            self._flush_tools()
            self._pending = list(message.tool_calls)
            self._results = {}
        elif isinstance(message, ToolMessage):
            if not any(call.id == message.tool_call_id for call in self._pending):
                self._show_alone(message)  # a call of an earlier turn, run now (approved) or answered (denied)
                return
            self._results[message.tool_call_id] = message
            if all(call.id in self._results for call in self._pending):
                self._flush_tools()
        elif isinstance(message, ApprovalMessage):
            # Shown after the boxes of the calls (a call that waits gets no result in this turn).
            self._approvals.append(message)
            if not self._pending:
                self._flush_tools()

    @property
    def answer_unsaved(self) -> bool:
        """Whether answer text was shown that no recorded message holds yet (the store failed to keep it)."""
        return self._streamed

    def finish(self) -> None:
        """The turn is over (or failed): close the answer line and show calls still waiting for a result."""
        self._end_thinking()
        self._end_text()
        self._flush_tools()
        self._close_thinking(0)

    def _end_thinking(self) -> None:
        """A stretch of thinking is over: its line is ended now, or on one screen by what comes after it."""
        if not self._in_thinking or self.thinking is None:
            return
        self._in_thinking = False
        self._show_thinking(self._thinking_stream.flush())
        if self._thinking_shown:
            self._thinking_open = True
            if not self.same_screen:
                self._close_thinking(0)

    def _close_thinking(self, newlines: int) -> None:
        """End the line of the thinking shown last, if it is open, and when it is plain text leave a blank line after
        it; ``newlines``: how many newlines the answer text about to be written starts with (on one screen, they
        make that break)."""
        if not self._thinking_open or self.thinking is None:
            return
        self._thinking_open = False
        for _ in range((2 if self._plain else 1) - newlines):
            self.thinking.print(soft_wrap=True)

    def _end_text(self) -> None:
        if self._in_text:
            self._write(self._text_stream.flush() + "\n")
            self._in_text = False

    def _flush_tools(self) -> None:
        self._close_thinking(0)
        from ._render import approval_box, panel, tool_group

        for call in self._pending:
            self.events.print(tool_group(call, self._results.get(call.id)))
        self._pending = []
        self._results = {}
        for entry in self._approvals:
            self.events.print(panel(approval_box(entry)))
        self._approvals = []

    def _show_alone(self, message: ToolMessage) -> None:
        """A result whose call is not on screen in this turn, in a box of its own."""
        self._flush_tools()
        from ._render import message_box, panel

        self.events.print(panel(message_box(message)))


def _can_dim(console: Console) -> bool:
    """Whether the thinking shows dimmed on ``console``: a terminal (or ``FORCE_COLOR``), without ``NO_COLOR``."""
    from ._render import thinking_style

    return bool(thinking_style()) and console.color_system is not None


def _same_file(console: Console | None) -> bool:
    """Whether stdout and ``console`` write to one terminal or file (``2>&1``), so that their lines interleave."""
    if console is None:
        return False
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.fstat(console.file.fileno()))
    except (AttributeError, OSError, ValueError):  # no file descriptor (io.StringIO, a closed stream)
        return False


class TurnInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a turn of ``conversation``; what the turn produced, the partial answer included, is in its log.

    A `KeyboardInterrupt`, so code that does not look for it still stops as for any Ctrl-C.
    """

    def __init__(self, conversation: Conversation) -> None:
        super().__init__()
        self.conversation = conversation


class AnswerNotSaved(StoreError):
    """The store failed to keep an answer of ``conversation`` that was already shown (``error`` says why); the log
    keeps everything before it."""

    def __init__(self, conversation: Conversation, error: Exception) -> None:
        super().__init__(f"the answer shown above was not saved: {error}")
        self.conversation = conversation
        self.error = error


def run_printed_turn(conversation: Conversation, printer: TurnPrinter) -> TurnResult:
    """Run the conversation's armed turn, showing it through ``printer``; return how the turn ended.

    Ctrl-C cancels the turn (`Conversation.run_sync`): the model call in progress is logged as a failure of type
    ``interrupted`` with the text it had streamed, then `TurnInterrupted` is raised.

    Raises:
        ModelError: when a model call fails (the failure is in the log first).
        TurnInterrupted: after Ctrl-C, once the turn has recorded where it stopped.
        AnswerNotSaved: when the store failed to keep answer text already shown.
        StoreError: when the store failed otherwise (the log keeps everything before).
    """
    try:
        on_reasoning = printer.on_reasoning if printer.thinking is not None else None
        return conversation.run_sync(printer.on_message, on_text=printer.on_text, on_reasoning=on_reasoning)
    except KeyboardInterrupt:
        raise TurnInterrupted(conversation) from None
    except (StoreError, ConversationBusy) as exc:
        if printer.answer_unsaved:
            raise AnswerNotSaved(conversation, exc) from None
        raise
    finally:
        printer.finish()


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


def not_saved(lost: AnswerNotSaved, continue_with: str) -> CommandError:
    """The one line a command ends with when the store failed to keep the answer it showed (exit code 1): that the
    answer was not saved, why, and how to go on from what the conversation keeps.

    Args:
        lost: What the turn raised.
        continue_with: The command that continues the conversation, with ``{id}`` for its id.
    """
    conversation = lost.conversation
    hint = continue_with.format(id=conversation.id)
    return CommandError(
        f"{lost}; conversation {conversation.id} keeps everything before it (continue with: {hint})", EXIT_OTHER
    )


def stdout_writer() -> Callable[[str], None]:
    """Write answer text to stdout as it comes (flushed, so a pipe sees it at once).

    When the reader goes away (``… | head``), the rest is not shown, and the turn goes on to its end and is logged
    whole: a closed pipe is the screen's matter, not a failure of the model call the text came from.
    """
    stream = sys.stdout
    gone = False

    def write(text: str) -> None:
        nonlocal gone
        if gone:
            return
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            gone = True
            silence_stdout()

    return write


def stderr_console() -> Console:
    """The console for tool calls, progress and failures (stderr, so stdout carries only the answer)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)
