"""Choosing the window of the log a request carries (the hot path of `ContextBuilder.build`).

The system messages at the head of the log — the caller's opening instructions, e.g. ``.agent(text)`` — are always
sent, and their cost is reserved first: they are log content, not history to trim. The rest of the log is walked
newest first in *units*: one user, system or plain assistant message, or an assistant message with tool calls
together with its results (a system message recorded between a call and its result travels with the unit, after the
results, since providers want results right after their call). The newest unit and the latest user message are always
kept (the latest user message's cost is reserved before anything else is considered); older units are kept while they
fit; units of the current turn that do not fit are dropped oldest first; and once anything has not fitted, nothing
older than the latest user message is kept. The walk stops there, so its cost follows what is kept, not the length of
the log.

Written for speed: one loop, tuples for units, the default token estimate inlined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from .._artifact_names import READ_ARTIFACT, artifact_name, artifact_uri
from ..message_types import (
    INTERRUPTED_TOOL,
    ApprovalMessage,
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_for_model,
)
from .budget import ContextReport, ContextSettings, DroppedMessage

__all__ = ["select_window", "text_of"]

_encode = msgspec.json.encode
CACHE_LIMIT = 4096
_SETTINGS_KEY = object()


def text_of(message: Message) -> str:
    """What the budget counts of a message: its text, plus each tool call's name and JSON arguments, plus the text
    of its reasoning (thinking is sent back, and counted, with the answer it belongs to)."""
    if isinstance(message, AssistantMessage):
        text = message.content or ""
        for call in message.tool_calls:
            text += call.name + (call.raw_arguments if call.raw_arguments is not None else _args_text(call))
        for piece in message.reasoning:
            text += piece.text
        return text
    if isinstance(message, ApprovalMessage):
        return ""  # never sent to a model
    return message.content


def _args_text(call: ToolCall) -> str:
    if not call.arguments:
        return "{}"
    try:
        return _encode(call.arguments).decode("utf-8")
    except (TypeError, msgspec.EncodeError):
        return str(call.arguments)


def select_window(
    items: Sequence[Message],
    settings: ContextSettings,
    count: Callable[[str], int] | None,
    conversation_id: str | None,
    artifacts: Callable[[str, str], str] | None,
    report: ContextReport,
    explicit: list[DroppedMessage],
    cache: dict[Any, Any] | None = None,
    reserved: tuple[int, int] = (0, 0),
) -> tuple[list[Message], int, int]:
    """The log messages to send, in order; ``head``, the number of system messages opening the log (always sent);
    and the index of the cut: messages ``[head, cut)`` are left out by the budget.

    Fills ``report`` (kept ids, synthetic results, artifacts, costs, over_budget) and ``explicit`` (the drops not
    implied by the cut, with their reasons).
    ``count`` None means the default estimate of four characters per token. ``reserved`` is the cost (characters,
    tokens) of what the caller sends besides the log (the builder's system prefix): the budget is spent on it first,
    and the report's costs include it.
    """
    include_ui = settings.include_ui_events
    max_messages, max_chars = settings.max_messages, settings.max_chars
    max_tokens = settings.max_tokens
    if cache is not None:
        # The cache holds shaped units: valid only for the settings and counter they were made with.
        key = (settings.tool_preview_chars, settings.include_tool_results, include_ui, count, conversation_id)
        if cache.get(_SETTINGS_KEY) != key or len(cache) > CACHE_LIMIT:
            cache.clear()
            cache[_SETTINGS_KEY] = key
    shaper = _Shaper(settings, conversation_id, artifacts, report, cache)

    used_messages = 0
    used_chars, used_tokens = reserved
    latest_user = len(items) - 1
    while latest_user >= 0:
        candidate = items[latest_user]
        if isinstance(candidate, UserMessage) and (include_ui or candidate.meta.include_in_context):
            text = candidate.content
            used_messages = 1
            used_chars += len(text)
            used_tokens += (count(text) if count is not None else (len(text) + 3) // 4) + 4
            break
        latest_user -= 1

    # The caller's opening instructions are sent whatever the window; their cost is reserved like the latest user
    # message's. Scanning them costs only their number.
    size = len(items)
    head: list[Message] = []
    head_end = 0
    while head_end < size and isinstance(items[head_end], SystemMessage):
        opening = items[head_end]
        if include_ui or opening.meta.include_in_context:
            text = opening.content  # type: ignore[union-attr,assignment]  # a SystemMessage: always text
            head.append(opening)
            used_messages += 1
            used_chars += len(text)
            used_tokens += (count(text) if count is not None else (len(text) + 3) // 4) + 4
        else:
            explicit.append(DroppedMessage(opening.id, "ui_only"))
        head_end += 1

    units: list[Sequence[Message]] = []  # newest first
    unit: Sequence[Message]
    ids: Sequence[str]
    kept_ids: list[str] = []  # newest first
    seen_user = latest_user < 0
    stopped: str | None = None
    index = size - 1
    while index >= head_end:
        message = items[index]
        if not include_ui and not message.meta.include_in_context:
            explicit.append(DroppedMessage(message.id, "ui_only"))
            index -= 1
            continue
        kind = type(message)
        if kind is ApprovalMessage:  # the log's record of a wait: never sent to a model
            index -= 1
            continue
        shaped_from = len(report.artifacts)  # the artifacts this unit's previews add, taken back if it is dropped
        if kind is ToolMessage or (kind is AssistantMessage and message.tool_calls):  # type: ignore[union-attr]
            group = _tool_group(items, index, include_ui, explicit, count, shaper)
            if group is None:
                index = shaper.next_index
                continue
            unit, ids, chars, tokens = group
            next_index = shaper.next_index
        else:
            if kind is AssistantMessage:
                if message.error is not None:  # type: ignore[union-attr]
                    # Sent as its partial text ending in an [LLM_ERROR …] block: "continue" resumes from it. Its
                    # thinking stays in the log only: cut off, it is sent to no provider (and without the error, an
                    # adapter could no longer tell that it came from a failed call).
                    message = AssistantMessage(
                        id=message.id,
                        created_at=message.created_at,
                        meta=message.meta,
                        content=content_for_model(message),  # type: ignore[arg-type]
                        model=message.model,  # type: ignore[union-attr]
                    )
                elif message.content is None:  # type: ignore[union-attr]
                    explicit.append(DroppedMessage(message.id, "empty"))
                    index -= 1
                    continue
                text = text_of(message)
            else:
                text = message.content  # type: ignore[union-attr,assignment]
            chars = len(text)
            tokens = (count(text) if count is not None else (chars + 3) // 4) + 4
            unit = (message,)
            ids = (message.id,)
            next_index = index - 1
            if index == latest_user:  # its cost is already reserved
                units.append(unit)
                kept_ids.append(message.id)
                seen_user = True
                index = next_index
                continue
        if units:  # only the newest unit is kept whatever its size; the others must fit
            reason = stopped
            if reason is None:
                if used_messages + len(unit) > max_messages:
                    reason = "max_messages"
                elif used_chars + chars > max_chars:
                    reason = "max_chars"
                elif max_tokens is not None and used_tokens + tokens > max_tokens:
                    reason = "max_tokens"
            if reason is not None:
                stopped = reason
                del report.artifacts[shaped_from:]  # not sent: its previews are no artifacts of this request
                if seen_user:
                    break
                # Inside the current turn: drop this unit, keep looking for the latest user message.
                explicit.extend(DroppedMessage(message_id, f"budget:{reason}") for message_id in ids)
                index = next_index
                continue
        used_messages += len(unit)
        used_chars += chars
        used_tokens += tokens
        units.append(unit)
        kept_ids.extend(reversed(ids))
        index = next_index

    report.stopped_by = stopped
    report.over_budget = (
        used_messages > max_messages or used_chars > max_chars or (max_tokens is not None and used_tokens > max_tokens)
    )
    kept_ids.reverse()
    report.kept = [message.id for message in head] + kept_ids if head else kept_ids
    report.chars = used_chars
    report.estimated_tokens = used_tokens
    out: list[Message] = head
    for kept in reversed(units):
        out.extend(kept)
    return out, head_end, index + 1


class _Shaper:
    """Turns stored tool results into what is sent: previews for large outputs, placeholders when results are
    left out, synthetic ``interrupted`` results for calls that have none."""

    __slots__ = ("artifacts", "cache", "conversation_id", "include", "limit", "next_index", "report")

    def __init__(
        self,
        settings: ContextSettings,
        conversation_id: str | None,
        artifacts: Callable[[str, str], str] | None,
        report: ContextReport,
        cache: dict[Any, Any] | None = None,
    ) -> None:
        self.cache = cache
        self.limit = settings.tool_preview_chars
        self.include = settings.include_tool_results
        self.conversation_id = conversation_id
        self.artifacts = artifacts
        self.report = report
        self.next_index = -1

    def shape(self, result: ToolMessage) -> ToolMessage:
        content = result.content
        if self.include and (len(content) <= self.limit or result.tool_name == READ_ARTIFACT):
            # What the model asked read_artifact for is sent whole: previewing it again would go in circles.
            return result
        if not self.include:
            shown = f"[tool result omitted from context: {len(content)} characters]"
        else:
            # Tool-call ids may be anything (a '/', '..', a NUL): the artifact is named safely after the id.
            name = artifact_name(result.tool_call_id)
            uri = artifact_uri(self.conversation_id or "_", name)
            tail = f"\n…\n[{len(content)} characters in all; showing the first {self.limit}]\nFull output: {uri}"
            if len(content) <= self.limit + len(tail):
                return result  # a preview would be no shorter than the output itself
            if self.artifacts is not None:
                uri = self.artifacts(name, content)
                tail = f"\n…\n[{len(content)} characters in all; showing the first {self.limit}]\nFull output: {uri}"
            self.report.artifacts.append(uri)
            shown = content[: self.limit] + tail
        return ToolMessage(
            id=result.id,
            created_at=result.created_at,
            meta=result.meta,
            tool_call_id=result.tool_call_id,
            tool_name=result.tool_name,
            content=shown,
            is_error=result.is_error,
            duration_ms=result.duration_ms,
        )

    def interrupted(self, call: ToolCall) -> ToolMessage:
        message = ToolMessage(tool_call_id=call.id, tool_name=call.name, content=INTERRUPTED_TOOL, is_error=True)
        self.report.synthetic.append(message.id)
        return message


def _tool_group(
    items: Sequence[Message],
    index: int,
    include_ui: bool,
    explicit: list[Any],
    count: Callable[[str], int] | None,
    shaper: _Shaper,
) -> tuple[list[Message], list[str], int, int] | None:
    """The tool unit whose last message is at ``index``: ``(messages, real ids, chars, tokens)``, or None when the
    results there have no assistant message to answer (orphans, recorded as drops). Sets ``shaper.next_index``.

    Complete, clean units are cached per conversation (``shaper.cache``, keyed by the assistant message's id and
    checked by identity of every message), so the next request of a turn does not shape them again.
    """

    results: list[ToolMessage] = []
    # System messages recorded between the call and its results (newest first; rare, so made only when met), and
    # how many results came after the newest of them.
    interleaved: list[Message] | None = None
    after_system = 0
    newest_system = -1
    j = index
    while j >= 0:
        candidate = items[j]
        visible = include_ui or candidate.meta.include_in_context
        if isinstance(candidate, ToolMessage):
            if visible:
                results.append(candidate)
            else:
                explicit.append(DroppedMessage(candidate.id, "ui_only"))
            j -= 1
            continue
        if not visible:
            explicit.append(DroppedMessage(candidate.id, "ui_only"))
            j -= 1
            continue
        if type(candidate) is ApprovalMessage:  # the record of a wait between a call and its result: not sent
            j -= 1
            continue
        if isinstance(candidate, SystemMessage) and results:
            if interleaved is None:
                interleaved = []
                after_system, newest_system = len(results), j
            interleaved.append(candidate)
            j -= 1
            continue
        break
    owner = items[j] if j >= 0 else None
    if not isinstance(owner, AssistantMessage) or not owner.tool_calls:
        if interleaved:
            # Only the results after the newest system message are orphans; the walk goes on from that message.
            explicit.extend(DroppedMessage(result.id, "orphan") for result in results[:after_system])
            shaper.next_index = newest_system
            return None
        explicit.extend(DroppedMessage(result.id, "orphan") for result in results)
        shaper.next_index = j
        return None
    shaper.next_index = j - 1
    calls = owner.tool_calls
    results.reverse()
    cache = shaper.cache if interleaved is None else None  # rare: such units are shaped every time
    if cache is not None:
        hit = cache.get(owner.id)
        if hit is not None and hit[0] is owner and len(hit[1]) == len(results):
            # A plain loop, not all(<generator>): this runs for every kept tool unit of every request.
            for known, result in zip(hit[1], results, strict=True):  # lengths checked just above
                if known is not result:
                    break
            else:
                if hit[3]:
                    shaper.report.artifacts.extend(hit[3])
                cached: tuple[list[Message], list[str], int, int] = hit[2]
                return cached
    ordered: list[ToolMessage | None]
    if len(results) == len(calls) and all(r.tool_call_id == c.id for r, c in zip(results, calls, strict=True)):
        ordered = list(results)  # the usual case: one result per call, in call order
    else:
        wanted = {call.id for call in calls}
        by_id: dict[str, ToolMessage] = {}
        for result in results:
            call_id = result.tool_call_id
            if call_id in by_id or call_id not in wanted:
                explicit.append(DroppedMessage(result.id, "duplicate" if call_id in by_id else "orphan"))
            else:
                by_id[call_id] = result
        ordered = [by_id.get(call.id) for call in calls]
    text = text_of(owner)
    chars = len(text)
    tokens = (count(text) if count is not None else (chars + 3) // 4) + 4
    unit: list[Message] = [owner]
    ids = [owner.id]
    artifacts_before = len(shaper.report.artifacts)
    complete = True
    for call, found in zip(calls, ordered, strict=True):
        if found is None:
            shaped = shaper.interrupted(call)
            complete = False
        else:
            shaped = shaper.shape(found)
            ids.append(found.id)
        unit.append(shaped)
        content = shaped.content
        chars += len(content)
        tokens += (count(content) if count is not None else (len(content) + 3) // 4) + 4
    if interleaved is not None:
        for note in reversed(interleaved):
            unit.append(note)
            ids.append(note.id)
            content = note.content  # type: ignore[union-attr,assignment]
            chars += len(content)
            tokens += (count(content) if count is not None else (len(content) + 3) // 4) + 4
    group = (unit, ids, chars, tokens)
    if cache is not None and complete and len(results) == len(calls):
        # Units with synthetic results or dropped duplicates are not cached: they change as results arrive.
        cache[owner.id] = (owner, tuple(results), group, tuple(shaper.report.artifacts[artifacts_before:]))
    return group
