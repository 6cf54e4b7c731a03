"""The boxes of `threadline.cli._render` drawn as plain text, line by line, the way rich draws their panels when
the output carries no styles (a pipe, a file: ``logs show --all > log.txt``), several times faster: rich's layout
machinery costs most of a millisecond per box, which made a log of 100,000 messages take a minute and a half.

Only the geometry is drawn here (the border, the title cut to fit, one space of padding each side); text that does
not fit on its lines is wrapped by rich's own `Text.wrap`, so lines break where rich breaks them
(``tests/cli/test_plain_boxes.py`` checks that the two drawings agree, character for character).
"""

from __future__ import annotations

from functools import lru_cache

from rich.box import ROUNDED
from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.text import Text

from ._render import Box

__all__ = ["MIN_WIDTH", "PlainBoxes"]

MIN_WIDTH = 20
"""The narrowest console drawn here (a box holds a box holds text: 12 columns are left for it); narrower ones are
drawn by rich."""


class PlainBoxes:
    """Draws boxes for one console, at its width (read once: rich looks it up anew at every print).

    Args:
        console: The console the lines are for: its width, its tab size, and whether its encoding shows the rounded
            box (else rich draws an ASCII one, and so does this).
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.width = console.width
        self.frame = ROUNDED.substitute(console.options, safe=console.safe_box)

    def draw(self, box: Box) -> str:
        """The lines of ``box``, each ending with a newline, as rich prints its panel."""
        return "".join(f"{line}\n" for line in self._lines(box, self.width))

    def _lines(self, box: Box, width: int) -> list[str]:
        frame = self.frame
        inner = width - 4  # the border and a space of padding each side
        left, right = f"{frame.mid_left} ", f" {frame.mid_right}"
        lines = [self._top(box.title, width)]
        for part in box.parts:
            body = self._lines(part, inner) if isinstance(part, Box) else self._text_lines(part, inner)
            lines.extend(f"{left}{line}{right}" for line in body)
        lines.append(frame.get_bottom([width - 2]))
        return lines

    def _top(self, title: str | Text, width: int) -> str:
        """The top border with the title at its left, as `rich.panel.Panel` makes it."""
        plain = _title(title) if isinstance(title, str) else title.plain
        if "\n" in plain or "\t" in plain or cell_len(plain) + 2 > width - 4:
            text = Text(plain)
            text.plain = plain.replace("\n", " ")
            text.expand_tabs()
            text.pad(1)
            text.truncate(width - 4)
            shown = text.plain
        else:
            shown = f" {plain} "
        top = self.frame.top
        return f"{self.frame.top_left}{top}{shown}{top * (width - 4 - cell_len(shown))}{top}{self.frame.top_right}"

    def _text_lines(self, text: Text, width: int) -> list[str]:
        """The lines of a text at ``width``, padded to it, as rich renders a `Text` (wrapped, folding words longer
        than a line)."""
        plain = text.plain
        pieces = plain.split("\n")
        if "\t" not in plain and all(cell_len(piece) <= width for piece in pieces):
            return [set_cell_size(piece, width) for piece in pieces]  # nothing to wrap: the common case, kept quick
        tab_size = self.console.tab_size if text.tab_size is None else text.tab_size
        wrapped = text.wrap(
            self.console,
            width,
            justify=text.justify or "default",
            overflow=text.overflow or "fold",
            tab_size=tab_size or 8,
            no_wrap=bool(text.no_wrap),
        )
        return [set_cell_size(line.plain, width) for line in wrapped]


@lru_cache(maxsize=64)
def _title(title: str) -> str:
    """A title given as a string, as rich reads it (as markup); the boxes have a few fixed ones."""
    return Text.from_markup(title).plain
