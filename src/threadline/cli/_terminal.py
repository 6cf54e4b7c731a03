"""Text that came from a model, a tool, a server or a file, made safe to print on a terminal.

Such text may hold control characters: ``ESC [31m`` (colours that leak into the rest of the screen), OSC 0 (a new
window title), OSC 52 (a write to the clipboard), a carriage return that overwrites what the line said, C1 controls
that some terminals read as ESC. It may also hold invisible format characters that reorder what the terminal shows:
the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and marks (U+200E, U+200F,
U+061C), with which a line reads reversed from some point on ("Trojan Source"), and the line and paragraph
separators (U+2028, U+2029) and the zero-width no-break space (U+FEFF), which a terminal shows as nothing or breaks
on. The CLI shows every such character other than newline and tab as a visible escape (``\\x1b``, ``\\u202e``), so a
reader sees what was sent and the terminal obeys none of it; printable text, in any script, is left as it is. A
``\\r\\n`` line end is a newline.

rich strips a few controls itself (BEL, BS, VT, FF, CR) and none of the rest, so every path that prints such text
goes through `visible` (or, for streamed pieces, `VisibleStream`); JSON output goes through `visible_json`.
"""

from __future__ import annotations

import re

__all__ = ["VisibleStream", "visible", "visible_json"]

# The format characters that change how a line reads or breaks: the Arabic letter mark, the left-to-right and
# right-to-left marks, the line and paragraph separators, the bidi embeddings and overrides, the bidi isolates, and
# the zero-width no-break space (a byte order mark).
_FORMAT = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
# C0 controls except tab (\x09) and newline (\x0a), DEL, the C1 controls (\x9b is a one-character CSI), and those.
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")
# What JSON text may still hold raw: encoders escape C0 controls in strings but not DEL, C1 and the format characters.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab, and every format character that reorders or breaks
    a line, shown as an escape (``ESC`` as ``\\x1b``, U+202E as ``\\u202e``)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def visible_json(text: str) -> str:
    """JSON text with DEL, the C1 controls and the format characters `visible` escapes written as ``\\u`` escapes:
    the same JSON value, nothing a terminal obeys (JSON encoders escape the C0 controls already)."""
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
