"""The few error types threadline raises.

Misuse by the caller is kept apart from failures while running::

    ThreadlineError
    ├── UserError                          the caller asked for something that cannot work
    │   └── CapabilityError                the model lacks a capability the request needs
    ├── ModelError                         a model call failed (status, partial output, retryable)
    ├── ProtocolError                      a log breaks the tool-call protocol (index and rule)
    ├── MessageListDeserializationError    a file or dict is not a readable log (position and field)
    ├── OutputValidationError              structured output did not validate against the requested type
    ├── StoreError                         the store refused or failed an operation
    ├── ConversationBusy                   another turn holds the conversation (this process or another)
    └── AwaitingDecision                   tool calls wait for a decision or a result (names them)

`ApprovalRequired` is not an error of threadline's: a tool raises it, before it acts, to make its call wait for a
person's decision.

Provider and driver exceptions never escape: each adapter maps them to one of these at its edge.
"""

from __future__ import annotations

import warnings
from collections.abc import MutableMapping
from typing import Any

from ._text import replace_surrogates

__all__ = [
    "ApprovalRequired",
    "AwaitingDecision",
    "CapabilityError",
    "ConversationBusy",
    "MessageListDeserializationError",
    "ModelError",
    "OutputValidationError",
    "ProtocolError",
    "StoreError",
    "ThreadlineError",
    "UserError",
]


class ThreadlineError(Exception):
    """Base class of every error threadline raises on purpose."""


class UserError(ThreadlineError):
    """The caller asked for something that cannot work (a bad name, a bad setting)."""


class CapabilityError(UserError):
    """The chosen model lacks a capability the request needs; raised before any request is sent."""


class ModelError(ThreadlineError):
    """A model call failed.

    Attributes:
        type: A short machine-readable kind, e.g. ``"rate_limit"``, ``"timeout"``, ``"auth"``, ``"server"``.
        status: The HTTP status, when there was one.
        partial: The text the model streamed before it failed (possibly empty).
        retryable: Whether trying again later may succeed.
        messages: Set by ``generate_text``: its log up to and including the failure (with the partial output),
            ready to continue from (``generate_text(messages=[*exc.messages, user("go on")])``); None elsewhere.
        usage: The `Usage` the provider reported for the failed call (an answer refused for stopping at the output
            limit is billed all the same), when it reported one: the engine logs and prices it with the failure.
    """

    # A `MessageList` and a `Usage`; typed loosely so that errors, the root of every module, import nothing of the log.
    messages: Any = None
    usage: Any = None

    def __init__(
        self,
        message: str,
        *,
        type: str = "error",
        status: int | None = None,
        partial: str = "",
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.type = type
        self.status = status
        self.partial = partial
        self.retryable = retryable


class ProtocolError(ThreadlineError):
    """A log breaks the tool-call protocol.

    Attributes:
        index: Position of the offending message in the log.
        rule: A short name of the broken rule.
    """

    def __init__(self, message: str, *, index: int, rule: str) -> None:
        super().__init__(f"message {index}: {message}")
        self.index = index
        self.rule = rule


class MessageListDeserializationError(ThreadlineError, ValueError):
    """Data is not a readable log. Nothing partial is ever returned.

    Attributes:
        position: Index of the offending message, when the problem is inside one.
        field: Name of the offending field, when there is one.
    """

    def __init__(self, message: str, *, position: int | None = None, field: str | None = None) -> None:
        # The message quotes the offending data, which may hold lone surrogates: under the log's text rule they
        # show as U+FFFD, so the error can always be printed and written.
        super().__init__(replace_surrogates(message))
        self.position = position
        self.field = replace_surrogates(field) if field is not None else None


class OutputValidationError(ThreadlineError):
    """Structured output did not parse or validate against the requested type.

    Attributes:
        text: The model's raw output.
    """

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


class StoreError(ThreadlineError):
    """The store refused or failed an operation (unknown conversation, newer schema, broken database)."""


class ConversationBusy(ThreadlineError):
    """Another turn holds the conversation, and waiting for it was not possible or took too long.

    One turn runs at a time per conversation. In one process a second turn waits for the first (up to
    ``ConversationConfig.busy_timeout``); other processes and hosts wait for the store's lease on the conversation
    the same way. This is raised when that time is up, when a synchronous call made inside a running event loop
    would have to wait (it cannot without blocking the loop), when the store finds that another writer appended
    to the conversation behind this one's back, or when a tool writes to the conversation whose turn is running it
    (the turn waits for the tool: the wait would never end).
    """


class AwaitingDecision(UserError):
    """Tool calls of the conversation wait (for a person's decision, or a result from outside), so what was asked
    cannot happen yet: a new request, or a decision about a call that is not waiting. The message names the calls;
    ``calls`` holds their ids."""

    def __init__(self, message: str, calls: list[str] | None = None) -> None:
        super().__init__(message)
        self.calls = list(calls or ())


class ApprovalRequired(Exception):
    """Raised by a tool, before it does anything, to make its call wait for a person's decision.

    The call is recorded as waiting, with ``reason``, and the turn ends with ``stop_reason="awaiting"``. Once the
    call is approved it runs again, and `threadline.tools.call_approved()` is then true inside it::

        @tool
        def pay(amount: float) -> str:
            if amount > 100 and not call_approved():
                raise ApprovalRequired(f"{amount} is over the limit of 100")
            ...
    """

    def __init__(self, reason: str = "the tool asks for approval") -> None:
        super().__init__(reason)
        self.reason = reason


# -- deprecated names kept for one release (issue 32, "one word per idea"): each still works and warns, naming the
# new one. Not exported: used inside the package only.


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``."""
    warnings.warn(
        f"{old} is deprecated; use {new} (the old name will be removed in the next release)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_argument(
    extra: MutableMapping[str, Any], old: str, new: str, value: Any, where: str, *, stacklevel: int = 4
) -> Any:
    """Take the deprecated keyword ``old`` out of ``extra`` (a function's ``**kwargs``) and return the value of
    ``new``: ``value``, or the old keyword's value with a warning.

    Raises:
        TypeError: when both the old and the new keyword are given.
    """
    if old not in extra:
        return value
    old_value = extra.pop(old)
    if value is not None:
        raise TypeError(f"{where}() got both {new}= and its deprecated old name {old}=; pass only {new}=")
    warn_renamed(f"{where}({old}=)", f"{where}({new}=)", stacklevel=stacklevel)
    return old_value
