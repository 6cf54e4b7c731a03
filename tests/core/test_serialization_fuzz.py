"""Property-based tests of the readers: any input gives a whole log or `MessageListDeserializationError`
(docs/failure-rules.md#bad-input).

Inputs: random JSON values, random text and bytes, truncations of real documents of every format, and real
documents with one field replaced by a random value; and hostile values put into real documents of every format
(2.0, fluent_llm 1.0, an OpenAI list, the JSON-file layout): lone surrogates (as characters and as ``\ud800``
escapes), values nested far too deeply, and odd timestamps. A log a reader returns can always be written and read
back; one made from a valid document with hostile values put in still validates.
"""

from __future__ import annotations

import copy
import json
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import MessageList, MessageListDeserializationError, ProtocolError
from threadline.store.jsonfiles import message_to_file, read_layout, read_log_file

from .test_serialization import FLUENT_V1, full_log

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
# Keys and values a reader looks for, so random data often reaches the deeper branches.
known_keys = st.sampled_from(
    [
        "version", "messages", "role", "content", "type", "text", "tool_calls", "tool_call_id", "tool_name",
        "arguments", "result", "error", "id", "name", "function", "attachments", "kind", "data", "meta", "usage",
        "created_at", "image_url", "url", "raw_arguments", "is_error", "message", "ref", "model",
    ]
)  # fmt: skip
known_values = st.sampled_from(
    [
        "2.0", "1.0", "user", "assistant", "system", "tool", "developer", "TextMessage", "AgentMessage",
        "ToolCallMessage", "text", "image_url", "image", "mention", "data:image/png;base64,iVBORw0KGgo=",
        "2024-01-01T00:00:00Z", "{}", '{"a": 1}', "{", "c1",
    ]
)  # fmt: skip
shaped_values = st.recursive(
    json_scalars | known_values,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(known_keys | st.text(max_size=6), children, max_size=6)
    ),
    max_leaves=40,
)


IMAGE = "data:image/png;base64,iVBORw0KGgo="


def documents() -> list[Any]:
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": IMAGE}}]
    openai = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": parts},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    return [full_log().to_dict(), copy.deepcopy(FLUENT_V1), openai]


DOCUMENTS = documents()
TEXTS = [json.dumps(doc) for doc in DOCUMENTS]


def check_log(log: MessageList, *, valid: bool = False) -> None:
    """What every log a reader returns must be: writable as UTF-8 JSON (and in the files layout) and read back equal,
    with its own id for every message; and either valid or failing `validate` with a `ProtocolError` (``valid``: it
    must validate)."""
    assert isinstance(log, MessageList)
    text = log.to_json()
    text.encode("utf-8")
    assert MessageList.from_json(text) == log
    assert len({m.id for m in log}) == len(log)
    for message in log:  # what `threadline export --layout files` writes
        json.dumps(message_to_file(message), ensure_ascii=False).encode("utf-8")
    try:
        log.validate()
    except ProtocolError:
        assert not valid


def read_dict(data: Any, *, valid: bool = False) -> None:
    try:
        log = MessageList.from_dict(data)
    except MessageListDeserializationError as exc:
        assert str(exc)
        return
    check_log(log, valid=valid)  # whatever was read can be saved and read again


def read_json(text: str | bytes, *, valid: bool = False) -> None:
    try:
        log = MessageList.from_json(text)
    except MessageListDeserializationError as exc:
        assert str(exc)
        return
    check_log(log, valid=valid)


@FUZZ
@given(json_values)
def test_random_json_values_from_dict(data: Any) -> None:
    read_dict(data)


@FUZZ
@given(shaped_values)
def test_random_log_shaped_values_from_dict(data: Any) -> None:
    read_dict(data)
    read_dict({"version": "2.0", "messages": [data]})
    read_dict({"version": "1.0", "messages": [data]})
    read_dict([data])


@FUZZ
@given(shaped_values)
def test_random_log_shaped_values_from_json(data: Any) -> None:
    for wrapped in (data, {"version": "2.0", "messages": [data]}, {"version": "1.0", "messages": [data]}, [data]):
        read_json(json.dumps(wrapped))


