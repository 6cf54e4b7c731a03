"""Masking the adapter's own key in what a model answers, before any of it reaches a caller (pure: no I/O).

A server can put the key it was sent into the answer: a proxy that echoes the request, a model asked to repeat its
headers, a hostile endpoint. The transport passes everything it hands on through an `AnswerMask` first: the text and
the thinking as they stream, then the whole `ModelResponse` (answer text, thinking, tool calls) that the turn engine
logs, shows, traces and gives to tools. Only the forms of the configured secrets are masked (`secret_forms`: raw,
escaped, URL-encoded, base64), never text that merely looks like a key: that is the model's to say.

A text is masked in one pass from its start: at each place the longest form found there becomes ``***``. Streamed, a
key may be split over two deltas, so each stream (the answer's text, each part of the thinking) holds back only the
trailing text that could be the start of a form (usually nothing, at most a form's length) and gives it on with the
next delta or when the stream ends; what the deltas show adds up to exactly what the whole text masked at once is,
so the screen and the log agree. A text that ends inside what could be a form of the key (a key cut off by the end
of the answer or by a failure) has that start masked too once it is `MIN_CUT` characters long; shorter, it is more
likely ordinary text or a key's public prefix (``sk-proj-``).

Thinking that was signed (Claude's ``signature``, OpenRouter's signed entries) and had to be masked no longer
matches its signature, which the API refuses on every later request ("Invalid `signature` in `thinking` block"): it
is kept without its signature (and, from OpenRouter, without the entry to send back), so it is logged and shown but
never sent back, like the partial thinking of a failed call.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ...message_types import Reasoning, ToolCall
from ..base import ModelResponse, ReasoningDelta
from ._reasoning_details import PROVIDER as OPENROUTER

__all__ = ["MASK", "MIN_CUT", "AnswerMask", "Forms", "HeldText"]

MASK = "***"
MIN_CUT = 16  # characters: the shortest start of a form masked where a text ends
_LONG_TEXT = 200  # characters: past this, substring searches find a form faster than the pattern
_encode = msgspec.json.Encoder().encode


class Forms:
    """The forms of an adapter's secrets, ready for masking answers (made once per endpoint)."""

    __slots__ = ("_heads", "encoded_pairs", "first", "longest", "marks", "ordered", "pairs", "pattern", "starts")

    def __init__(self, forms: tuple[str, ...]) -> None:
        self.ordered = ordered = sorted(set(forms), key=len, reverse=True)
        # Longest first: at one place, the longest form found there wins (the whole "Bearer <key>" in base64 rather
        # than the part of it that encodes the key alone).
        self.pattern = re.compile("|".join(re.escape(form) for form in ordered))
        self.longest = len(ordered[0])
        self.starts: dict[str, tuple[str, ...]] = {}
        for form in ordered:
            self.starts[form[0]] = (*self.starts.get(form[0], ()), form)
        # The characters a form starts with, and its first two: text that holds none of those pairs, and does not end
        # in one of those characters, holds no form and cannot be the start of one, which one search tells (forms
        # have at least 4 characters). Most text is such text.
        self.first = re.compile("[" + "".join(re.escape(first) for first in self.starts) + "]")
        self.pairs = re.compile("|".join(re.escape(pair) for pair in sorted({form[:2] for form in ordered})))
        # The same for values encoded as JSON (escaping goes character by character, so a form in a string is, as
        # encoded, in the string as encoded).
        encoded = {_encode(form)[1:3] for form in ordered}
        self.encoded_pairs = re.compile(b"|".join(re.escape(pair) for pair in sorted(encoded)))
        # The forms a text may end inside of, far enough for `cut_end`, with their first `MIN_CUT` characters.
        self._heads = [(form, form[:MIN_CUT]) for form in ordered if len(form) > MIN_CUT]
        # For `untouched`: the fewest texts such that every form, and every start of a form that `cut_end` masks,
        # holds one of them (mostly the forms' first `MIN_CUT` characters), as they stand inside an encoded JSON
        # string. A value whose encoding holds none of them is left as it is by the masking; a few substring
        # searches tell, however many forms there are.
        marks: list[str] = []
        for text in sorted({form[:MIN_CUT] for form in ordered}, key=len):
            if not any(mark in text for mark in marks):
                marks.append(text)
        self.marks = tuple(_encode(mark)[1:-1] for mark in marks)

    def start_of_form(self, text: str, start: int = 0, stop: int | None = None) -> int:
        """The first place at or after ``start`` (and before ``stop``) from which the rest of ``text`` could begin a
        form (a proper prefix of one), else ``len(text)``."""
        size = len(text)
        place = max(start, size - self.longest + 1)
        end = size if stop is None else min(stop, size)
        while place < end and (first := self.first.search(text, place, end)) is not None:
            place = first.start()
            rest = text[place:]
            for form in self.starts[rest[0]]:
                if len(form) > len(rest) and form.startswith(rest):
                    return place
            place += 1
        return size

    def untouched(self, result: ModelResponse) -> bool:
        """Whether masking leaves ``result`` as it is: neither a form nor the start of one long enough to be masked
        as cut off is anywhere in it, opaque reasoning data included (one encoding and a substring search per one of
        `marks`; the first characters of a form alone, which random data holds by chance, do not count)."""
        blob = _encode(result)
        for mark in self.marks:  # a loop, not any(): this runs on every answer
            if mark in blob:
                return False
        return True

    def clear(self, text: str) -> bool:
        """Whether ``text`` surely holds no form and does not end in the start of one (see ``pairs``)."""
        return not text or (self.pairs.search(text) is None and text[-1] not in self.starts)

    def whole(self, text: str) -> str:
        """A whole text masked (see the module docstring)."""
        if self.pairs.search(text) is None:  # no form in it, and no start of one long enough to be cut
            return text
        # Even then, most texts hold no form: said by one search (substring searches for a long text, where they
        # are much faster than the pattern), and then only its end needs a look.
        if len(text) > _LONG_TEXT:
            found = any(form in text for form in self.ordered)
        else:
            found = self.pattern.search(text) is not None
        if not found:
            return self.cut_end(text)
        held = HeldText(self)
        return held.feed(text) + held.flush()

    def opaque(self, data: str) -> str:
        """Opaque data (a signature, encrypted reasoning) with its forms masked: it is never cut short by a stream,
        and most of it is random enough to hold the first characters of a form by chance."""
        return self.pattern.sub(MASK, data) if any(form in data for form in self.ordered) else data

    def cut_end(self, text: str) -> str:
        """``text`` with its end masked when it is the start of a form, `MIN_CUT` characters or more."""
        size = len(text)
        if size < MIN_CUT:
            return text
        cut = size
        for form, head in self._heads:
            # The earliest place, among the last characters that could start this form, where its head stands.
            place = text.find(head, max(0, size - len(form) + 1), cut)
            while place != -1:
                if form.startswith(text[place:]):
                    cut = place
                    break
                place = text.find(head, place + 1, cut)
        return text if cut == size else text[:cut] + MASK


