"""Approvals on the tools' side (docs/architecture.md#tool-calls-that-wait): `set_approval`, which gives a group of
tools their ``approval`` rules (`Toolset.from_object`, MCP toolsets), and `call_approved`, whether the tool call
running now was approved (for tools that raise `threadline.ApprovalRequired` from their arguments)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from ..errors import UserError
from .tool import Tool, check_waits

__all__ = ["approved_call", "call_approved", "set_approval"]

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


def set_approval(tools: Iterable[Tool], approval: bool | Mapping[str, Any] | None, prefix: str | None) -> None:
    """Give ``tools`` (named ``"<prefix>.<member>"``) their ``approval``: one for all, or per member name.

    Raises:
        UserError: for a value a tool's ``approval`` cannot be, or a name that is none of the tools.
    """
    if approval is None:
        return
    tools = list(tools)
    if isinstance(approval, Mapping):
        by_member = {tool.name.removeprefix(f"{prefix}.") if prefix else tool.name: tool for tool in tools}
        unknown = sorted(set(approval) - set(by_member))
        if unknown:
            raise UserError(
                f"approval names {', '.join(map(repr, unknown))}, which is not a tool here "
                f"(tools: {', '.join(sorted(by_member))})"
            )
        chosen = [(by_member[member], rule) for member, rule in approval.items()]
    else:
        chosen = [(tool, approval) for tool in tools]
    for tool, rule in chosen:
        tool.approval, _ = check_waits(tool.name, rule, tool.external)
