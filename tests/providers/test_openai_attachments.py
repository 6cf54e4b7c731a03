"""File attachments on OpenAI's two APIs, against the fake servers over real HTTP on 127.0.0.1: each is sent in the
API's documented file shape (OpenAI's file-inputs guide), and one the API cannot take is refused before anything
is sent, never dropped."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from threadline import Attachment, Conversation, MessageList, llm
from threadline.errors import UserError
from threadline.messages import UserMessage

from .conftest import make_openai, make_responses
from .servers import FakeOpenAI, FakeResponses

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PDF_URL = "data:application/pdf;base64," + base64.b64encode(PDF).decode()


def report() -> Attachment:
    return Attachment("file", data=PDF, media_type="application/pdf", name="report.pdf")


async def ask(model: Any, *attachments: Attachment) -> str:
    conversation = Conversation()
    conversation.add(UserMessage(content="Summarize the report.", attachments=list(attachments)))
    try:
        return await conversation.continuation.model(model).prompt_async()
    finally:
        await model.aclose()


async def test_the_responses_api_gets_an_input_file(responses_server: FakeResponses, tmp_path: Any) -> None:
    path = tmp_path / "notes.csv"
    path.write_text("city,temp\nParis,22\n")
    responses_server.reply("It says 22 C.")
    csv = Attachment("file", path=str(path))
    assert await ask(make_responses(responses_server), report(), csv) == "It says 22 C."
    (message,) = responses_server.bodies[0]["input"]
    assert message["content"] == [
        {"type": "input_text", "text": "Summarize the report."},
        {"type": "input_file", "filename": "report.pdf", "file_data": PDF_URL},
        {
            "type": "input_file",
            "filename": "notes.csv",
            "file_data": "data:text/csv;base64," + base64.b64encode(path.read_bytes()).decode(),
        },
    ]


async def test_chat_completions_gets_a_file_part(openai_server: FakeOpenAI) -> None:
    openai_server.reply("It says 22 C.")
    assert await ask(make_openai(openai_server), report()) == "It says 22 C."
    message = openai_server.bodies[0]["messages"][-1]
    assert message["content"] == [
        {"type": "text", "text": "Summarize the report."},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": PDF_URL}},
    ]


def without_data() -> Attachment:
    # Read back from a log: the path is a record only, never read.
    log = MessageList.from_dict(
        {
            "version": "2.1",
            "messages": [
                {"role": "user", "content": "hi", "attachments": [{"kind": "file", "path": "/etc/passwd.pdf"}]}
            ],
        }
    )
    return log[0].attachments[0]  # type: ignore[union-attr]


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize(
    ("attachment", "says"),
    [
        (without_data, "has no data, only the path"),
        (lambda: Attachment("file", data=b"PK\x03\x04", media_type="application/zip", name="a.zip"), "application/zip"),
        (lambda: Attachment("file", data=b"abc", name="blob"), "has no media type"),
        (lambda: Attachment("file", data=b"\x89PNG", media_type="image/png", name="a.png"), "Attachment.image"),
    ],
)
async def test_a_file_the_api_cannot_take_is_refused_before_anything_is_sent(
    responses_server: FakeResponses, openai_server: FakeOpenAI, api: str, attachment: Any, says: str
) -> None:
    server: Any = responses_server if api == "responses" else openai_server
    model = make_responses(server) if api == "responses" else make_openai(server)
    with pytest.raises(UserError, match="file attachment") as info:
        await ask(model, attachment())
    assert says in str(info.value)
    assert server.count == 0


async def test_chat_completions_takes_only_pdf_files(openai_server: FakeOpenAI) -> None:
    text = Attachment("file", data=b"hello", media_type="text/plain", name="notes.txt")
    with pytest.raises(UserError, match="only PDF files") as info:
        await ask(make_openai(openai_server), text)
    assert "openai-responses:" in str(info.value) and openai_server.count == 0


def test_llm_builder_attachments_reach_the_responses_api(responses_server: FakeResponses) -> None:
    responses_server.reply("ok")
    model = make_responses(responses_server)
    try:
        assert llm.model(model).request("Read it", attachments=[report()]).prompt() == "ok"
    finally:
        model.close_soon()
    assert responses_server.bodies[0]["input"][0]["content"][1]["type"] == "input_file"