class HeldText:
    """One stream of text masked as it comes: `feed` each piece, take what may be shown, `flush` at its end."""

    __slots__ = ("_forms", "_held")

    def __init__(self, forms: Forms) -> None:
        self._forms = forms
        self._held = ""

    def feed(self, piece: str) -> str:
        """What may be shown of the text so far (held back: what could still become a form)."""
        text = self._held + piece if self._held else piece
        forms = self._forms
        if forms.clear(text):  # the usual case
            self._held = ""
            return text
        out: list[str] = []
        place = 0
        while True:
            pending = forms.start_of_form(text, place)
            found = forms.pattern.search(text, place)
            if found is None or found.start() >= pending:
                self._held = text[pending:]
                out.append(text[place:pending])
                return "".join(out)
            # A form found before any text that could still grow into one is final: no longer form can begin
            # at or before it.
            out.append(text[place : found.start()])
            out.append(MASK)
            place = found.end()

    @property
    def holding(self) -> bool:
        """Whether text is held back (it could still become a form)."""
        return bool(self._held)

    def flush(self) -> str:
        """The text held back, at the end of the stream: its forms masked, and a start of one cut off by the end
        masked too when it is `MIN_CUT` characters or more."""
        held, self._held = self._held, ""
        if not held:
            return ""
        return self._forms.cut_end(self._forms.pattern.sub(MASK, held))


