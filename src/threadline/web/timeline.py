"""The timeline as the viewer shows it: log messages turned into display items (pure, no I/O, no HTML).

An assistant message's tool calls are grouped with their results (one `ToolView` per call: name, arguments preview,
duration, state, output); a failed model call becomes a failure with its partial output and error type; mode, run,
node and agent become badges; UI-only messages are marked so the page greys them. Templates render these items and
escape every string they hold: no message text is ever treated as HTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..message_types import (
    ApprovalMessage,
    AssistantMessage,
    LLMError,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from ..pricing.prices import cost_text
from ..toolboxes.pages import page_id_of

__all__ = [
    "TEXT_LIMIT",
    "CutMatch",
    "DecisionView",
    "ForkLink",
    "Item",
    "ToolView",
    "approval_line",
    "build_items",
    "format_duration",
    "match_past_cut",
    "message_snippet",
    "note_match_past_cut",
    "page_id_of",
    "tool_view",
]

# Text longer than this is cut on the page (the whole text is one click away, and in the exports): a tool that
# returned a 5 MB file must not make the timeline unusable.
TEXT_LIMIT = 20_000
PREVIEW_CHARS = 90


@dataclass(frozen=True, slots=True)
class CutMatch:
    """Where a search hit's words lie in the part of a text the page cuts (past `TEXT_LIMIT`).

    Attributes:
        position: The match's first character, from 0.
        total: The whole text's length.
        excerpt: The text around the match, on one line (``…`` where it is cut).
        part: Which part of the whole text (``/full/<id>?part=N``) holds the match.
    """

    position: int
    total: int
    excerpt: str
    part: int


@dataclass(frozen=True, slots=True)
class ForkLink:
    """A fork made from a message of this conversation."""

    id: str
    title: str


@dataclass(frozen=True, slots=True)
class DecisionView:
    """How a call's wait ended (an approval entry folded into its call's group), as the group shows it.

    Attributes:
        state: ``"approved"`` or ``"denied"``.
        by: Who decided (``"rule"`` for a tool approved earlier for the whole conversation), if logged.
        at: When it was logged.
        reason: Why, if given.
        scope: ``"call"`` or ``"conversation"`` (approved for the rest of the conversation).
        arguments: The arguments the approval ran the call with instead of the model's (indented JSON), if edited.
    """

    state: str
    by: str | None
    at: datetime
    reason: str | None
    scope: str
    arguments: str | None = None


@dataclass(slots=True)
class ToolView:
    """One tool call with its result, as a collapsed group shows it.

    Attributes:
        call_id: The call's id (the group's anchor, so a result arriving later finds its call).
        name: The tool's real name.
        preview: The arguments on one line, cut to a preview.
        arguments: The whole arguments, indented JSON (or the raw text the model sent when it was not JSON).
        state: ``"ok"``, ``"error"`` or ``"pending"`` (no result yet).
        duration: How long the tool ran, e.g. ``"12 ms"``, if known.
        output: The result's text (cut at `TEXT_LIMIT`), None while pending.
        cut: How many characters of the output are not shown.
        result_id: The id of the result message.
        page_id: The id of a page the call generated (``Pages.generate_ui``), shown in a sandboxed frame.
        duration_ms: How long the tool ran, in milliseconds, if known (for the turn's timing strip).
        finished_at: When the result was recorded.
        match: Where a search hit's words lie in the part of the output the page cuts.
        wait: What the call waited for, if it waited: ``"approval"`` (a person's decision) or ``"external"`` (a
            result from outside).
        wait_reason: Why it waited.
        sha256: The hash of its arguments a decision binds to (`arguments_sha256`).
        decision: How the wait ended (approved or denied), if it was decided.
        entry_ids: The ids of the approval entries folded into this group.
        started: The approved call began to run (a ``"started"`` entry) and has no result yet.
    """

    call_id: str
    name: str
    preview: str
    arguments: str
    state: str = "pending"
    duration: str | None = None
    output: str | None = None
    cut: int = 0
    result_id: str | None = None
    page_id: str | None = None
    duration_ms: float | None = None
    finished_at: datetime | None = None
    match: CutMatch | None = None
    wait: str | None = None
    wait_reason: str | None = None
    sha256: str | None = None
    decision: DecisionView | None = None
    entry_ids: list[str] = field(default_factory=list)
    started: bool = False

    @property
    def awaiting(self) -> bool:
        """Whether the call waits (for a decision or a result) on this page: requested, undecided, unanswered."""
        return self.wait is not None and self.decision is None and self.result_id is None

    def note(self, entry: ApprovalMessage) -> None:
        """Fold an approval entry of this call into the group: a request makes it wait, a decision ends the wait."""
        self.entry_ids.append(entry.id)
        if entry.state == "requested":
            # A new wait (a call asked again after it stopped while it ran ends the decision before it).
            self.wait, self.wait_reason, self.sha256 = entry.kind, entry.reason, entry.arguments_sha256
            self.decision, self.started = None, False
        elif entry.state == "started":
            self.started = True  # the approved call began to run: "running…" until its result comes
        else:
            edited = json.dumps(entry.arguments, ensure_ascii=False, indent=2) if entry.arguments is not None else None
            self.decision = DecisionView(entry.state, entry.by, entry.created_at, entry.reason, entry.scope, edited)
        if self.result_id is None:
            self.state = _wait_state(self)

    def finish(self, result: ToolView) -> None:
        """Take the result's side of ``result`` (a view of the result alone) into this group."""
        self.state, self.duration, self.output, self.cut = result.state, result.duration, result.output, result.cut
        self.result_id, self.page_id = result.result_id, result.page_id
        self.duration_ms, self.finished_at = result.duration_ms, result.finished_at


@dataclass(slots=True)
class ThoughtView:
    """One reasoning piece of an assistant message, as the timeline shows it (collapsed under the message).

    Attributes:
        text: The visible thinking or summary (cut at `TEXT_LIMIT`); empty when the provider showed none.
        cut: How many characters of it are not shown.
        note: What else the piece carries: signed, or opaque (redacted/encrypted) data and its size; unsigned pieces
            of a failed call say that they were cut off.
        provider: The wire family that produced it.
    """

    text: str
    cut: int
    note: str
    provider: str | None


def thought_views(message: AssistantMessage, limit: int | None = TEXT_LIMIT) -> list[ThoughtView]:
    """The reasoning pieces of an assistant message, for the timeline (texts cut at ``limit``, None: whole)."""
    views: list[ThoughtView] = []
    for piece in message.reasoning:
        text, cut = _cut(piece.text, limit)
        notes: list[str] = []
        if piece.signature is not None:
            notes.append("signed")
        if piece.provider == "openrouter" and piece.redacted is not None:
            notes.append(_routed_note(piece.redacted))
        elif piece.redacted is not None:
            notes.append(f"{len(piece.redacted):,} characters of opaque reasoning data")
        if message.error is not None and piece.signature is None and piece.redacted is None:
            notes.append("cut off with the failed call; never sent back")
        views.append(ThoughtView(text or "", cut, " · ".join(notes), piece.provider))
    return views


def _routed_note(kept: str) -> str:
    """What an OpenRouter ``reasoning_details`` entry carries besides its text: its type and format, and the size
    of encrypted data (the rest of the entry is kept as JSON, to go back as it came)."""
    try:
        entry = json.loads(kept)
    except ValueError:
        entry = None
    if not isinstance(entry, dict):
        return "kept as OpenRouter sent it"
    what = " ".join(str(entry[key]) for key in ("type", "format") if isinstance(entry.get(key), str))
    data = entry.get("data")
    size = f", {len(data):,} characters of encrypted data" if isinstance(data, str) and data else ""
    return f"kept as OpenRouter sent it ({what}{size})" if what else f"kept as OpenRouter sent it{size}"


@dataclass(slots=True)
class Item:
    """One message of the timeline (an assistant message carries its tool groups).

    Attributes:
        message: The message itself.
        seq: Its sequence number in the store.
        kind: ``"user"``, ``"assistant"``, ``"system"``, ``"failure"`` or ``"tool"`` (a result shown on its own,
            whose call is not on the page).
        text: The text to show (cut at `TEXT_LIMIT`), if any.
        cut: How many characters of the text are not shown.
        tools: The tool groups of an assistant message.
        error: The failure of a failed model call.
        badges: ``(label, value)`` pairs: mode, run, node, agent.
        ui_only: Kept in the log but never sent to a model (greyed).
        attachments: One line per attachment of a user message.
        forks: Forks made from this message.
        standalone: For a ``"tool"`` item: the result as a `ToolView`.
        thoughts: The reasoning of an assistant message (or of a failed call, what it had thought).
        match: Where a search hit's words lie in the part of the text the page cuts.
    """

    message: Message
    seq: int
    kind: str
    text: str | None = None
    cut: int = 0
    tools: list[ToolView] = field(default_factory=list)
    error: LLMError | None = None
    badges: list[tuple[str, str]] = field(default_factory=list)
    ui_only: bool = False
    attachments: list[str] = field(default_factory=list)
    forks: list[ForkLink] = field(default_factory=list)
    standalone: ToolView | None = None
    thoughts: list[ThoughtView] = field(default_factory=list)
    match: CutMatch | None = None

    @property
    def id(self) -> str:
        return self.message.id

    @property
    def created_at(self) -> datetime:
        return self.message.created_at

    @property
    def model(self) -> str | None:
        return self.message.model if isinstance(self.message, AssistantMessage) else None

    @property
    def usage(self) -> Usage | None:
        return self.message.usage if isinstance(self.message, AssistantMessage) else None

    @property
    def cost(self) -> str:
        """The call's cost as shown (``"$0.0021"``, ``"unknown"``); "" for a message that is no model call with
        usage."""
        usage = self.usage
        return "" if usage is None else cost_text(usage.cost)

    @property
    def usd(self) -> str:
        """The call's priced part in USD, exact, for the timing strip's sums ("" when none)."""
        usage = self.usage
        cost = None if usage is None else usage.cost
        return "" if cost is None or cost.usd is None else str(cost.usd)

    @property
    def cost_unknown(self) -> bool:
        """Whether part of the call's cost is unknown (a model or token kind without a price, or no price at all)."""
        usage = self.usage
        return usage is not None and (usage.cost is None or bool(usage.cost.unknown) or usage.cost.usd is None)

    @property
    def ended_at(self) -> datetime:
        """When the last message this item shows was recorded (its last tool result, or itself)."""
        times = [view.finished_at for view in self.tools if view.finished_at is not None]
        return max([self.message.created_at, *times])

    def holds(self, message_id: str | None) -> bool:
        """Whether this item shows the message (itself, or a tool result folded into one of its groups)."""
        if message_id is None:
            return False
        if message_id == self.message.id:
            return True
        groups = [*self.tools, *([self.standalone] if self.standalone is not None else [])]
        return any(view.result_id == message_id or message_id in view.entry_ids for view in groups)


def _cut(text: str | None, limit: int | None = TEXT_LIMIT) -> tuple[str | None, int]:
    if text is None or limit is None or len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def format_duration(ms: float | None) -> str | None:
    """``"850 ms"``, ``"2.4 s"``, ``"3 min 5 s"``; None when unknown."""
    if ms is None:
        return None
    if ms < 1_000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1_000:.1f} s"
    minutes, seconds = divmod(round(ms / 1_000), 60)
    return f"{minutes} min {seconds} s"


