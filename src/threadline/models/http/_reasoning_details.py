"""OpenRouter's ``reasoning_details``: reasoning as typed entries, kept as they came and sent back unchanged (pure).

OpenRouter (and Vercel's AI Gateway, which copied the shape) put a reasoning model's thinking beside ``content`` twice:
as plain text in ``reasoning``, and as ``reasoning_details``, a list of entries that carry what the model behind it
needs back: ``{"type": "reasoning.text", "text": …, "signature": …}`` (Claude's signed thinking), ``{"type":
"reasoning.summary", "summary": …}`` (OpenAI's reasoning summaries), ``{"type": "reasoning.encrypted", "data": …}``
(Claude's redacted thinking, OpenAI's encrypted reasoning, and Gemini's thought signatures, whose ``id`` is the tool
call they belong to), each with ``format`` (``"anthropic-claude-v1"``, ``"openai-responses-v1"``,
``"google-gemini-v1"``…), ``index`` and often ``id``. OpenRouter's reasoning-tokens guide asks for the list back,
unmodified and in order, on the assistant message of a tool loop; Gemini through it answers 400 "Function call is
missing a thought_signature in functionCall parts" without it.

Each entry is kept as one `Reasoning` piece with ``provider="openrouter"``: its readable text (``text`` or
``summary``) in `Reasoning.text`, its signature copied to `Reasoning.signature` (a signed piece goes to no other
server), its ``id`` in `Reasoning.id`, and the rest of the entry, exactly as received, as JSON in
`Reasoning.redacted`, from which `entry` puts it back together. Entries of types not known here are kept whole.
Streamed, entries arrive in fragments that share an ``index``: `DetailsStream` joins them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..._text import replace_surrogates_in
from ...message_types import AssistantMessage, Reasoning

__all__ = ["PROVIDER", "DetailsStream", "detail_pieces", "entry", "piece", "replayed_details"]

PROVIDER = "openrouter"
"""The `Reasoning.provider` of pieces kept from ``reasoning_details``."""

# The field holding an entry's readable text, by type. Encrypted entries have none: their ``data`` is opaque.
_READABLE = {"reasoning.text": "text", "reasoning.summary": "summary"}
# Fields whose streamed fragments are joined rather than replaced.
_JOINED = ("text", "summary", "data")

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


def _is_entry(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def piece(detail: dict[str, Any]) -> Reasoning:
    """The `Reasoning` piece that keeps one ``reasoning_details`` entry (see the module docstring)."""
    envelope = dict(detail)
    key = _READABLE.get(detail["type"])
    text = envelope.get(key) if key is not None else None
    if isinstance(text, str) and text:
        del envelope[key]  # type: ignore[arg-type]
    else:
        text = ""
    signature = detail.get("signature")
    ident = detail.get("id")
    # Under the log's rule for text (lone surrogates become U+FFFD), as the piece's other fields are.
    opaque = _encode(replace_surrogates_in(envelope)).decode("utf-8")
    return Reasoning(
        text=text,
        signature=signature if isinstance(signature, str) and signature else None,
        redacted=opaque,
        provider=PROVIDER,
        id=ident if isinstance(ident, str) and ident else None,
    )


def entry(kept: Reasoning) -> dict[str, Any] | None:
    """The ``reasoning_details`` entry a piece keeps, as it was received; None when the piece holds none (the
    thinking of a failed call, or a log edited by hand)."""
    if kept.provider != PROVIDER or kept.redacted is None:
        return None
    try:
        envelope = _decode(kept.redacted)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: a log edited to nest it too deeply
        return None
    if not _is_entry(envelope):
        return None
    key = _READABLE.get(envelope["type"])
    if key is not None and kept.text:
        envelope[key] = kept.text
    return envelope  # type: ignore[no-any-return]


def replayed_details(message: AssistantMessage) -> list[dict[str, Any]] | None:
    """The ``reasoning_details`` to send back with an assistant message: its entries, in order; None for a failed
    call (its thinking was cut off) or when it has none."""
    if message.error is not None:
        return None
    entries = [found for kept in message.reasoning if (found := entry(kept)) is not None]
    return entries or None


def detail_pieces(details: Any) -> list[Reasoning]:
    """The pieces of a non-streamed message's ``reasoning_details`` (entries that are not objects with a ``type``
    are not reasoning anyone could send back, and are left out)."""
    if not isinstance(details, list):
        return []
    return [piece(detail) for detail in details if _is_entry(detail)]


class DetailsStream:
    """Joins the ``reasoning_details`` fragments of a stream into whole entries.

    A fragment with the ``index`` and type of an entry continues it: its ``text``, ``summary`` or ``data`` is
    appended, a non-empty ``signature`` (which comes last, as Claude's does) replaces an empty one, and other fields
    fill those not yet set. A fragment without an ``index`` continues the last entry when it has the same type and
    no other ``id``. Anything else starts an entry.
    """

    __slots__ = ("_by_index", "_entries", "readable")

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []
        self._by_index: dict[int, int] = {}  # a fragment's index -> position in _entries
        self.readable = False
        """Whether any entry carried readable text (else the plain ``reasoning`` beside them is all there is)."""

    def __bool__(self) -> bool:
        return bool(self._entries)

    def feed(self, fragments: Any) -> tuple[str, int] | None:
        """Take one delta's fragments; return the readable text they add and the part (entry position) it belongs
        to, or None when they add none."""
        if not isinstance(fragments, list):
            return None
        added: list[str] = []
        part = 0
        for fragment in fragments:
            if not _is_entry(fragment):
                continue
            position = self._find(fragment)
            if position is None:
                position = len(self._entries)
                self._entries.append(dict(fragment))
                index = fragment.get("index")
                if type(index) is int:
                    self._by_index[index] = position
            else:
                _join(self._entries[position], fragment)
            key = _READABLE.get(fragment["type"])
            text = fragment.get(key) if key is not None else None
            if isinstance(text, str) and text:
                added.append(text)
                part = position
        if not added:
            return None
        self.readable = True
        return "".join(added), part

    def _find(self, fragment: dict[str, Any]) -> int | None:
        index = fragment.get("index")
        if type(index) is int:
            position = self._by_index.get(index)
            if position is not None and self._entries[position]["type"] == fragment["type"]:
                return position
            return None
        if not self._entries:
            return None
        last = self._entries[-1]
        ident = fragment.get("id")
        if last["type"] == fragment["type"] and (not ident or ident == last.get("id")):
            return len(self._entries) - 1
        return None

    def pieces(self) -> list[Reasoning]:
        """The whole entries so far, as pieces."""
        return [piece(detail) for detail in self._entries]


def _join(target: dict[str, Any], fragment: dict[str, Any]) -> None:
    for key, value in fragment.items():
        if key in _JOINED and isinstance(value, str):
            before = target.get(key)
            target[key] = before + value if isinstance(before, str) else value
        elif key == "signature":
            if (isinstance(value, str) and value) or key not in target:
                target[key] = value
        elif target.get(key) in (None, ""):
            target[key] = value