@FUZZ
@given(st.text(max_size=200))
def test_random_text_from_json(text: str) -> None:
    read_json(text)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_from_json(data: bytes) -> None:
    read_json(data)


@FUZZ
@given(st.sampled_from(TEXTS), st.data())
def test_truncated_documents_from_json(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    read_json(text[:cut])
    read_json(text[:cut].encode("utf-8"))


@FUZZ
@given(st.sampled_from(range(len(DOCUMENTS))), st.data(), shaped_values)
def test_documents_with_one_field_replaced(which: int, data: st.DataObject, value: Any) -> None:
    document = copy.deepcopy(DOCUMENTS[which])
    messages = document["messages"] if isinstance(document, dict) else document
    message = messages[data.draw(st.integers(min_value=0, max_value=len(messages) - 1))]
    key = data.draw(st.sampled_from(sorted(message)) | known_keys)
    message[key] = value
    read_dict(document)
    read_json(json.dumps(document))


@FUZZ
@given(st.sampled_from(TEXTS), st.data())
def test_documents_with_one_character_changed(text: str, data: st.DataObject) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    replacement = data.draw(st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "0", "n", "\\", "é", " "]))
    read_json(text[:index] + replacement + text[index + 1 :])


# -- hostile values in real documents ---------------------------------------------------------------------------------
surrogates = st.integers(min_value=0xD800, max_value=0xDFFF).map(chr)
hostile_text = st.lists(surrogates | st.characters(), min_size=1, max_size=12).map("".join)
DEEP = "@@DEEP@@"  # replaced in the JSON text by brackets: json.dumps itself cannot write a value that deep
deep_values = st.tuples(st.integers(min_value=100, max_value=3_000), st.sampled_from("[{"))
ODD_TIME_TEXTS = [
    "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999999+00:00",
    "2024-02-30T00:00:00Z", "2024-01-01T00:00:00", "2024-01-01", "24:00", "", "now", "2024-01-01T00:00:00+24:00",
]  # fmt: skip
odd_times = st.one_of(
    st.sampled_from(ODD_TIME_TEXTS),
    st.builds(
        lambda moment, minutes: moment.replace(tzinfo=timezone(timedelta(minutes=minutes))).isoformat(),
        st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
        st.integers(min_value=-1439, max_value=1439),
    ),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False),
    st.booleans(),
)

# Where text lives in each format: one or more (message index, path of keys) that take the same text (a call's id and
# its result's tool_call_id change together, so the document stays valid).
TEXT_PLACES: dict[str, list[list[tuple[int, tuple[Any, ...]]]]] = {
    "2.0": [[(1, ("content",))], [(2, ("tool_calls", 0, "name"))], [(3, ("tool_name",))],
            [(2, ("tool_calls", 0, "id")), (3, ("tool_call_id",))], [(5, ("error", "message"))], [(2, ("model",))],
            [(4, ("meta", "run_id"))], [(1, ("attachments", 2, "name"))], [(2, ("tool_calls", 0, "arguments", "t"))],
            [(4, ("meta", "ui", "t"))], [(0, ("id",))]],
    "1.0": [[(0, ("text",))], [(1, ("tool_name",))], [(1, ("tool_call_id",))], [(1, ("result",))], [(1, ("message",))],
            [(1, ("arguments", "t"))]],
    "openai": [[(0, ("content",))], [(2, ("tool_calls", 0, "id")), (3, ("tool_call_id",))],
               [(2, ("tool_calls", 0, "function", "name"))], [(3, ("content",))], [(4, ("content",))]],
}  # fmt: skip
VALUE_PLACES = {
    "2.0": [(2, ("tool_calls", 0, "arguments", "deep")), (4, ("meta", "ui", "deep"))],
    "1.0": [(1, ("arguments", "deep")), (1, ("result",))],
    "openai": [(2, ("tool_calls", 0, "function", "arguments"))],
}