def _arguments(call: ToolCall) -> tuple[str, str]:
    """The arguments as a one-line preview and as indented JSON."""
    if call.raw_arguments is not None:
        one_line = " ".join(call.raw_arguments.split())
        full = call.raw_arguments
    else:
        one_line = json.dumps(call.arguments, ensure_ascii=False, separators=(", ", ": "))
        full = json.dumps(call.arguments, ensure_ascii=False, indent=2)
    if len(one_line) > PREVIEW_CHARS:
        one_line = one_line[: PREVIEW_CHARS - 1] + "…"
    return one_line, full


def tool_view(call: ToolCall | None, result: ToolMessage | None, limit: int | None = TEXT_LIMIT) -> ToolView:
    """The group of one call and its result (either may be missing: a pending call, a result shown alone); the
    output is cut at ``limit`` (None: whole)."""
    if call is not None:
        preview, arguments = _arguments(call)
        view = ToolView(call_id=call.id, name=call.name, preview=preview, arguments=arguments)
    else:
        assert result is not None
        view = ToolView(call_id=result.tool_call_id, name=result.tool_name, preview="", arguments="")
    if result is not None:
        view.state = "error" if result.is_error else "ok"
        view.duration = format_duration(result.duration_ms)
        view.output, view.cut = _cut(result.content, limit)
        view.result_id = result.id
        view.page_id = page_id_of(result)
        view.duration_ms = result.duration_ms
        view.finished_at = result.created_at
    return view


