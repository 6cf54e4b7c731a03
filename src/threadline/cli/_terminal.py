"""Text that came from a model, a tool, a server or a file, made safe to print on a terminal.

Such text may hold control characters: ``ESC [31m`` (colours that leak into the rest of the screen), OSC 0 (a new
window title), OSC 52 (a write to the clipboard), a carriage return that overwrites what the line said, C1 controls
that some terminals read as ESC. The CLI shows every control character other than newline and tab as a visible
escape (``\\x1b``), so a reader sees what was sent and the terminal obeys none of it; printable text, in any script,
is left as it is. A ``\\r\\n`` line end is a newline.

rich strips a few controls itself (BEL, BS, VT, FF, CR) and none of the rest, so every path that prints such text
goes through `visible` (or, for streamed pieces, `VisibleStream`); JSON output goes through `visible_json`.
"""

from __future__ import annotations

import re

__all__ = ["VisibleStream", "visible", "visible_json"]

# C0 controls except tab (\x09) and newline (\x0a), DEL, and the C1 controls (\x9b is a one-character CSI).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What JSON text may still hold raw: encoders escape C0 controls in strings but not DEL and C1.
_JSON_RAW = re.compile("[\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape (``ESC`` as ``\\x1b``)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def visible_json(text: str) -> str:
    """JSON text with DEL and the C1 controls written as ``\\u`` escapes: the same JSON value, nothing a terminal
    obeys (JSON encoders escape the C0 controls already)."""
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


class VisibleStream:
    """`visible` for text that arrives in pieces: a ``\\r`` at the end of a piece waits for the next one, so a
    ``\\r\\n`` split between two pieces is still a newline."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The part of ``piece`` (after what was held) that can be shown now, made visible."""
        text = self._held + piece
        self._held = ""
        if text.endswith("\r"):
            text, self._held = text[:-1], "\r"
        return visible(text)

    def flush(self) -> str:
        """What is still held (a lone ``\\r`` at the very end), made visible."""
        text, self._held = self._held, ""
        return visible(text)