def base_document(form: str) -> Any:
    if form == "2.0":
        return full_log().to_dict()
    if form == "1.0":
        return copy.deepcopy(FLUENT_V1)
    return copy.deepcopy(DOCUMENTS[2])


def messages_of(document: Any) -> list[Any]:
    return document["messages"] if isinstance(document, dict) else document


def put(document: Any, index: int, path: tuple[Any, ...], value: Any) -> None:
    target = messages_of(document)[index]
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value


def as_json(document: Any, deep: tuple[int, str] | None) -> str:
    """JSON text of a document (lone surrogates become ``\\udXXX`` escapes), with the deep placeholder expanded."""
    text = json.dumps(document)
    if deep is not None:
        depth, opener = deep
        closer = "]" if opener == "[" else "}"
        inner = '"x"' if opener == "[" else "{}"
        body = (opener if opener == "[" else '{"k":') * depth + inner + closer * depth
        text = text.replace(json.dumps(DEEP), body)
    return text


FORMS = ["2.0", "1.0", "openai"]


@FUZZ
@given(st.sampled_from(FORMS), st.data(), hostile_text)
def test_lone_surrogates_anywhere_in_every_format(form: str, data: st.DataObject, text: str) -> None:
    document = base_document(form)
    for index, path in data.draw(st.sampled_from(TEXT_PLACES[form])):
        put(document, index, path, text)
    # The whole document is still valid, text aside: a log read from it validates.
    read_dict(document, valid=True)
    read_json(json.dumps(document), valid=True)  # surrogates as \\udXXX escapes
    read_json(json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass"))  # raw bytes: not UTF-8


# -- lone surrogates in every string of every reader's input ---------------------------------------------------------
Place = tuple[tuple[Any, ...], bool]  # (path of keys and indexes, whether the string is the last key itself)


def string_places(value: Any, path: tuple[Any, ...] = ()) -> list[Place]:
    """Every place a string sits in a JSON value: each string value, and each key of each object."""
    if isinstance(value, str):
        return [(path, False)]
    places: list[Place] = []
    if isinstance(value, dict):
        for key, item in value.items():
            places.append(((*path, key), True))
            places.extend(string_places(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            places.extend(string_places(item, (*path, index)))
    return places


def put_text(value: Any, place: Place, text: str) -> None:
    """Put ``text`` at a place of `string_places`: the string there, or the key there (its value kept)."""
    path, is_key = place
    target = value
    for step in path[:-1]:
        target = target[step]
    last = path[-1]
    if not is_key:
        target[last] = text
        return
    # A key renamed in place keeps the object's order (a reader may care where a field comes).
    items = list(target.items())
    target.clear()
    for key, item in items:
        target[text if key == last else key] = item


@st.composite
def with_surrogates_anywhere(draw: st.DrawFn, document: Any) -> Any:
    """``document`` (not changed) copied with hostile text at one to three of its string places, keys and tags
    (``role``, ``type``, ``version``) included."""
    document = copy.deepcopy(document)
    places = string_places(document)
    chosen = draw(st.lists(st.sampled_from(places), min_size=1, max_size=3, unique=True))
    # Deepest first, and a value before its own key: renaming a key first would change the paths under it.
    for place in sorted(chosen, key=lambda place: (len(place[0]), not place[1]), reverse=True):
        put_text(document, place, draw(hostile_text))
    return document


def read_anything(read: Any, data: Any) -> None:
    """A reader's answer to any input: a log that writes and reads back, or a `MessageListDeserializationError`
    whose message (quoting the bad data) can be printed and names where it is."""
    try:
        log = read(data)
    except MessageListDeserializationError as exc:
        assert str(exc)
        str(exc).encode("utf-8")  # printable: a quoted lone surrogate shows as U+FFFD
        if exc.field is not None:
            exc.field.encode("utf-8")
        return
    check_log(log)


@FUZZ
@given(st.sampled_from(FORMS), st.data())
def test_lone_surrogates_in_every_string_of_every_format(form: str, data: st.DataObject) -> None:
    document = data.draw(with_surrogates_anywhere(base_document(form)))
    read_anything(MessageList.from_dict, document)
    read_anything(MessageList.from_json, json.dumps(document))  # as \udXXX escapes
    read_anything(MessageList.from_json, json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    ("data", "position", "field"),
    [
        ({"version": "2.0", "messages": [{"role": "\udc80"}]}, 0, "role"),
        ({"version": "2.0", "messages": [{"role": "user", "content": "x", "created_at": "\ud801"}]}, 0, "created_at"),
        ({"version": "1.0", "messages": [{"type": "\udc80", "text": "x"}]}, 0, "type"),
        ([{"role": "\udc80", "content": "x"}], 0, "role"),
        ({"version": "\udc80", "messages": []}, None, "version"),
    ],
)
def test_a_lone_surrogate_where_the_reader_needs_a_known_word_is_named(
    data: Any, position: int | None, field: str
) -> None:
    with pytest.raises(MessageListDeserializationError) as caught:
        MessageList.from_dict(data)
    assert (caught.value.position, caught.value.field) == (position, field)
    str(caught.value).encode("utf-8")


@pytest.mark.parametrize(
    "data",
    [
        [{"role": "user", "content": "x\ud801"}],
        {"version": "2.0", "messages": [{"role": "user", "content": "x\ud801"}]},
        {"version": "2.0", "messages": [{"role": "user", "content": "x", "\udc80": 1}]},
        {"version": "1.0", "messages": [{"type": "TextMessage", "role": "user", "text": "x\udc80"}]},
    ],
)
def test_a_lone_surrogate_in_text_reads_as_the_replacement_character(data: Any) -> None:
    log = MessageList.from_dict(data)
    assert log[0].content in ("x\ufffd", "x")
    assert MessageList.from_json(log.to_json()) == log


@FUZZ
@given(st.sampled_from(FORMS), st.data(), deep_values)
def test_values_nested_far_too_deep_in_every_format(form: str, data: st.DataObject, deep: tuple[int, str]) -> None:
    document = base_document(form)
    index, path = data.draw(st.sampled_from(VALUE_PLACES[form]))
    put(document, index, path, DEEP)
    text = as_json(document, deep)
    read_json(text, valid=True)
    read_json(text.encode(), valid=True)
    try:
        decoded = json.loads(text)
    except RecursionError:
        return  # too deep for the stdlib to build as Python data; the JSON readers above met it as text
    read_dict(decoded, valid=True)


@FUZZ
@given(st.data(), odd_times)
def test_odd_timestamps_in_version_2(data: st.DataObject, stamp: Any) -> None:
    document = base_document("2.0")
    put(document, data.draw(st.integers(min_value=0, max_value=len(document["messages"]) - 1)), ("created_at",), stamp)
    read_dict(document, valid=True)
    read_json(json.dumps(document), valid=True)


# -- the JSON-file layout --------------------------------------------------------------------------------------------
LAYOUT_MESSAGES = [
    {"id": "m1", "role": "system", "content": "You plan trips.", "createdAt": "2024-03-01T09:00:00.000Z"},
    {"id": "m2", "role": "user", "content": "Plan Rome", "createdAt": 1709283601000, "partType": "text"},
    {"id": "m3", "role": "assistant", "content": None, "mode": "agent", "runId": "run-1",
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}]},
    {"id": "m4", "role": "tool", "tool_call_id": "call_1", "content": "3 hotels", "toolName": "search"},
    {"id": "m5", "role": "assistant", "content": "Done.\n[LLM_ERROR type=timeout message=slow]", "model": "m"},
]  # fmt: skip
LAYOUT_INDEX = [{"id": "conv-1", "title": "Trip", "createdAt": "2024-03-01T09:00:00Z", "activeType": "agent"}]
LAYOUT_TEXT = [(1, "content"), (2, "runId"), (3, "toolName"), (4, "model"), (0, "id"), (3, "content")]
LAYOUT_TIMES = [(0, "createdAt"), (1, "createdAt"), (4, "createdAt")]


def read_layout_files(index: str | bytes, messages: str | bytes) -> None:
    """Write a layout and read it (and its messages file alone) as ``threadline import`` does: a whole, valid log or
    `MessageListDeserializationError`."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "conversations"
        (root / "conv-1").mkdir(parents=True)
        (root / "index.json").write_bytes(index if isinstance(index, bytes) else index.encode())
        file = root / "conv-1" / "messages.json"
        file.write_bytes(messages if isinstance(messages, bytes) else messages.encode())
        for read in (lambda: read_layout(directory)[0].messages, lambda: read_log_file(file).messages):
            try:
                messages_read = read()
            except MessageListDeserializationError as exc:
                assert str(exc)
                continue
            check_log(MessageList(messages_read), valid=True)  # the import path checks the protocol


@FUZZ
@given(st.data(), hostile_text)
def test_layout_with_lone_surrogates(data: st.DataObject, text: str) -> None:
    messages = copy.deepcopy(LAYOUT_MESSAGES)
    if data.draw(st.booleans()):
        index, key = data.draw(st.sampled_from(LAYOUT_TEXT))
        messages[index][key] = text
    else:  # a call id and its result's, together
        messages[2]["tool_calls"][0]["id"] = messages[3]["tool_call_id"] = text
    entry = copy.deepcopy(LAYOUT_INDEX)
    entry[0][data.draw(st.sampled_from(["title", "packageId"]))] = text
    read_layout_files(json.dumps(entry), json.dumps(messages))
    raw = json.dumps(messages, ensure_ascii=False).encode("utf-8", "surrogatepass")
    read_layout_files(json.dumps(LAYOUT_INDEX), raw)


@FUZZ
@given(st.data(), deep_values, st.booleans())
def test_layout_with_values_nested_far_too_deep(data: st.DataObject, deep: tuple[int, str], as_text: bool) -> None:
    messages = copy.deepcopy(LAYOUT_MESSAGES)
    function = messages[2]["tool_calls"][0]["function"]
    if as_text:  # arguments as JSON text, the OpenAI form: too deep to parse means kept as text
        depth = deep[0]
        function["arguments"] = '{"q": ' + "[" * depth + "]" * depth + "}"
        text = json.dumps(messages)
    else:
        function["arguments"] = {"q": DEEP}
        text = as_json(messages, deep)
    read_layout_files(json.dumps(LAYOUT_INDEX), text)


@FUZZ
@given(st.data(), odd_times)
def test_layout_with_odd_timestamps(data: st.DataObject, stamp: Any) -> None:
    messages = copy.deepcopy(LAYOUT_MESSAGES)
    index, key = data.draw(st.sampled_from(LAYOUT_TIMES))
    messages[index][key] = stamp
    entry = copy.deepcopy(LAYOUT_INDEX)
    entry[0][data.draw(st.sampled_from(["createdAt", "updatedAt"]))] = stamp
    read_layout_files(json.dumps(entry), json.dumps(messages))


@FUZZ
@given(st.data())
def test_layout_with_lone_surrogates_in_every_string(data: st.DataObject) -> None:
    messages = data.draw(with_surrogates_anywhere(LAYOUT_MESSAGES))
    entry = data.draw(with_surrogates_anywhere(LAYOUT_INDEX)) if data.draw(st.booleans()) else LAYOUT_INDEX
    read_layout_any(json.dumps(entry), json.dumps(messages))
    raw = json.dumps(messages, ensure_ascii=False).encode("utf-8", "surrogatepass")
    read_layout_any(json.dumps(LAYOUT_INDEX), raw)


def read_layout_any(index: str | bytes, messages: str | bytes) -> None:
    """Like `read_layout_files`, for inputs that need not make a valid log (a tag or key may be changed)."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "conversations"
        (root / "conv-1").mkdir(parents=True)
        (root / "index.json").write_bytes(index if isinstance(index, bytes) else index.encode())
        file = root / "conv-1" / "messages.json"
        file.write_bytes(messages if isinstance(messages, bytes) else messages.encode())
        read_anything(lambda _: MessageList(read_layout(directory)[0].messages), None)
        read_anything(lambda _: MessageList(read_log_file(file).messages), None)
