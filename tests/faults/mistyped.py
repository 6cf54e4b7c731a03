"""Fault category: messages made in Python with a field of the wrong type, written to a real store.

Each case takes a well-typed log on a store, makes a message of a random kind with one random field set to a value
of a random wrong type (a number for text, text for a count, ``None`` for a required field, a dict for a list, an
object JSON cannot hold, ...), and writes it the way a program would: `Conversation.add`, ``store.append`` beside a
good message, or an import. A case survives when the write is refused with a `ThreadlineError` that names the
field, nothing of it was written, and the conversation still loads, validates and equals what it was. Before the
field check, such a message was stored and the conversation no longer loaded ("a stored message is damaged").
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadline import (
    AssistantMessage,
    Conversation,
    LLMError,
    MessageList,
    Reasoning,
    SystemMessage,
    ThreadlineError,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from threadline.messages import MessageMeta
from threadline.store import ConversationInfo, ImportItem, Store, open_store

from .campaign import Row

# Values of every JSON-ish kind, and one JSON cannot hold; each field gets one its type does not allow.
WRONG: dict[str, Any] = {
    "int": 7,
    "float": 2.5,
    "bool": True,
    "None": None,
    "bytes": b"raw",
    "list": ["a"],
    "dict": {"a": 1},
    "str": "text",
    "object": object(),
}


def _wrong_for(allowed: set[str], rng: random.Random) -> tuple[str, Any]:
    name = rng.choice(sorted(set(WRONG) - allowed))
    return name, WRONG[name]


# (kind, field, the value kinds the field allows, a function making the message with that field set)
def _cases() -> list[tuple[str, str, set[str], Any]]:
    call = ToolCall(id="c9", name="f", arguments={})

    def inside(value: Any) -> Any:
        """A free-form dict field's wrong value: the object JSON cannot hold goes inside the dict."""
        return {"x": value} if value is WRONG["object"] else value

    return [
        ("user", "content", {"str"}, lambda v: UserMessage(content=v)),
        ("user", "id", {"str"}, lambda v: UserMessage(content="a", id=v)),
        ("user", "attachments[0]", set(), lambda v: UserMessage(content="a", attachments=[v])),
        ("system", "content", {"str"}, lambda v: SystemMessage(content=v)),
        ("assistant", "content", {"str", "None"}, lambda v: AssistantMessage(content=v)),
        ("assistant", "model", {"str", "None"}, lambda v: AssistantMessage(content="a", model=v)),
        ("assistant", "tool_calls[0].name", {"str"}, lambda v: AssistantMessage(tool_calls=[ToolCall(id="c", name=v)])),
        ("assistant", "tool_calls[0].id", {"str"}, lambda v: AssistantMessage(tool_calls=[ToolCall(id=v, name="f")])),
        (
            "assistant",
            "tool_calls[0].arguments",
            {"dict"},
            lambda v: AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments=inside(v))]),
        ),
        ("assistant", "tool_calls[0]", set(), lambda v: AssistantMessage(tool_calls=[v])),
        (
            "assistant",
            "reasoning[0].text",
            {"str"},
            lambda v: AssistantMessage(content="a", reasoning=[Reasoning(text=v)]),
        ),
        (
            "assistant",
            "reasoning[0].signature",
            {"str", "None"},
            lambda v: AssistantMessage(content="a", reasoning=[Reasoning(text="t", signature=v)]),
        ),
        ("assistant", "reasoning[0]", set(), lambda v: AssistantMessage(content="a", reasoning=[v])),
        (
            "assistant",
            "usage.input_tokens",
            {"int"},
            lambda v: AssistantMessage(content="a", usage=Usage(input_tokens=v)),
        ),
        (
            "assistant",
            "error.message",
            {"str"},
            lambda v: AssistantMessage(content="a", error=LLMError(type="x", message=v)),
        ),
        ("tool", "content", {"str"}, lambda v: ToolMessage(tool_call_id=call.id, tool_name="f", content=v)),
        (
            "tool",
            "is_error",
            {"bool"},
            lambda v: ToolMessage(tool_call_id=call.id, tool_name="f", content="r", is_error=v),
        ),
        (
            "tool",
            "duration_ms",
            {"int", "float", "None"},
            lambda v: ToolMessage(tool_call_id=call.id, tool_name="f", content="r", duration_ms=v),
        ),
        ("meta", "meta.run_id", {"str", "None"}, lambda v: UserMessage(content="a", meta=MessageMeta(run_id=v))),
        (
            "meta",
            "meta.ui",
            {"dict"},
            lambda v: UserMessage(content="a", meta=MessageMeta(ui=inside(v))),
        ),
    ]


def _good_log() -> list[Any]:
    return [
        UserMessage(content="Weather?"),
        AssistantMessage(tool_calls=[ToolCall(id="c9", name="f", arguments={"city": "Paris"})]),
        ToolMessage(tool_call_id="c9", tool_name="f", content="22 C"),
    ]


def mistyped_messages(backend: str, cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """Write ``cases`` mistyped messages to a ``backend`` store (``sqlite``, ``postgres`` or ``memory``)."""
    from tests.store._backends import backend_url

    rng = random.Random(seed)
    row = Row(f"mistyped messages written (store, {backend})")
    table = _cases()
    with backend_url(backend, directory) as url:
        store = open_store(url)
        try:
            for number in range(cases):
                kind, name, allowed, make = rng.choice(table)
                value_kind, value = _wrong_for(allowed, rng)
                message = make(value)
                way = rng.choice(["conversation.add", "store.append", "import"])
                row.saw(way)
                _case(row, store, way, message, name, f"case {number}: {kind} {name} = {value_kind} via {way}")
        finally:
            store.close()
    return row


def _case(row: Row, store: Store, way: str, message: Any, name: str, note: str) -> None:
    log = _good_log()
    conversation = Conversation(messages=MessageList(log))
    conversation.set_store(store)
    refused: BaseException | None = None
    imported_id = f"import-{conversation.id}"
    try:
        if way == "conversation.add":
            conversation.add(UserMessage(content="next"), message)
        elif way == "store.append":
            store.append(conversation.id, [UserMessage(content="next"), message])
        else:
            stamp = datetime.now(UTC)
            info = ConversationInfo(id=imported_id, title=None, created_at=stamp, updated_at=stamp)
            store.import_conversations([ImportItem(info, [*_good_log(), message])])
    except ThreadlineError as exc:
        refused = exc
    except Exception as exc:  # anything else is not a clear error
        row.case(crashed=f"{type(exc).__name__}: {exc}", note=note)
        return
    if refused is None:
        row.case(crashed="the mistyped message was written", invalid=1, note=note)
        return
    if name.split("[")[0].split(".")[0] not in str(refused):
        row.case(crashed=f"the error does not name the field: {refused}", note=note)
        return
    try:
        loaded = store.load(conversation.id)
        loaded.validate()
    except ThreadlineError as exc:
        row.case(crashed=f"the conversation no longer loads: {exc}", invalid=1, note=note)
        return
    # `add` records message by message: the good one before the refused one is kept; an append or an import is
    # refused whole.
    expected = [*log, UserMessage(content="next")] if way == "conversation.add" else log
    kept = [m.content for m in loaded]
    lost = max(0, len(log) - len(loaded))
    ok = kept == [m.content for m in expected]
    if store.has_conversation(imported_id):
        row.case(crashed="part of a refused import was written", note=note)
        return
    row.case(crashed=None if ok else f"the stored log changed: {kept}", lost=lost, note=note)