def _wait_state(view: ToolView) -> str:
    """The state of a call without a result: waiting, approved (to run), denied, or running (``"pending"``)."""
    if view.started:
        return "pending"
    if view.decision is not None:
        return view.decision.state
    return "awaiting" if view.wait is not None else "pending"


def _badges(message: Message) -> list[tuple[str, str]]:
    meta = message.meta
    return [
        (label, value)
        for label, value in (
            ("mode", meta.mode),
            ("run", meta.run_id),
            ("node", meta.node_id),
            ("agent", meta.agent_id),
        )
        if value
    ]


def _item(message: Message, seq: int, limit: int | None) -> Item:
    item = Item(message=message, seq=seq, kind=message.role, badges=_badges(message))
    item.ui_only = not message.meta.include_in_context
    if isinstance(message, UserMessage):
        item.text, item.cut = _cut(message.content, limit)
        item.attachments = [
            f"{a.kind}: {a.name or a.ref or a.url or a.media_type or 'attachment'}" for a in message.attachments
        ]
    elif isinstance(message, SystemMessage):
        item.text, item.cut = _cut(message.content, limit)
    elif isinstance(message, AssistantMessage):
        item.text, item.cut = _cut(message.content, limit)
        if message.error is not None:
            item.kind = "failure"
            item.error = message.error
        item.tools = [tool_view(call, None) for call in message.tool_calls]
        if message.reasoning:
            item.thoughts = thought_views(message, limit)
    elif isinstance(message, ToolMessage):
        item.standalone = tool_view(None, message, limit)
    elif isinstance(message, ApprovalMessage):
        # An entry whose call is not on the page: a group of its own, never a chat message.
        item.kind = "tool"
        item.standalone = ToolView(call_id=message.tool_call_id, name=message.tool_name, preview="", arguments="")
        item.standalone.note(message)
    return item


