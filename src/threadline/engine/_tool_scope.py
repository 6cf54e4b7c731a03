"""Which turns the running code is a tool of, so that a tool cannot write to the conversation whose turn runs it.

While a turn runs its tool calls, the call is still unanswered: a user or assistant message recorded then would make
the conversation answer it ``interrupted`` first, and the turn would then answer it again (a log that never
validates again, issue 31); a turn started on it would wait for the running turn, which waits for the tool. So the
engine marks the context its tools run in (`ToolRound`): each tool runs in a copy of it (its asyncio task, or the
worker thread of a sync tool, and whatever those start with a copy of their context: tasks, ``asyncio.to_thread``),
and `refuse_own_tool` refuses every write to that conversation, and every turn on it, made from there.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

from ..errors import ConversationBusy

__all__ = ["Owner", "ToolRound", "refuse_own_tool"]


class Owner(Protocol):
    """A conversation, as far as the refusal names it."""

    @property
    def id(self) -> str: ...


# The rounds of tools this context belongs to: several when a tool runs a turn on another conversation (an
# agent_tool's sub-conversation) whose tools run in turn.
_rounds: ContextVar[tuple[ToolRound, ...]] = ContextVar("threadline_tool_rounds", default=())


class ToolRound:
    """One round of tool calls of a turn on ``host``: its context marks are made with `running`, and `end` lets go
    of the host once the round is over.

    A context keeps what its variables hold for as long as it lives, and a tool may start something that lives on
    in a copy of it (an MCP connection's session task, a thread): holding the host there would keep the
    conversation, its tools and their servers alive for as long. So contexts hold the round, which drops the host
    when it ends; a tool still running past its timeout is then no longer refused (its call is answered already).
    """

    __slots__ = ("host",)

    def __init__(self, host: object) -> None:
        self.host: object | None = host

    def running(self) -> _Running:
        """Within the ``with`` block, the current context (and every task and worker thread started from it) runs
        this round's tools. Enter and leave it within one step of a coroutine (no ``yield`` to the caller in
        between)."""
        return _Running(self)

    def end(self) -> None:
        """The round is over: let go of the host."""
        self.host = None


class _Running:
    """The context mark of `ToolRound.running` (a class rather than a generator: it is made for every tool round)."""

    __slots__ = ("_round", "_token")

    def __init__(self, round_: ToolRound) -> None:
        self._round = round_

    def __enter__(self) -> None:
        self._token = _rounds.set((*_rounds.get(), self._round))

    def __exit__(self, *exc: object) -> None:
        _rounds.reset(self._token)


def refuse_own_tool(owner: Owner) -> None:
    """Refuse a write to ``owner`` (or a turn on it) made from inside a tool its own running turn is running.

    Raises:
        ConversationBusy: saying why, when this code runs inside such a tool.
    """
    rounds = _rounds.get()
    if rounds and any(round_.host is owner for round_ in rounds):  # outside any tool (nearly always): one lookup
        raise ConversationBusy(
            f"conversation {owner.id} is running the turn that called this tool: a tool cannot write to that "
            "conversation or run a turn on it while its call is unanswered (the turn waits for the tool); return "
            "what it has to say as its result, or write to the conversation once the turn is over"
        )
