"""``threadline chat`` asking at the terminal about the tool calls a turn left waiting: approve, deny or edit each
call that waits for approval, type the result of each call to a tool that runs outside, then go on with the turn.
When the input ends first, the calls are left waiting and the chat says how to decide them later."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import AwaitingDecision, UserError
from ._terminal import visible
from .approvals import default_by, describe_waiting, next_step

if TYPE_CHECKING:
    from rich.console import Console

    from ..conversation import Conversation
    from ..message_list import AwaitingCall

__all__ = ["ask_decisions", "settle_waiting"]

Reader = Callable[[str], str]
"""Reads one line of input after showing a prompt (`input`); raises EOFError when the input ended."""


class _InputEnded(Exception):
    """The input ended while a call still waited."""


def settle_waiting(
    conversation: Conversation, console: Console, go_on: Callable[[], Any], read: Reader | None = None
) -> bool:
    """While calls of ``conversation`` wait, ask about each one on ``console`` and then ``go_on()`` (run the turn on).

    Returns:
        True when nothing waits any more; False when the input ended first (the calls are left waiting, and what
        to type later is printed).
    """
    while conversation.awaiting:
        if not ask_decisions(conversation, console, read):
            _later(conversation, console)
            return False
        go_on()
    return True


def ask_decisions(conversation: Conversation, console: Console, read: Reader | None = None) -> bool:
    """Ask about each call that waits (approve, deny or edit; a result for an outside tool) and log the answers.

    Returns:
        False when the input ended before every call was decided (those not decided keep waiting).
    """
    reader = read or _input
    for item in list(conversation.awaiting):
        try:
            if item.kind == "external":
                _ask_result(conversation, console, reader, item)
            else:
                _ask_approval(conversation, console, reader, item)
        except _InputEnded:
            return False
    return True


def _input(prompt: str) -> str:
    return input(prompt if sys.stdin.isatty() else "")


def _line(reader: Reader, prompt: str) -> str:
    try:
        return reader(prompt)
    except EOFError:
        raise _InputEnded from None


def _show(console: Console, item: AwaitingCall) -> None:
    from rich.text import Text

    console.print(Text(describe_waiting(item), style="yellow"), soft_wrap=True)


def _ask_approval(conversation: Conversation, console: Console, reader: Reader, item: AwaitingCall) -> None:
    from rich.text import Text

    _show(console, item)
    by = default_by()
    while True:
        console.print(Text("Approve? [y]es / [n]o / [e]dit"), soft_wrap=True)
        answer = _line(reader, "› ").strip().lower()
        try:
            if answer in ("y", "yes"):
                conversation.approve(item.call.id, by=by, arguments_sha256=item.arguments_sha256)
                console.print(Text(visible(f"approved {item.call.id} ({item.tool})"), style="green"), soft_wrap=True)
                return
            if answer in ("n", "no"):
                reason = _asked_text(console, reader, "Why not? (the model reads it)")
                conversation.deny(item.call.id, by=by, reason=reason, arguments_sha256=item.arguments_sha256)
                console.print(Text(visible(f"denied {item.call.id} ({item.tool})"), style="red"), soft_wrap=True)
                return
            if answer in ("e", "edit"):
                _ask_edit(conversation, console, reader, item, by)
                return
        except AwaitingDecision as exc:  # decided meanwhile, elsewhere: nothing more to ask about this call
            console.print(Text(visible(str(exc)), style="red"), soft_wrap=True)
            return
        console.print(Text("answer y, n or e"), soft_wrap=True)


def _ask_edit(conversation: Conversation, console: Console, reader: Reader, item: AwaitingCall, by: str) -> None:
    """Ask for the arguments the call should run with until the tool's schema takes them, then approve."""
    from rich.text import Text

    while True:
        console.print(Text("New arguments (a JSON object, on one line):"), soft_wrap=True)
        text = _line(reader, "› ")
        try:
            arguments = json.loads(text)
        except ValueError as exc:
            console.print(Text(visible(f"not JSON: {exc}; try again"), style="red"), soft_wrap=True)
            continue
        if not isinstance(arguments, dict):
            console.print(
                Text(f"a JSON object is needed, not {type(arguments).__name__}; try again", style="red"), soft_wrap=True
            )
            continue
        try:
            conversation.approve(item.call.id, by=by, arguments=arguments, arguments_sha256=item.arguments_sha256)
        except AwaitingDecision:
            raise
        except UserError as exc:
            console.print(Text(visible(f"{exc}; try again"), style="red"), soft_wrap=True)
            continue
        edited = json.dumps(arguments, ensure_ascii=False)
        console.print(
            Text(visible(f"approved {item.call.id} ({item.tool}) with arguments {edited}"), style="green"),
            soft_wrap=True,
        )
        return


def _ask_result(conversation: Conversation, console: Console, reader: Reader, item: AwaitingCall) -> None:
    from rich.text import Text

    _show(console, item)
    content = _asked_text(console, reader, f"The result of {visible(item.tool)} (one line):")
    try:
        conversation.submit_result(item.call.id, content)
    except AwaitingDecision as exc:
        console.print(Text(visible(str(exc)), style="red"), soft_wrap=True)
        return
    console.print(Text(visible(f"submitted the result of {item.call.id} ({item.tool})"), style="green"), soft_wrap=True)


def _asked_text(console: Console, reader: Reader, question: str) -> str:
    """A non-empty line, asked for until one comes."""
    from rich.text import Text

    while True:
        console.print(Text(question), soft_wrap=True)
        text = _line(reader, "› ").strip()
        if text:
            return text


def _later(conversation: Conversation, console: Console) -> None:
    from rich.text import Text

    console.print(
        Text(
            f"the input ended: tool calls of conversation {conversation.id} still wait\n"
            + next_step(conversation.id, conversation.awaiting)
            + f"\nthen: threadline resume {conversation.id} -T …",
            style="yellow",
        ),
        soft_wrap=True,
    )