class AnswerMask:
    """The masking of one attempt of a model call: its streamed text and thinking, then its response."""

    __slots__ = ("_fed", "_forms", "_said", "_text", "_thinking")

    def __init__(self, forms: Forms) -> None:
        self._forms = forms
        self._text = HeldText(forms)
        self._fed: list[str] = []  # the answer's text as the server sent it
        self._said: list[str] = []  # the answer's text as it was given on, masked
        self._thinking: dict[int, tuple[HeldText, str | None]] = {}  # the open parts of the thinking

    def text(self, piece: str) -> str:
        """What may be shown of a streamed piece of the answer's text."""
        self._fed.append(piece)
        shown = self._text.feed(piece)
        if shown:
            self._said.append(shown)
        return shown

    def reasoning(self, delta: ReasoningDelta) -> list[ReasoningDelta]:
        """What may be shown of a streamed piece of thinking (a new part ends the parts before it)."""
        thinking = self._thinking
        open_part = thinking.get(delta.part)
        out: list[ReasoningDelta] = []
        if open_part is None or len(thinking) > 1:
            out = [piece for part in list(thinking) if part != delta.part for piece in self._close(part)]
            if open_part is None:
                open_part = thinking[delta.part] = (HeldText(self._forms), delta.provider)
        text = open_part[0].feed(delta.text)
        if text == delta.text:
            out.append(delta)  # nothing held back or masked: the piece as it came
        elif text:
            out.append(ReasoningDelta(text, part=delta.part, provider=delta.provider))
        return out

    def thinking_left(self) -> list[ReasoningDelta]:
        """The thinking held back, when the stream ends (or fails)."""
        return [piece for part in list(self._thinking) for piece in self._close(part)]

    def text_left(self) -> str:
        """The answer's text held back, when the stream fails (what the failure's log keeps)."""
        left = self._text.flush()
        if left:
            self._said.append(left)
        return left

    def _close(self, part: int) -> list[ReasoningDelta]:
        held, provider = self._thinking.pop(part)
        text = held.flush()
        return [ReasoningDelta(text, part=part, provider=provider)] if text else []

    def response(self, result: ModelResponse) -> ModelResponse:
        """The whole answer masked; its text as the streamed pieces showed it, and the rest the stream held."""
        forms = self._forms
        if not self._text.holding and not self._thinking and self._said == self._fed and forms.untouched(result):
            return result  # what nearly every answer is: nothing held back, nothing masked, nothing to mask
        content = result.content
        if content:
            fed = "".join(self._fed)
            if content.startswith(fed):
                content = "".join(self._said) + self._text.feed(content[len(fed) :]) + self._text.flush()
            else:  # a reader that put the text together otherwise: masked whole
                content = forms.whole(content)
        reasoning = [_masked_reasoning(piece, forms) for piece in result.reasoning]
        tool_calls = result.tool_calls
        if tool_calls and forms.encoded_pairs.search(_encode(tool_calls)) is not None:
            tool_calls = [_masked_call(call, forms) for call in tool_calls]
        changed = (
            content != result.content
            or any(new is not old for new, old in zip(reasoning, result.reasoning, strict=True))
            or any(new is not old for new, old in zip(tool_calls, result.tool_calls, strict=True))
        )
        model = _masked_optional(result.model, forms)
        response_model = _masked_optional(result.response_model, forms)
        if not changed and model == result.model and response_model == result.response_model:
            return result
        return msgspec.structs.replace(
            result,
            content=content,
            reasoning=reasoning,
            tool_calls=tool_calls,
            model=model,
            response_model=response_model,
        )


def _masked_optional(text: str | None, forms: Forms) -> str | None:
    return text if text is None else forms.whole(text)


def _masked_reasoning(piece: Reasoning, forms: Forms) -> Reasoning:
    text = forms.whole(piece.text)
    redacted = piece.redacted if piece.redacted is None else forms.opaque(piece.redacted)
    ident = _masked_optional(piece.id, forms)
    signature = piece.signature if piece.signature is None else forms.opaque(piece.signature)
    if text == piece.text and redacted == piece.redacted and ident == piece.id and signature == piece.signature:
        return piece
    if text != piece.text and piece.signature is not None:
        # Its text no longer matches the signature: kept to read, never sent back (see the module docstring).
        signature = None
        if piece.provider == OPENROUTER:
            redacted = None
    return msgspec.structs.replace(piece, text=text, redacted=redacted, id=ident, signature=signature)


def _masked_call(call: ToolCall, forms: Forms) -> ToolCall:
    arguments = _masked_value(call.arguments, forms)
    raw = _masked_optional(call.raw_arguments, forms)
    ident, name = forms.whole(call.id), forms.whole(call.name)
    if arguments is call.arguments and raw == call.raw_arguments and ident == call.id and name == call.name:
        return call
    return ToolCall(id=ident, name=name, arguments=arguments, raw_arguments=raw)


def _masked_value(value: Any, forms: Forms) -> Any:
    """A JSON value with its strings (keys too) masked; the same object when nothing was."""
    if isinstance(value, str):
        masked = forms.whole(value)
        return value if masked == value else masked
    if isinstance(value, dict):
        items = [(_masked_value(key, forms), _masked_value(item, forms)) for key, item in value.items()]
        if all(new[0] is old[0] and new[1] is old[1] for new, old in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list):
        masked_items = [_masked_value(item, forms) for item in value]
        if all(new is old for new, old in zip(masked_items, value, strict=True)):
            return value
        return masked_items
    return value