def build_items(
    messages: Sequence[Message],
    seqs: Sequence[int],
    forks: Mapping[str, list[ForkLink]] | None = None,
    *,
    limit: int | None = TEXT_LIMIT,
) -> list[Item]:
    """The display items of consecutive log messages: each tool result joins the group of the call it answers
    when that call is among them, and is shown on its own otherwise. Texts are cut at ``limit`` characters (the
    page offers the rest); None keeps them whole (the export, which has no page to fetch the rest from)."""
    items: list[Item] = []
    groups: dict[str, ToolView] = {}
    for message, seq in zip(messages, seqs, strict=True):
        if isinstance(message, ToolMessage):
            group = groups.get(message.tool_call_id)
            if group is not None and group.result_id is None:
                group.finish(tool_view(None, message, limit))
                continue
        elif isinstance(message, ApprovalMessage):
            group = groups.get(message.tool_call_id)
            if group is not None:
                group.note(message)
                continue
        item = _item(message, seq, limit)
        if forks:
            item.forks = list(forks.get(message.id, ()))
        if isinstance(message, AssistantMessage):
            groups = {view.call_id: view for view in item.tools}
        elif isinstance(message, UserMessage):
            groups = {}
        items.append(item)
    return items


def message_snippet(message: Message, limit: int = 120) -> str:
    """The start of a message on one line, as a reader would name it: its text, else what it called or why it
    failed."""
    text = " ".join((getattr(message, "content", None) or "").split())
    if not text and isinstance(message, AssistantMessage):
        if message.error is not None:
            text = f"failed: {message.error.type}"
        elif message.tool_calls:
            text = "called " + ", ".join(call.name for call in message.tool_calls)
    if isinstance(message, ToolMessage):
        text = f"{message.tool_name} answered: {text}"
    elif isinstance(message, ApprovalMessage):
        text = approval_line(message)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def approval_line(entry: ApprovalMessage) -> str:
    """An approval entry in words: ``"pay waits for approval: <reason>"``, ``"pay approved by alice: <reason>"``."""
    if entry.state == "requested":
        what = "a result from outside" if entry.kind == "external" else "approval"
        text = f"{entry.tool_name} waits for {what}"
    elif entry.state == "started":
        text = f"{entry.tool_name} began to run"
    else:
        text = f"{entry.tool_name} {entry.state}" + (f" by {entry.by}" if entry.by else "")
        if entry.scope == "conversation":
            text += " for the rest of the conversation"
    return text + (f": {entry.reason}" if entry.reason else "")


