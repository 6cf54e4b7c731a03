"""The embedded model's prompt and grammar building, checked without generating: what the model is shown for a
log with tools, and that every grammar parses in llama.cpp and reads back exactly."""

from __future__ import annotations

import json

import pytest

from threadline import AssistantMessage, LLMError, SystemMessage, ToolCall, ToolMessage, UserError, user
from threadline.models.base import ModelRequest, ResponseFormat, ToolSpec
from threadline.models.local import LocalModel
from threadline.models.local._grammar import MarkerScanner, answer_grammar, call_grammar, parse_call
from threadline.models.local._prompt import chat_turns, render_chatml, tool_call_text

CONVERT = ToolSpec(
    "Units.celsius_to_fahrenheit",
    "Convert a temperature from degrees Celsius to degrees Fahrenheit.",
    {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]},
)
NOTE = ToolSpec(
    "Notes.add",
    "Add a note.",
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["text"],
        "additionalProperties": False,
    },
)


def log_with_tools() -> list[object]:
    call = ToolCall(id="call_1", name=CONVERT.name, arguments={"celsius": 37})
    return [
        SystemMessage(content="Base rules."),
        SystemMessage(content="You are terse."),
        user("What is 37 C in F?"),
        AssistantMessage(content="Let me check.", tool_calls=[call]),
        ToolMessage(tool_call_id="call_1", tool_name=CONVERT.name, content="37 °C = 98.6 °F"),
        AssistantMessage(content="98.6 °F", error=LLMError(type="timeout", message="cut", retryable=True)),
    ]


def test_turns_merge_leading_system_messages_and_describe_tools() -> None:
    turns = chat_turns(log_with_tools(), [CONVERT])  # type: ignore[arg-type]
    roles = [role for role, _ in turns]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    system_text = turns[0][1]
    assert system_text.startswith("Base rules.\n\nYou are terse.\n\n# Tools")
    assert "- Units.celsius_to_fahrenheit: Convert a temperature" in system_text
    assert '"celsius":{"type":"number"}' in system_text
    assert (
        turns[2][1]
        == 'Let me check.\n<tool_call>{"name": "Units.celsius_to_fahrenheit", "arguments": {"celsius": 37}}</tool_call>'
    )
    assert turns[3][1] == "37 °C = 98.6 °F"
    assert turns[4][1] == "98.6 °F\n[LLM_ERROR type=timeout message=cut]"  # a failure stays visible to the model


def test_results_of_several_calls_name_their_tool_and_errors_say_so() -> None:
    calls = [ToolCall(id="a", name="x", arguments={}), ToolCall(id="b", name="y", arguments={})]
    messages = [
        user("go"),
        AssistantMessage(tool_calls=calls),
        ToolMessage(tool_call_id="a", tool_name="x", content="one"),
        ToolMessage(tool_call_id="b", tool_name="y", content="boom", is_error=True),
    ]
    turns = chat_turns(messages, [])  # type: ignore[arg-type]
    assert turns[-2:] == [("tool", "x: one"), ("tool", "y: Error: boom")]
    as_user = chat_turns(messages, [], tool_role="user")  # type: ignore[arg-type]
    assert as_user[-1] == ("user", "Result of y (b): Error: boom")


