"""The server-sent-event reader under every streamed answer (`threadline.models.http._sse`), against the WHATWG
``text/event-stream`` rules: line ends of each kind and split between chunks, comments, fields without a colon or a
space, events without data, byte-order marks, characters split between chunks, bytes that are not UTF-8, and a
stream that ends mid-event. Then the same over real HTTP, through the Anthropic and OpenAI adapters."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import llm
from threadline.errors import ModelError
from threadline.messages import AssistantMessage
from threadline.models.http._sse import LINE_LIMIT, Event, EventReader

from ..conftest import make_anthropic, make_openai
from ..servers import Answer, Chunks, FakeAnthropic, FakeOpenAI, FakeServer, Recorded

BOM = b"\xef\xbb\xbf"


def read(*chunks: bytes) -> list[tuple[str, str]]:
    reader = EventReader()
    events: list[Event] = []
    for chunk in chunks:
        events += reader.feed(chunk)
    events += reader.finish()
    return [(event.event, event.data) for event in events]


def every_split(data: bytes) -> list[list[bytes]]:
    """``data`` whole, byte by byte, and cut in two at every place."""
    return [[data], [data[i : i + 1] for i in range(len(data))]] + [[data[:i], data[i:]] for i in range(len(data))]


# -- the rules, one by one -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_each_kind_of_line_end_reads_the_same_under_any_split(end: bytes) -> None:
    stream = end.join([b"event: delta", b"data: one", b"data: two", b"", b"data: three", b"", b""])
    for chunks in every_split(stream):
        assert read(*chunks) == [("delta", "one\ntwo"), ("", "three")], chunks


def test_a_cr_at_the_end_of_a_chunk_waits_for_the_lf_that_may_follow() -> None:
    # One line end (CR LF split between chunks), not two: the two data lines are one event.
    assert read(b"data: a\r", b"\ndata: b\r\n\r\n") == [("", "a\nb")]
    # A CR alone ends its line when the next chunk starts with something else.
    assert read(b"data: a\r", b"data: b\r\r") == [("", "a\nb")]


def test_a_blank_line_ended_by_the_streams_last_cr_still_ends_its_event() -> None:
    assert read(b"data: x\r\r") == [("", "x")]
    assert read(b"data: x\r", b"\r") == [("", "x")]


def test_comments_and_fields_other_than_event_and_data_are_ignored() -> None:
    stream = b": ping\nid: 7\nretry: 3000\nfoo: bar\nevent: delta\n:data: not data\ndata: kept\n\n"
    assert read(stream) == [("delta", "kept")]


def test_one_space_after_the_colon_is_dropped_and_no_more() -> None:
    assert read(b"data:x\n\ndata: x\n\ndata:  x\n\ndata: x \n\n") == [("", "x"), ("", "x"), ("", " x"), ("", "x ")]


def test_a_field_without_a_colon_has_an_empty_value() -> None:
    assert read(b"data\n\n") == [("", "")]
    assert read(b"data\ndata\n\n") == [("", "\n")]
    assert read(b"event\ndata: x\n\n") == [("", "x")]


def test_an_event_without_data_is_not_dispatched_and_its_type_does_not_carry_over() -> None:
    """Before, such an event (a proxy's ``event: keepalive``) came out with empty data, which the Anthropic reader
    took for an unreadable event of the API and failed the call on."""
    assert read(b"event: keepalive\n\ndata: x\n\n") == [("", "x")]
    assert read(b"event: ping\nid: 1\n\n\n\n") == []


def test_a_byte_order_mark_is_skipped_at_the_start_only() -> None:
    for chunks in every_split(BOM + b"data: x\n\n" + BOM + b"data: y\n\n"):
        assert read(*chunks) == [("", "x")], chunks  # a BOM later is part of the field name "\ufeffdata"
    assert read(b"data: \xef\xbb\xbfy\n\n") == [("", "\ufeffy")]


def test_characters_split_between_chunks_are_read_whole() -> None:
    stream = "data: café 北京 🌧\n\n".encode()
    for chunks in every_split(stream):
        assert read(*chunks) == [("", "café 北京 🌧")], chunks


def test_bytes_that_are_not_utf8_read_as_replacement_characters() -> None:
    assert read(b"data: a\xffb\xc3\n\nevent: \xfe\ndata: c\n\n") == [("", "a\ufffdb\ufffd"), ("\ufffd", "c")]


def test_an_event_the_stream_ends_without_finishing_is_dropped() -> None:
    assert read(b"data: whole\n\ndata: cut") == [("", "whole")]
    assert read(b"data: whole\n\ndata: cut\n") == [("", "whole")]


def test_a_long_line_in_many_chunks_is_read_whole() -> None:
    value = "x" * 100_000
    chunks = [b"data: "] + [value[i : i + 7].encode() for i in range(0, len(value), 7)] + [b"\n\n"]
    assert read(*chunks) == [("", value)]


def test_a_line_that_never_ends_stops_the_stream_with_a_clear_error() -> None:
    reader = EventReader(line_limit=1_000)
    assert reader.feed(b"data: ok\n\ndata: ") == [("", "ok")]
    reader.feed(b"x" * 900)
    with pytest.raises(ModelError, match="stream line longer than 1,000 bytes") as info:
        reader.feed(b"x" * 200)
    assert info.value.type == "bad_response"
    # A line end in time keeps it whole, however long the line grew before.
    reader = EventReader(line_limit=1_000)
    assert reader.feed(b"data: " + b"y" * 900) == []
    assert reader.feed(b"y" * 90 + b"\n\n") == [("", "y" * 990)]


# -- properties ------------------------------------------------------------------------------------------------------

VALUE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)
NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n:"), min_size=1, max_size=8)


@st.composite
def streams(draw: Any) -> tuple[bytes, list[tuple[str, str]]]:
    """A stream written by the rules, and the events it must give."""
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    lines: list[str] = []
    expected: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.none() | NAME)
        data = draw(st.lists(VALUE, max_size=3))
        fields = [f"data:{' ' if draw(st.booleans()) or value.startswith(' ') else ''}{value}" for value in data]
        if kind is not None:
            fields.insert(draw(st.integers(0, len(fields))), f"event: {kind}")
        if draw(st.booleans()):
            fields.insert(draw(st.integers(0, len(fields))), f": {draw(VALUE)}")
        lines += [*fields, ""]
        if data:
            expected.append(("" if kind is None else kind, "\n".join(data)))
    text = "".join(line + end for line in lines)
    head = BOM if draw(st.booleans()) else b""
    return head + text.encode(), expected


@st.composite
def splits(draw: Any, data: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_stream_in_any_split_gives_the_events_it_was_written_with(data: Any) -> None:
    stream, expected = data.draw(streams())
    chunks = data.draw(splits(stream))
    assert read(*chunks) == expected


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_any_bytes_in_any_chunks_give_events_of_plain_text_and_never_raise(chunks: Sequence[bytes]) -> None:
    for kind, body in read(*chunks):
        kind.encode("utf-8")  # no lone surrogates: every event can be logged and stored
        body.encode("utf-8")
    assert read(*chunks) == read(b"".join(chunks))


# -- over real HTTP ----------------------------------------------------------------------------------------------------


def written(server: FakeServer, answer: Answer) -> list[str]:
    """The events the fake server streams for ``answer``, each written out without its closing blank line, with
    its JSON in plain UTF-8 (characters of more than one byte, for cuts inside them)."""
    request = Recorded("POST", "/", {}, b"{}", 0.0)
    return [
        (f"event: {kind}\n" if kind else "") + f"data: {_plain(data)}\n"
        for kind, data in server.render_events(answer, request)
    ]


def _plain(data: str) -> str:
    return json.dumps(json.loads(data), ensure_ascii=False) if data.startswith("{") else data  # not "[DONE]"


async def test_an_anthropic_stream_as_a_proxy_may_relay_it_gives_the_whole_answer(
    anthropic_server: FakeAnthropic,
) -> None:
    """CRLF line ends, a byte-order mark, comment keepalives, an event without data, and chunks cut inside lines
    and inside characters: the answer comes out whole, as streamed and as logged."""
    text = "Il fait beau à Pékin (北京) 🌤."
    body = "\n: keepalive\n\nevent: keepalive\n\n".join(written(anthropic_server, Answer(text))) + "\n"
    raw = BOM + body.replace("\n", "\r\n").encode()
    cut = [0, 3, 40, 41, *range(200, len(raw), 97), len(raw)]
    for at in (raw.index("à".encode()) + 1, raw.index("北".encode()) + 2, raw.index(b"\r\n") + 1):
        cut.append(at)
    cut = sorted(set(cut))
    anthropic_server.add(Chunks(tuple(raw[a:b] for a, b in itertools.pairwise(cut))))
    model = make_anthropic(anthropic_server)
    shown: list[str] = []
    try:
        conversation = llm.model(model).request("Weather in Beijing?").prompt_conversation(stream=True)
        async for _ in conversation.run(on_text=shown.append):
            pass
    finally:
        await model.aclose()
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage) and answer.error is None
    assert answer.content == "".join(shown) == text
    conversation.messages.validate()


async def test_an_openai_stream_with_cr_line_ends_gives_the_whole_answer(openai_server: FakeOpenAI) -> None:
    text = "Twenty-two degrees, sunny."
    raw = ("\n".join(written(openai_server, Answer(text))) + "\n").replace("\n", "\r").encode()
    openai_server.add(Chunks(tuple(raw[i : i + 33] for i in range(0, len(raw), 33))))
    model = make_openai(openai_server)
    try:
        answer = await llm.model(model).request("Weather in Paris?").prompt_async(stream=True)
    finally:
        await model.aclose()
    assert str(answer) == text


async def test_a_server_that_never_ends_a_line_fails_the_call_and_the_log_keeps_the_question(
    anthropic_server: FakeAnthropic,
) -> None:
    """A broken server streaming one line without end: the call fails with a clear error once the line passes
    `LINE_LIMIT` (memory stays bounded), no retry repeats it, and the log keeps the question and the failure."""
    head = ("\n".join(written(anthropic_server, Answer("x"))[:2]) + "\n").encode()  # the message, its text block
    piece = b"x" * (1 << 20)
    pieces = (head, b"data: ", *(piece for _ in range(LINE_LIMIT // len(piece) + 2)))
    anthropic_server.add(Chunks(pieces))
    model = make_anthropic(anthropic_server)
    try:
        conversation = llm.model(model).request("Weather in Paris?").prompt_conversation(stream=True)
        with pytest.raises(ModelError, match="stream line longer than") as info:
            async for _ in conversation:
                pass
    finally:
        await model.aclose()
    assert info.value.type == "bad_response"
    assert anthropic_server.count == 1
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert "stream line longer than" in failure.error.message
    assert conversation.messages[-2].content == "Weather in Paris?"  # type: ignore[union-attr]
    conversation.messages.validate()
