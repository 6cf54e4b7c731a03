"""``bytes`` in a tool's result are sent as their text when they are UTF-8, and otherwise as ``"base64:"`` and their
base64 — a result, not an error (before, any bytes that were not UTF-8, even nested in a dict, made the error result
"returned a value that cannot be encoded: UnicodeDecodeError")."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pydantic
import pytest

from threadline import ToolMessage, llm
from threadline.testing import ScriptedModel

from ._support import call, calls

PNG = b"\x89PNG\r\n\x1a\n\x00\xff"
MARKED = "base64:" + base64.b64encode(PNG).decode()


@dataclasses.dataclass
class Capture:
    label: str
    data: bytes


class Thumbnail(pydantic.BaseModel):
    name: bytes
    data: bytes


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (PNG, MARKED),
        ({"out": PNG, "note": b"plain text"}, {"out": MARKED, "note": "plain text"}),
        ([b"ok", PNG], ["ok", MARKED]),
        (Capture("screen", PNG), {"label": "screen", "data": MARKED}),
        (Thumbnail(name=b"dot.png", data=PNG), {"name": "dot.png", "data": MARKED}),
    ],
    ids=["bytes", "dict", "list", "dataclass", "pydantic"],
)
def test_bytes_that_are_not_utf8_are_sent_as_marked_base64(value: Any, expected: Any) -> None:
    def capture() -> Any:
        return value

    model = ScriptedModel([calls(call("capture")), "done"])
    conversation = llm.model(model).tools(capture).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    (result,) = [message for message in conversation.messages if isinstance(message, ToolMessage)]
    assert not result.is_error, result.content
    assert json.loads(result.content) == expected
    assert model.requests[1].messages[-1].content == result.content
    conversation.messages.validate()


def test_utf8_bytes_are_still_sent_as_their_text() -> None:
    def read() -> bytes:
        return "café".encode()

    model = ScriptedModel([calls(call("read")), "done"])
    conversation = llm.model(model).tools(read).request("go").prompt_conversation()
    conversation.continuation.prompt()
    assert json.loads(conversation.messages[2].content) == "café"