def test_structured_output_is_described_in_the_system_turn() -> None:
    turns = chat_turns([user("hi")], [], answer_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    assert turns[0][0] == "system"
    assert 'Reply with only a JSON object that matches this JSON schema: {"type":"object"' in turns[0][1]


def test_chatml_segments_keep_markup_apart_from_content() -> None:
    segments = render_chatml([("user", "hi <|im_end|>")], prefill="<tool_call>")
    assert [s.special for s in segments] == [True, False, True, True, False]
    assert "".join(s.text for s in segments) == (
        "<|im_start|>user\nhi <|im_end|><|im_end|>\n<|im_start|>assistant\n<tool_call>"
    )


def test_tool_call_text_keeps_raw_arguments() -> None:
    broken = ToolCall(id="c", name="f", arguments={}, raw_arguments='{"a": ')
    assert tool_call_text(broken) == '<tool_call>{"name": "f", "arguments": {"a": }</tool_call>'


@pytest.mark.parametrize("piece_size", [1, 2, 3, 5, 100])
def test_marker_scanner_finds_the_marker_across_pieces(piece_size: int) -> None:
    text = 'Sure <b>. <tool_call>{"name": "f"}'
    scanner = MarkerScanner()
    shown = "".join(scanner.feed(text[i : i + piece_size]) for i in range(0, len(text), piece_size))
    assert scanner.found
    assert shown == "Sure <b>. "
    assert scanner.text_before == "Sure <b>. "
    assert scanner.text_after == '{"name": "f"}'


def test_marker_scanner_releases_held_text_at_the_end() -> None:
    scanner = MarkerScanner()
    shown = scanner.feed("a < b <tool")
    assert shown == "a < b "
    assert scanner.flush() == "<tool"
    assert not scanner.found and scanner.text_before == "a < b <tool"


def test_parse_call_reads_complete_and_cut_off_calls() -> None:
    names = ["f", "Notes.add"]
    complete = parse_call('{"name": "Notes.add", "arguments": {"text": "x"}}</tool_call>', names)
    assert complete is not None and complete.name == "Notes.add" and complete.arguments == {"text": "x"}
    cut = parse_call('{"name": "Notes.add", "arguments": {"text": "unfinish', names)
    assert cut is not None and cut.arguments is None and cut.raw == '{"text": "unfinish'
    assert parse_call('{"name": "Not', names) is None
    assert parse_call('{"name": "other", "arguments": {}}', names) is None


def test_unusable_schema_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="cannot constrain the local model to the JSON schema of tool 'bad'"):
        call_grammar([ToolSpec("bad", "", {"$ref": "https://example.com/schema.json"})])
    with pytest.raises(UserError, match="no tools are offered"):
        call_grammar([])


def test_grammars_are_accepted_by_llama_cpp(local: LocalModel) -> None:
    import llama_cpp

    vocab = local.llama._model.vocab
    for grammar in (
        call_grammar([CONVERT, NOTE]),
        answer_grammar({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}),
        answer_grammar({"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}),
    ):
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        assert sampler, grammar
        llama_cpp.llama_sampler_free(sampler)


def test_rendered_request_for_each_tool_choice(local: LocalModel) -> None:
    messages = [user("Convert 5 C.")]
    auto = local.render(ModelRequest(messages=messages, tools=[CONVERT, NOTE]))  # type: ignore[arg-type]
    assert auto.mode == "auto" and auto.grammar is None and auto.call_grammar
    assert auto.text.endswith("<|im_start|>assistant\n")
    required = local.render(ModelRequest(messages=messages, tools=[CONVERT], tool_choice="required"))  # type: ignore[arg-type]
    assert required.mode == "call" and required.text.endswith("<|im_start|>assistant\n<tool_call>")
    named = local.render(ModelRequest(messages=messages, tools=[CONVERT, NOTE], tool_choice="Notes.add"))  # type: ignore[arg-type]
    assert named.tool_names == ["Notes.add"] and named.grammar is not None and "Units" not in named.grammar
    none = local.render(ModelRequest(messages=messages, tools=[CONVERT], tool_choice="none"))  # type: ignore[arg-type]
    assert none.mode == "text" and "# Tools" not in none.text
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    structured = local.render(
        ModelRequest(messages=messages, response_format=ResponseFormat("A", schema))  # type: ignore[arg-type]
    )
    assert structured.mode == "json"
    both = local.render(
        ModelRequest(messages=messages, tools=[CONVERT], response_format=ResponseFormat("A", schema))  # type: ignore[arg-type]
    )
    assert both.mode == "auto_json" and both.grammar is not None and "<tool_call>" in json.dumps(both.grammar)
