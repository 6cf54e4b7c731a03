"""The budget of a context window and the report of how a request kept to it: `ContextSettings`, `ContextReport`,
`DroppedMessage`, and the default token estimate. Shared by the context builder and the window it selects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..message_types import Message

if TYPE_CHECKING:
    from ..models.base import Model

__all__ = ["ContextReport", "ContextSettings", "DroppedMessage", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """A fast, provider-neutral token estimate: about four characters per token."""
    return (len(text) + 3) // 4


class ContextSettings(msgspec.Struct):
    """Budgets and policies of the context window.

    Attributes:
        max_messages: Most messages from the log in one request (the system prefix is not counted).
        max_chars: Most characters of message content in one request.
        max_tokens: Most estimated tokens of message content, if set (see ``token_counter``).
        token_counter: Counts tokens of a text; the default estimates, and the ``local`` model brings its tokenizer.
        include_tool_results: Send tool results; when False a short placeholder is sent in their place.
        include_ui_events: Send messages marked ``include_in_context=False`` too.
        tool_preview_chars: Tool outputs longer than this are sent as a preview plus an artifact URI.
        summarizer: A model (or model name) that writes a short summary of dropped messages, inserted as a system
            note; summaries are cached per dropped span.
    """

    max_messages: int = 80
    max_chars: int = 120_000
    max_tokens: int | None = None
    token_counter: Callable[[str], int] | None = None
    include_tool_results: bool = True
    include_ui_events: bool = False
    tool_preview_chars: int = 2_000
    summarizer: Model | str | None = None

    def __post_init__(self) -> None:
        if self.max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        if self.max_chars < 1:
            raise ValueError("max_chars must be at least 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or None)")
        if self.tool_preview_chars < 1:
            raise ValueError("tool_preview_chars must be at least 1")


class DroppedMessage(msgspec.Struct, frozen=True):
    """A message of the log left out of a request, and why (``budget:max_messages``, ``ui_only``, ``orphan``…)."""

    id: str
    reason: str


class ContextReport(msgspec.Struct):
    """What a build kept and dropped.

    Attributes:
        kept: Ids of log messages in the request, in order.
        estimated_tokens: Estimated tokens of the whole request, prefix included.
        chars: Characters of the whole request, prefix included.
        over_budget: True when the units that must be kept (the latest user message, the newest unit) alone
            exceed the budget; they are sent anyway.
        stopped_by: The budget that ended the window (``max_messages``, ``max_chars``, ``max_tokens``), if any.
        synthetic: Ids of results made up for calls that had none (``interrupted``).
        artifacts: URIs of tool outputs sent as previews.
        summary: The summary note inserted for dropped messages, if any.
        prefix_messages: How many messages at the start of the request were made by the builder (system prefix,
            run brief, summary note), not taken from the log.
        dropped_apart: Messages left out for a reason of their own (``ui_only``, ``empty``, ``orphan``…), not by
            the budget's cut; `dropped` lists both.
    """

    kept: list[str] = msgspec.field(default_factory=list)
    estimated_tokens: int = 0
    chars: int = 0
    over_budget: bool = False
    stopped_by: str | None = None
    synthetic: list[str] = msgspec.field(default_factory=list)
    artifacts: list[str] = msgspec.field(default_factory=list)
    summary: str | None = None
    prefix_messages: int = 0
    dropped_apart: list[DroppedMessage] = msgspec.field(default_factory=list)
    _log: Sequence[Message] | None = None
    _head: int = 0
    _cut: int = 0

    @classmethod
    def of_log(cls, log: Sequence[Message]) -> ContextReport:
        """An empty report of a build from ``log`` (the context builder fills it)."""
        return cls(_log=log)

    def set_cut(self, head: int, cut: int) -> None:
        """Record the budget's cut: the log's messages ``[head, cut)`` are left out (``head`` system messages open
        the log and are always sent)."""
        self._head, self._cut = head, cut

    @property
    def dropped(self) -> list[DroppedMessage]:
        """Every log message not in the request, with its reason (computed on access: listing a long log's
        untouched head costs time the build itself never spends)."""
        out: list[DroppedMessage] = []
        if self._log is not None and self._cut > self._head:
            reason = f"budget:{self.stopped_by}" if self.stopped_by else "budget"
            out.extend(DroppedMessage(message.id, reason) for message in self._log[self._head : self._cut])
        out.extend(self.dropped_apart)
        return out

    def dropped_runs(self) -> list[tuple[str, str, str, int]]:
        """`dropped` as runs of consecutive messages left out for the same reason: ``(reason, first id, last id,
        count)`` each, in log order (what `threadline logs show --context` and the viewer print)."""
        runs: list[tuple[str, str, str, int]] = []
        for drop in self.dropped:
            if runs and runs[-1][0] == drop.reason:
                reason, first, _, count = runs[-1]
                runs[-1] = (reason, first, drop.id, count + 1)
            else:
                runs.append((drop.reason, drop.id, drop.id, 1))
        return runs

    @property
    def dropped_count(self) -> int:
        return self._cut - self._head + len(self.dropped_apart)

    def __repr__(self) -> str:
        # The private fields hold the whole log: never print them.
        return (
            f"ContextReport(kept={len(self.kept)} messages, dropped={self.dropped_count}, "
            f"estimated_tokens={self.estimated_tokens}, chars={self.chars}, over_budget={self.over_budget}, "
            f"stopped_by={self.stopped_by!r}, synthetic={len(self.synthetic)}, artifacts={self.artifacts!r}, "
            f"summary={'yes' if self.summary else 'no'})"
        )

    def dropped_span(self) -> tuple[int, int]:
        """The index range ``[start, cut)`` of the log's oldest messages left out by the budget (``start`` is past
        the system messages opening the log, which are always sent)."""
        return (self._head, self._cut)
