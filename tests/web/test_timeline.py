"""How the viewer turns a log into timeline items: tool calls grouped with their results, failures, badges,
UI-only messages, generated pages, long texts cut."""

from __future__ import annotations

import json

from threadline import AssistantMessage, LLMError, MessageMeta, ToolCall, ToolMessage, UserMessage
from threadline.web.timeline import TEXT_LIMIT, build_items, format_duration, page_id_of


def test_tool_results_join_the_group_of_their_call() -> None:
    calls = [ToolCall(id="a", name="first", arguments={"q": "x" * 200}), ToolCall(id="b", name="second")]
    log = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=calls, model="m"),
        ToolMessage(tool_call_id="a", tool_name="first", content="one", duration_ms=1_500),
        ToolMessage(tool_call_id="b", tool_name="second", content="bad", is_error=True),
        AssistantMessage(content="done"),
    ]
    items = build_items(log, list(range(5)))
    assert [item.kind for item in items] == ["user", "assistant", "assistant"]
    first, second = items[1].tools
    assert (first.state, first.output, first.duration) == ("ok", "one", "1.5 s")
    assert len(first.preview) <= 90 and first.preview.endswith("…")
    assert json.loads(first.arguments) == {"q": "x" * 200}
    assert (second.state, second.output) == ("error", "bad")


def test_a_result_without_its_call_on_the_page_stands_alone_and_pending_calls_show_pending() -> None:
    items = build_items([ToolMessage(tool_call_id="z", tool_name="late", content="ok")], [7])
    assert items[0].kind == "tool" and items[0].standalone is not None
    assert (items[0].standalone.call_id, items[0].standalone.state) == ("z", "ok")
    pending = build_items([AssistantMessage(tool_calls=[ToolCall(id="p", name="slow")])], [0])[0].tools[0]
    assert (pending.state, pending.output) == ("pending", None)


def test_failures_badges_ui_only_and_long_text() -> None:
    meta = MessageMeta(mode="run", run_id="r1", node_id="n2", include_in_context=False)
    log = [
        AssistantMessage(content="part", error=LLMError(type="timeout", message="slow", retryable=True)),
        UserMessage(content="y" * (TEXT_LIMIT + 5), meta=meta),
    ]
    failure, note = build_items(log, [0, 1])
    assert failure.kind == "failure" and failure.error is not None and failure.error.type == "timeout"
    assert failure.text == "part"
    assert note.badges == [("mode", "run"), ("run", "r1"), ("node", "n2")]
    assert note.ui_only and note.cut == 5 and len(note.text or "") == TEXT_LIMIT


def test_generated_pages_are_found_in_tool_results() -> None:
    made = {"success": True, "url": "/p/abc", "page_id": "01ABC", "generated_code": {"html": "<p>"}}
    assert page_id_of(ToolMessage(tool_call_id="c", tool_name="Pages.generate_ui", content=json.dumps(made))) == "01ABC"
    refused = {"success": False, "error": "too long", "page_id": "01ABC"}
    assert page_id_of(ToolMessage(tool_call_id="c", tool_name="x", content=json.dumps(refused))) is None
    hostile = {"page_id": "../../c/x?y=<script>"}
    assert page_id_of(ToolMessage(tool_call_id="c", tool_name="x", content=json.dumps(hostile))) is None
    assert (
        page_id_of(ToolMessage(tool_call_id="c", tool_name="x", content='{"page_id": "01ABC"', is_error=False)) is None
    )


def test_durations_read_naturally() -> None:
    assert [format_duration(v) for v in (None, 12.4, 2_400, 185_000)] == [None, "12 ms", "2.4 s", "3 min 5 s"]