def fork_links(forks: Iterable[tuple[str, str, str]]) -> dict[str, list[ForkLink]]:
    """Forks by the message they were made from, from ``(message id, fork id, fork title)``."""
    out: dict[str, list[ForkLink]] = {}
    for message_id, fork_id, title in forks:
        out.setdefault(message_id, []).append(ForkLink(fork_id, title))
    return out


# A word as the page's marking sees it (viewer.js: /[\p{L}\p{N}]+/u): letters and digits.
_WORD = re.compile(r"[^\W_]+")
EXCERPT_BEFORE, EXCERPT_AFTER = 100, 200


def match_past_cut(text: str, query: str, part_chars: int, limit: int = TEXT_LIMIT) -> CutMatch | None:
    """Where the searched words first occur in ``text`` when the page shows none of them: the text is cut at
    ``limit`` and the first word beginning with one of them (the rule the page marks by) ends past the cut. None when
    the text is not cut, the shown part holds a match, or the words are nowhere (the search matched otherwise)."""
    words = sorted(set(_WORD.findall(query.lower())), key=len, reverse=True)
    if len(text) <= limit or not words:
        return None
    starts = re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, words)) + ")", re.IGNORECASE)
    found = starts.search(text)
    if found is None or found.end() <= limit:
        return None
    start = found.start()
    head, tail = max(0, start - EXCERPT_BEFORE), min(len(text), found.end() + EXCERPT_AFTER)
    excerpt = " ".join(text[head:tail].split())
    excerpt = ("…" if head else "") + excerpt + ("…" if tail < len(text) else "")
    return CutMatch(start, len(text), excerpt, start // part_chars)


def note_match_past_cut(
    items: Sequence[Item], messages: Sequence[Message], hit_id: str, query: str, part_chars: int
) -> None:
    """Tell the item (or tool group) showing message ``hit_id`` where the searched words lie when the page cuts
    them off, so the page can say so (and open the group) instead of showing no match at all."""
    message = next((m for m in messages if m.id == hit_id), None)
    text = getattr(message, "content", None)
    if message is None or not isinstance(text, str):
        return
    match = match_past_cut(text, query, part_chars)
    if match is None:
        return
    for item in items:
        if item.id == hit_id and not isinstance(message, ToolMessage):
            item.match = match
            return
        for view in [*item.tools, *([item.standalone] if item.standalone is not None else [])]:
            if view.result_id == hit_id:
                view.match = match
                return
