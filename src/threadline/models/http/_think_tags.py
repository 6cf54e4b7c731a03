"""Thinking written inside the answer's text as ``<think>…</think>``, told apart from the answer (pure: no I/O).

Reasoning models served without a reasoning parser (vLLM started without ``--reasoning-parser``, llama.cpp's server
with ``--reasoning-format none``, LM Studio, many proxies) put their thinking at the start of ``content``::

    <think>
    The user asks for … so …
    </think>

    Paris.

Read as text, that thinking would be shown and logged as the answer, sent back as if the model had said it, and
break structured output. `ThinkTags` takes a block that opens the text, piece by piece as a stream brings it (a tag
may be split across pieces), and gives back the thinking and the answer apart. Text that does not begin with
``<think>`` (after blank space) is the answer, untouched; a block never closed (an answer cut at its token limit)
is all thinking.
"""

from __future__ import annotations

__all__ = ["ThinkTags", "split_think_tags"]

OPEN = "<think>"
CLOSE = "</think>"


class ThinkTags:
    """Separates a leading ``<think>…</think>`` block from the text fed to it, one piece at a time.

    `feed` returns ``(thinking, text)`` for each piece (either may be empty: a piece that might be the start of a
    tag is held until the next one tells); `end` returns what is still held when the text is complete.
    """

    __slots__ = ("_held", "_opened", "_state")

    def __init__(self) -> None:
        self._state = "start"  # start: nothing but blank space yet; thinking; after: the block closed; text
        self._held = ""
        self._opened = False

    @property
    def opened(self) -> bool:
        """Whether the text began with a thinking block (so far)."""
        return self._opened

    def feed(self, piece: str) -> tuple[str, str]:
        """Take the next piece of the text; return the thinking and the answer text it completes."""
        state = self._state
        if state == "text":
            return "", piece
        held = self._held + piece
        self._held = ""
        if state == "start":
            stripped = held.lstrip()
            if not stripped or (len(stripped) < len(OPEN) and OPEN.startswith(stripped)):
                self._held = held  # blank space, or maybe the start of the tag: wait for more
                return "", ""
            if not stripped.startswith(OPEN):
                self._state = "text"
                return "", held
            self._state = state = "thinking"
            self._opened = True
            held = stripped[len(OPEN) :]
        if state == "thinking":
            close = held.find(CLOSE)
            if close < 0:
                keep = _tag_start(held)
                self._held = held[len(held) - keep :] if keep else ""
                return held[: len(held) - keep], ""
            thought, held = held[:close], held[close + len(CLOSE) :]
            self._state = "after"
            return thought, self._after(held)
        return "", self._after(held)  # after

    def end(self) -> tuple[str, str]:
        """What is still held once the text is complete: a tag's start that never went on is thinking inside an
        open block, and text before anything else."""
        held, self._held = self._held, ""
        if self._state == "thinking":
            return held, ""
        return "", held if self._state != "after" else ""

    def _after(self, text: str) -> str:
        """The answer after the block, without the blank space that separates it from the block."""
        text = text.lstrip()
        if text:
            self._state = "text"
        return text


def _tag_start(text: str) -> int:
    """How many characters at the end of ``text`` could be the start of the closing tag."""
    for size in range(min(len(CLOSE) - 1, len(text)), 0, -1):
        if CLOSE.startswith(text[-size:]):
            return size
    return 0


def split_think_tags(text: str) -> tuple[str | None, str]:
    """A whole text as ``(thinking, answer)``; thinking is None when the text does not begin with a block."""
    tags = ThinkTags()
    thought, answer = tags.feed(text)
    rest_thought, rest_answer = tags.end()
    if not tags.opened:
        return None, text
    return thought + rest_thought, answer + rest_answer
