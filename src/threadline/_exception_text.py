"""The text of an exception raised by code that is not ours (a tool, a custom model, a mentioned object, an MCP
client), read so that reading it can never fail.

``str(exc)`` runs the exception's ``__str__``, and with several arguments the ``repr`` of each: user code, which may
raise anything, ``SystemExit`` and ``KeyboardInterrupt`` included. Raised there, inside the handler that was turning
the exception into a tool result or a logged failure, it ended the turn with nothing answered (issue 31). Every place
that shows such an exception reads it through here; what reading raises is dropped, and the text says the message
could not be read. That is not the user's Ctrl-C: a real one reaches a running turn as the cancellation of its task
(asyncio turns SIGINT into that), and a tool that raises ``KeyboardInterrupt`` itself is told apart before its
message is read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["UNREADABLE", "describe_exception", "exception_message", "readable_message", "safe_repr", "type_name"]

UNREADABLE = "its message could not be read"


def type_name(value: Any) -> str:
    """The name of ``value``'s class (``"object"`` when even that cannot be read, as a hostile metaclass may do)."""
    try:
        name = type(value).__name__
    except BaseException:  # anything user code raises here only means the name is unknown
        return "object"
    return str.__str__(name) if isinstance(name, str) else "object"


def exception_message(exc: BaseException) -> str | None:
    """``str(exc)``, or None when reading it raised (whatever it raised)."""
    try:
        text = str(exc)
    except BaseException:  # see the module docstring: not an error of ours, not a Ctrl-C
        return None
    # A str subclass may bring its own __format__ and __add__ into the text made of it: keep only the characters.
    return str.__str__(text) if isinstance(text, str) else None


def readable_message(exc: BaseException) -> str:
    """``str(exc)``, or ``"<Type> (its message could not be read)"`` when reading it raised."""
    text = exception_message(exc)
    return f"{type_name(exc)} ({UNREADABLE})" if text is None else text


def describe_exception(exc: BaseException) -> str:
    """``"<Type>: <message>"`` for an exception (the type alone when its message is empty), even one whose message
    cannot be read: then ``"<Type> (its message could not be read)"``."""
    kind = type_name(exc)
    text = exception_message(exc)
    if text is None:
        return f"{kind} ({UNREADABLE})"
    return f"{kind}: {text}" if text else kind


def safe_repr(value: Any) -> str:
    """``repr(value)``, or ``"<Type>"`` when its ``__repr__`` raises (whatever it raises)."""
    try:
        text = repr(value)
    except BaseException:  # a value's repr is its own code: reading it must not end the turn
        return f"<{type_name(value)}>"
    return str.__str__(text) if isinstance(text, str) else f"<{type_name(value)}>"
