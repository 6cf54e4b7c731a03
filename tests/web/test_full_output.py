"""Long tool outputs and artifacts in a real browser: a cut output links to the whole of it (paged when huge) and to a
download; the context view links each ``artifact://`` URI to the artifact, shown in full and downloadable."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from threadline import AssistantMessage, ToolCall, ToolMessage, UserMessage
from threadline.testing import ScriptedModel


def long_output(size: int, end: str = "END-OF-OUTPUT") -> str:
    """``size`` characters of numbered lines (each line says where it starts), ending with ``end``."""
    lines, length = [], 0
    while length < size - len(end):
        line = f"line starting at character {length:,} <b>not bold</b>\n"
        lines.append(line)
        length += len(line)
    text = "".join(lines)[: size - len(end)] + end
    assert len(text) == size
    return text


def tool_log(store, output: str, call_id: str = "read-1"):
    conv = store.create_conversation("Reading a big file")
    call = ToolCall(id=call_id, name="read_file", arguments={"path": "big.log"})
    store.append(
        conv.id,
        [
            UserMessage(content="Read big.log"),
            AssistantMessage(tool_calls=[call], model="m"),
            ToolMessage(tool_call_id=call_id, tool_name="read_file", content=output, duration_ms=42.0),
            AssistantMessage(content="It is long.", model="m"),
        ],
    )
    return conv


def test_a_cut_output_links_to_all_of_it_and_to_a_download(sqlite_store, serve, page, tmp_path):
    output = long_output(83_889)
    conv = tool_log(sqlite_store, output)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    page.locator("#call-read-1 summary").click()
    cut = page.locator("#call-read-1 .cut")
    expect(cut).to_contain_text("63,889 more characters not shown")

    with page.expect_download() as download:
        cut.locator("a", has_text="Download").click()
    saved = tmp_path / "output.txt"
    download.value.save_as(saved)
    assert saved.read_text(encoding="utf-8") == output
    assert download.value.suggested_filename.endswith(".txt")

    cut.locator("a", has_text="Show all 83,889 characters").click()
    expect(page.locator("h1")).to_contain_text("read_file")
    body = page.locator("pre.full-text")
    expect(body).to_contain_text("END-OF-OUTPUT")
    assert body.inner_text() == output  # every character, markup shown as text
    assert page.dialogs == []


def test_a_huge_output_is_shown_in_parts(sqlite_store, serve, page):
    output = long_output(450_000, end="THE-VERY-END")
    conv = tool_log(sqlite_store, output)
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}")
    page.locator("#call-read-1 summary").click()
    page.locator("#call-read-1 .cut a", has_text="Show all").click()
    expect(page.locator(".part-facts")).to_contain_text("characters 1–200,000 of 450,000")
    page.wait_for_load_state("load")  # the part is streamed: its facts line shows before all its text has arrived
    first = page.locator("pre.full-text").inner_text()
    assert first == output[:200_000]
    page.click("text=Next part")
    expect(page.locator(".part-facts")).to_contain_text("characters 200,001–400,000 of 450,000")
    page.click("text=Next part")
    expect(page.locator(".part-facts")).to_contain_text("characters 400,001–450,000 of 450,000")
    page.wait_for_load_state("load")
    assert page.locator("pre.full-text").inner_text() == output[400_000:]
    expect(page.locator("text=Next part")).to_have_count(0)
    page.click("text=Previous part")
    expect(page.locator(".part-facts")).to_contain_text("characters 200,001–400,000")


def test_the_context_view_links_artifacts_to_their_full_text(sqlite_store, serve, page, tmp_path):
    output = long_output(9_000, end="ARTIFACT-END")
    conv = tool_log(sqlite_store, output, call_id="call_big")
    served = serve(sqlite_store, model=ScriptedModel([]))
    page.goto(f"{served.url}/c/{conv.id}/context")
    uri = f"artifact://{conv.id}/call_big"
    link = page.locator(".report a", has_text=uri)
    expect(link).to_have_count(1)
    expect(page.locator(".request a", has_text=uri)).to_have_count(1)  # in the preview the request carries, too

    link.click()
    expect(page.locator("h1")).to_contain_text("call_big")
    expect(page.locator("pre.full-text")).to_contain_text("ARTIFACT-END")
    assert page.locator("pre.full-text").inner_text() == output
    with page.expect_download() as download:
        page.click("text=Download")
    saved = tmp_path / "artifact.txt"
    download.value.save_as(saved)
    assert saved.read_text(encoding="utf-8") == output


def test_only_this_conversations_artifacts_and_messages_are_served(sqlite_store, serve):
    conv = tool_log(sqlite_store, long_output(3_000))
    other = sqlite_store.create_conversation("other")
    sqlite_store.save_artifact(other.id, "secret", "another conversation's output")
    served = serve(sqlite_store, model=ScriptedModel([]))
    with httpx.Client(base_url=served.url, timeout=20) as http:
        assert http.get(f"/c/{other.id}/artifacts/secret").status_code == 200
        for path in (
            f"/c/{conv.id}/artifacts/secret",  # not this conversation's
            f"/c/{conv.id}/artifacts/%2E%2E",  # ".." (spelled so the client sends it as it is)
            f"/c/{conv.id}/artifacts/%2E%2E%2Fsecret",
            f"/c/{conv.id}/full/no-such-message",
            f"/c/{other.id}/full/{sqlite_store.load(conv.id)[2].id}",  # a message of another conversation
        ):
            refused = http.get(path)
            assert refused.status_code == 404, path
            assert "another conversation" not in refused.text
        output_id = sqlite_store.load(conv.id)[2].id
        bad_part = http.get(f"/c/{conv.id}/full/{output_id}", params={"part": "x"})
        assert bad_part.status_code == 400 and "part must be an integer" in bad_part.text
        assert http.get(f"/c/{conv.id}/full/{output_id}", params={"part": 9}).status_code == 404


def test_the_export_holds_every_character_and_links_nowhere(sqlite_store, serve, page, tmp_path):
    """The export is a file read away from the viewer: before, it cut a 55,000-character output at 20,000 ("35,000
    more characters not shown", with nothing to fetch the rest), and its fork links pointed at /c/<id>, which from
    a file is file:///c/<id>."""
    output = long_output(55_000)
    conv = tool_log(sqlite_store, output)
    fork = sqlite_store.fork_conversation(conv.id, sqlite_store.load(conv.id)[0].id)
    served = serve(sqlite_store, model=ScriptedModel([]))
    exported = httpx.get(f"{served.url}/c/{conv.id}/export.html").text
    assert "more characters not shown" not in exported
    path = tmp_path / "export.html"
    path.write_text(exported, encoding="utf-8")
    page.goto(path.as_uri())
    group = page.locator("details.tool").first
    group.locator("summary").click()
    shown = group.locator(".tool-output").inner_text()
    assert shown.rstrip("\n") == output.rstrip("\n")
    assert page.locator("a[href^='/']").count() == 0
    expect(page.locator(".fork-link")).to_contain_text(fork.id)


def test_show_all_names_the_message_with_the_right_article(sqlite_store, serve, page):
    conv = sqlite_store.create_conversation("Long texts")
    sqlite_store.append(
        conv.id,
        [UserMessage(content="u" * 25_000), AssistantMessage(content="a" * 25_000, model="m")],
    )
    served = serve(sqlite_store, model=ScriptedModel([]))
    headings = []
    for index in range(2):
        page.goto(f"{served.url}/c/{conv.id}")
        page.locator("#items > .msg").nth(index).locator(".cut a", has_text="Show all").click()
        expect(page.locator("h1")).to_contain_text("Text of")
        headings.append((page.locator("h1").inner_text(), page.title()))
    assert headings == [
        ("Text of a user message", "Text of a user message · threadline"),
        ("Text of an assistant message", "Text of an assistant message · threadline"),
    ]
