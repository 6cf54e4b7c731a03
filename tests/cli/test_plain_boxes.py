"""The plain drawing of a message's box (`threadline.cli._plain_boxes`, what ``logs show`` prints when its output
carries no styles, several times faster than rich) is, character for character, what rich prints for the same box:
for every kind of message and every width, with text that wraps, folds, holds tabs, wide characters, blank lines,
markup-like brackets and control characters, and with the ASCII box of a terminal that cannot show the rounded one.
"""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from threadline import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from threadline.attachments import Attachment
from threadline.cli._plain_boxes import MIN_WIDTH, PlainBoxes
from threadline.cli._render import message_box, panel
from threadline.messages import LLMError, Message, Reasoning

PIECES = [
    "word",
    "a",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "x" * 37,
    "long-word-without-any-space-" * 4,
    "漢字",
    "日本語のテキスト",
    "🙂",
    "👩‍👩‍👧",
    "e\u0301",
    "[bold]not markup[/bold]",
    "\x1b[31mred\x1b[0m",
    "\r",
    "·",
    "end. ",
]


class AsciiFile(io.StringIO):
    """A console file whose encoding cannot show the rounded box (rich draws an ASCII one)."""

    encoding = "ascii"


def text(rng: random.Random, most: int = 30) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, most)))


def messages(rng: random.Random) -> list[tuple[Message, dict[str, ToolMessage]]]:
    call = ToolCall(id="c1", name=text(rng, 3) or "lookup", arguments={"q": text(rng, 5), "n": [1, 2.5, None]})
    raw = ToolCall(id="c2", name="broken", arguments={}, raw_arguments=text(rng, 8))
    result = ToolMessage(tool_call_id="c1", tool_name=call.name, content=text(rng, 60), duration_ms=rng.random() * 900)
    failed = ToolMessage(tool_call_id="c2", tool_name="broken", content=text(rng), is_error=True)
    thinking = [
        Reasoning(text=text(rng, 10), provider="anthropic"),
        Reasoning(redacted="abc"),
        Reasoning(signature="s"),
    ]
    error = LLMError(type="rate_limit", message=text(rng, 8), retryable=True)
    attachment = Attachment(kind="image", name=text(rng, 3) or "cat.png", media_type="image/png")
    return [
        (UserMessage(content=text(rng)), {}),
        (UserMessage(content=text(rng, 5), attachments=[attachment]), {}),
        (SystemMessage(content=text(rng, 200)), {}),
        (result, {}),
        (failed, {}),
        (AssistantMessage(content=text(rng), model=text(rng, 3) or None), {}),
        (AssistantMessage(content=text(rng), tool_calls=[call, raw]), {"c1": result, "c2": failed}),
        (AssistantMessage(tool_calls=[call]), {}),
        (AssistantMessage(content=text(rng, 6), reasoning=thinking, tool_calls=[call]), {"c1": result}),
        (AssistantMessage(content=text(rng, 4), error=error), {}),
        (AssistantMessage(content="", error=error, reasoning=thinking[:1]), {}),
        (AssistantMessage(content=""), {}),
    ]


def drawn_by_rich(console: Console, message: Message, results: dict[str, ToolMessage], reasoning: bool) -> str:
    console.print(panel(message_box(message, results, show_reasoning=reasoning)))
    file = console.file
    assert isinstance(file, io.StringIO)
    out = file.getvalue()
    file.seek(0)
    file.truncate()
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_plain_drawing_is_what_rich_draws(seed: int) -> None:
    rng = random.Random(seed)
    width = rng.choice([MIN_WIDTH, MIN_WIDTH + 1, 33, 57, 80, 121, 200])
    file = AsciiFile() if seed % 5 == 0 else io.StringIO()
    console = Console(file=file, width=width, color_system=None)
    assert console.color_system is None
    plain = PlainBoxes(console)
    for message, results in messages(rng):
        for reasoning in (False, True):
            box = message_box(message, results, show_reasoning=reasoning)
            assert plain.draw(box) == drawn_by_rich(console, message, results, reasoning), (width, message)
