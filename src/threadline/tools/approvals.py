"""Whether the tool call running now was approved (`call_approved`), for tools that ask for approval from their
arguments by raising `threadline.ApprovalRequired` (docs/architecture.md#tool-calls-that-wait)."""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["approved_call", "call_approved"]

_approved: ContextVar[bool] = ContextVar("threadline_call_approved", default=False)


def call_approved() -> bool:
    """Whether the tool call running now was approved by a person or a rule.

    A tool that decides from its arguments that it needs approval checks this before raising
    `threadline.ApprovalRequired`, so that once approved its call runs::

        if amount > 100 and not call_approved():
            raise ApprovalRequired(f"{amount} is over the limit of 100")
    """
    return _approved.get()


class approved_call:
    """Within the block (and in every task and worker thread started from it), `call_approved` is true. Enter and
    leave it within one step of a coroutine, as the engine does around an approved call."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _approved.set(True)

    def __exit__(self, *exc: object) -> None:
        _approved.reset(self._token)
