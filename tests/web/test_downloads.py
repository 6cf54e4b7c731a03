"""Downloads whatever their names (over real HTTP, and in a real browser): a tool output named ``工具``, exports of a
conversation whose id and title are not ASCII, and names with quotes, backslashes, line breaks, slashes, control
and right-to-left characters are each answered 200 with a ``Content-Disposition`` a browser reads: an ASCII
``filename=`` and the name itself as ``filename*=UTF-8''…`` (before: HTTP 500, the header was not latin-1)."""

from __future__ import annotations

import httpx
import pytest

from tests.web._disposition import parse, problems
from threadline import AssistantMessage, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel

HOSTILE_NAMES = [
    "工具",
    'say "hi"',
    "back\\slash",
    "line\r\nbreak",
    "../../etc/passwd",
    "nul\x00bell\x07del\x7f",
    "invoice\u202etxt.exe",
    "zero\u200bwidth",
    "😀 emoji",
    "Ünïcödé café",
    ".hidden",
    "x" * 400,
]


def tool_conversation(store, name: str, output: str, call_id: str = "c1", **created: str):
    conv = store.create_conversation(created.get("title", "Tools"), id=created.get("id"))
    call = ToolCall(id=call_id, name=name, arguments={})
    store.append(
        conv.id,
        [
            UserMessage(content="Run it"),
            AssistantMessage(tool_calls=[call], model="m"),
            ToolMessage(tool_call_id=call_id, tool_name=name, content=output, duration_ms=1.0),
            AssistantMessage(content="Done.", model="m"),
        ],
    )
    return conv, store.load(conv.id)[2].id


def test_a_tool_output_named_in_chinese_downloads_under_its_name(sqlite_store, serve) -> None:
    conv, result_id = tool_conversation(sqlite_store, "工具", "输出 output")
    served = serve(sqlite_store, model=ScriptedModel([]))
    answer = httpx.get(f"{served.url}/c/{conv.id}/full/{result_id}", params={"download": 1}, timeout=20)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.text == "输出 output"
    disposition = parse(answer.headers["content-disposition"])
    assert disposition.kind == "attachment"
    assert disposition.saved_as == "工具-c1.txt"
    assert disposition.filename is not None and disposition.filename.isascii()
    assert disposition.filename.endswith("-c1.txt")


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_odd_tool_names_download_under_a_safe_name(sqlite_store, serve, name: str) -> None:
    conv, result_id = tool_conversation(sqlite_store, name, "the output", call_id='id/"\\1')
    served = serve(sqlite_store, model=ScriptedModel([]))
    answer = httpx.get(f"{served.url}/c/{conv.id}/full/{result_id}", params={"download": 1}, timeout=20)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.text == "the output"
    disposition = parse(answer.headers["content-disposition"])
    for saved in (disposition.saved_as, disposition.filename):
        assert saved is not None and saved.endswith(".txt")
        assert problems(saved) == [], (saved, problems(saved))
    # The letters of the name are kept (the first 50 of a long word): the reader recognises the file.
    letters = [word for word in name.replace("\u202e", " ").split() if word.isalpha()]
    for word in letters:
        assert word[:50] in disposition.saved_as


def test_exports_of_a_conversation_with_a_non_ascii_id_and_title(sqlite_store, serve) -> None:
    conv, _ = tool_conversation(sqlite_store, "工具", "out", id="会话-1", title='Ré "sumé" \\ 日本\r\n')
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=20) as http:
        for extension in ("json", "html"):
            answer = http.get(f"/c/{conv.id}/export.{extension}")
            assert answer.status_code == 200, answer.text[:300]
            disposition = parse(answer.headers["content-disposition"])
            assert disposition.saved_as == f"会话-1.{extension}"
            assert disposition.filename is not None and disposition.filename.isascii()
        assert "输出" not in http.get(f"/c/{conv.id}/export.json").text
        assert "Done." in http.get(f"/c/{conv.id}/export.html").text


def test_the_browser_saves_the_download_under_its_unicode_name(sqlite_store, serve, page, tmp_path) -> None:
    output = "工具的输出\n" * 5_000  # long enough to be cut, so the timeline offers its download
    conv, _ = tool_conversation(sqlite_store, "工具", output, call_id="call-1", id="会话-1")
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    page.locator("#call-call-1 summary").click()
    with page.expect_download() as download:
        page.locator("#call-call-1 .cut a", has_text="Download").click()
    assert download.value.suggested_filename == "工具-call-1.txt"
    saved = tmp_path / "saved.txt"
    download.value.save_as(saved)
    assert saved.read_text(encoding="utf-8") == output

    with page.expect_download() as export:
        page.locator("a", has_text="Export JSON").click()
    assert export.value.suggested_filename == "会话-1.json"
