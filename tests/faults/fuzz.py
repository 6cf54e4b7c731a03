"""Fuzzed readers: hypothesis feeds malformed and odd JSON, text and bytes to every reader of a log.

Three reader paths, one row each: `MessageList.from_dict`, `MessageList.from_json`, and what ``threadline import``
does (`read_log_file` or `read_layout`, then `Store.import_conversations` into a real SQLite store). Every case must
either give a log that can be written and read back (and, for an import, that validates once stored) or raise the
documented error (`MessageListDeserializationError`; a `ThreadlineError` for an import, which then writes nothing).
Any other exception is a crash. The inputs reuse the strategies of ``tests/core/test_serialization_fuzz.py``: random
JSON values, log-shaped values, text, bytes, truncated and mutated real documents of every format, lone surrogates,
values nested far too deep and odd timestamps.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.core.test_serialization_fuzz import (
    DEEP,
    DOCUMENTS,
    FORMS,
    LAYOUT_INDEX,
    LAYOUT_MESSAGES,
    TEXT_PLACES,
    TEXTS,
    VALUE_PLACES,
    as_json,
    base_document,
    deep_values,
    hostile_text,
    json_values,
    odd_times,
    put,
    shaped_values,
    with_surrogates_anywhere,
)
from threadline import MessageList, MessageListDeserializationError, ProtocolError, ThreadlineError
from threadline.store import open_store
from threadline.store.jsonfiles import read_layout, read_log_file

from .campaign import Row

PATHS = ("from_dict", "from_json", "import")


@st.composite
def mutated_documents(draw: st.DrawFn) -> Any:
    """A real document of one format with one field replaced, or hostile text or an odd time put in (hostile
    text in the places a valid log keeps text, or in any string at all: keys and tags included)."""
    form = draw(st.sampled_from(FORMS))
    document = base_document(form)
    how = draw(st.sampled_from(["replace", "surrogates", "surrogates-anywhere", "time"]))
    if how == "surrogates-anywhere":
        return draw(with_surrogates_anywhere(document))
    if how == "surrogates":
        text = draw(hostile_text)
        for index, path in draw(st.sampled_from(TEXT_PLACES[form])):
            put(document, index, path, text)
        return document
    messages = document["messages"] if isinstance(document, dict) else document
    index = draw(st.integers(min_value=0, max_value=len(messages) - 1))
    key = "created_at" if how == "time" else draw(st.sampled_from(sorted(messages[index])) | st.text(max_size=8))
    messages[index][key] = draw(odd_times if how == "time" else shaped_values)
    return document


@st.composite
def json_texts(draw: st.DrawFn) -> str | bytes:
    """Text or bytes for a JSON reader: random, truncated, a character changed, deep, or with raw surrogates."""
    kind = draw(st.sampled_from(["text", "bytes", "truncated", "changed", "deep", "raw-surrogates", "document"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "document":
        return json.dumps(draw(mutated_documents() | shaped_values | json_values))
    text = draw(st.sampled_from(TEXTS))
    if kind == "truncated":
        cut = draw(st.integers(min_value=0, max_value=len(text)))
        return text[:cut] if draw(st.booleans()) else text[:cut].encode()
    if kind == "changed":
        at = draw(st.integers(min_value=0, max_value=len(text) - 1))
        return (
            text[:at]
            + draw(st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "0", "n", "\\", "é", " "]))
            + text[at + 1 :]
        )
    if kind == "deep":
        form = draw(st.sampled_from(FORMS))
        document = base_document(form)
        index, path = draw(st.sampled_from(VALUE_PLACES[form]))
        put(document, index, path, DEEP)
        return as_json(document, draw(deep_values))
    document = draw(mutated_documents())
    return json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")


@st.composite
def layouts(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """The two files of a JSON-file layout (index.json, messages.json), one of them damaged."""
    messages: Any = copy.deepcopy(LAYOUT_MESSAGES)
    index: Any = copy.deepcopy(LAYOUT_INDEX)
    where = draw(st.sampled_from(["message", "index", "messages-text", "index-text", "anywhere"]))
    if where == "anywhere":  # hostile text in any string of either file, keys included
        messages = draw(with_surrogates_anywhere(messages))
        index = draw(with_surrogates_anywhere(index)) if draw(st.booleans()) else index
    elif where == "message":
        item = messages[draw(st.integers(min_value=0, max_value=len(messages) - 1))]
        item[draw(st.sampled_from(sorted(item)) | st.text(max_size=8))] = draw(shaped_values | odd_times | hostile_text)
    elif where == "index":
        index[0][draw(st.sampled_from(["id", "title", "createdAt", "updatedAt", "activeType"]))] = draw(
            shaped_values | odd_times | hostile_text
        )
    index_bytes = json.dumps(index, ensure_ascii=False).encode("utf-8", "surrogatepass")
    messages_bytes = json.dumps(messages, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if where == "messages-text":
        messages_bytes = _damage(draw, messages_bytes)
    elif where == "index-text":
        index_bytes = _damage(draw, index_bytes)
    return index_bytes, messages_bytes


def _damage(draw: st.DrawFn, data: bytes) -> bytes:
    cut = draw(st.integers(min_value=0, max_value=len(data)))
    return data[:cut] + draw(st.binary(max_size=8))


CASES = st.one_of(
    st.tuples(st.just("from_dict"), json_values | shaped_values | mutated_documents()),
    st.tuples(st.just("from_dict"), shaped_values.map(lambda value: {"version": "2.0", "messages": [value]})),
    st.tuples(st.just("from_dict"), st.sampled_from(DOCUMENTS).map(copy.deepcopy)),
    st.tuples(st.just("from_json"), json_texts()),
    st.tuples(st.just("import"), st.tuples(st.just("file"), json_texts())),
    st.tuples(st.just("import"), st.tuples(st.just("layout"), layouts())),
)


def check_log(log: MessageList) -> str | None:
    """What is wrong with a log a reader returned (None: nothing): it must write and read back equal, with unique
    ids, and `validate` may only raise `ProtocolError`."""
    try:
        if MessageList.from_json(log.to_json().encode("utf-8")) != log:
            return "does not read back equal"
        if len({message.id for message in log}) != len(log):
            return "repeats a message id"
        try:
            log.validate()
        except ProtocolError:
            pass
    except Exception as exc:
        return f"cannot be written back: {type(exc).__name__}: {exc}"[:200]
    return None


def _error_problem(exc: Exception) -> str | None:
    """What is wrong with a reader's error (None: nothing): it must say something, in text that can be printed."""
    text = str(exc)
    if not text:
        return "an error without a message"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"an error message that cannot be printed (lone surrogates): {text.encode('utf-8', 'replace')[:120]!r}"
    return None


class ReaderCampaign:
    """Runs the cases and fills one row per reader path (or one row for all of them, named ``single``)."""

    def __init__(self, directory: Path, single: str | None = None) -> None:
        if single is None:
            self.rows = {path: Row(f"fuzzed readers: {path}") for path in PATHS}
        else:
            row = Row(single)
            self.rows = dict.fromkeys(PATHS, row)
        self.directory = directory
        self.store = open_store(f"sqlite:///{directory / 'imports.db'}")
        self.number = 0

    def run(self, path: str, payload: Any) -> None:
        self.number += 1
        row = self.rows[path]
        try:
            if path == "import":
                problem, invalid = self.import_(payload)
            else:
                problem, invalid = self.read(path, payload)
        except Exception as exc:  # anything else escaping a reader is the crash this campaign counts
            problem, invalid = f"{type(exc).__name__}: {exc}"[:200], 0
        row.case(crashed=problem if not invalid else None, invalid=invalid, note=f"{path} case {self.number}")

    def read(self, path: str, payload: Any) -> tuple[str | None, int]:
        try:
            log = MessageList.from_dict(payload) if path == "from_dict" else MessageList.from_json(payload)
        except MessageListDeserializationError as exc:
            return _error_problem(exc), 0
        problem = check_log(log)
        return problem, int(problem is not None)

    def import_(self, payload: tuple[str, Any]) -> tuple[str | None, int]:
        kind, data = payload
        with tempfile.TemporaryDirectory(dir=self.directory) as folder:
            root = Path(folder) / "conversations"
            root.mkdir()
            try:
                if kind == "file":
                    file = root / "log.json"
                    file.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
                    items = [read_log_file(file, f"imported-{self.number}")]
                else:
                    (root / "index.json").write_bytes(data[0])
                    (root / "conv-1").mkdir()
                    (root / "conv-1" / "messages.json").write_bytes(data[1])
                    items = read_layout(folder)
                infos = self.store.import_conversations(items)
            except ThreadlineError as exc:
                left = self.store.list_conversations()
                if left:
                    return "a failed import wrote a conversation", len(left)
                return _error_problem(exc), 0
        problems = 0
        for info in infos:
            stored = self.store.load(info.id)
            try:
                stored.validate()
            except ProtocolError:
                problems += 1
            if check_log(stored) is not None:
                problems += 1
            self.store.delete_conversation(info.id)
        return ("an imported log is invalid" if problems else None), problems

    def close(self) -> list[Row]:
        self.store.close()
        return list({id(row): row for row in self.rows.values()}.values())


@st.composite
def surrogate_cases(draw: st.DrawFn) -> tuple[str, Any]:
    """A real document of any format, or the two files of a layout, with lone surrogates in one to three of its
    strings (keys and tags such as ``role`` included), for any reader path."""
    path = draw(st.sampled_from(PATHS))
    if path == "import" and draw(st.booleans()):
        messages = draw(with_surrogates_anywhere(LAYOUT_MESSAGES))
        index = draw(with_surrogates_anywhere(LAYOUT_INDEX)) if draw(st.booleans()) else LAYOUT_INDEX
        files = [json.dumps(value, ensure_ascii=draw(st.booleans())) for value in (index, messages)]
        return path, ("layout", tuple(text.encode("utf-8", "surrogatepass") for text in files))
    document = draw(with_surrogates_anywhere(base_document(draw(st.sampled_from(FORMS)))))
    if path == "from_dict":
        return path, document
    text = json.dumps(document, ensure_ascii=draw(st.booleans()))  # escapes, or raw surrogates (not UTF-8)
    return (path, text) if path == "from_json" else (path, ("file", text))


SURROGATES_ROW = "lone surrogates in every string (all readers)"


def fuzz_surrogates(cases: int, directory: Path, seed: int | None = None) -> Row:
    """Issue 17's case: lone surrogates anywhere in the input of every reader (`surrogate_cases`); one row."""
    campaign = ReaderCampaign(directory, single=SURROGATES_ROW)

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        derandomize=seed is not None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(surrogate_cases())
    def one(case: tuple[str, Any]) -> None:
        campaign.run(*case)

    try:
        one()
    finally:
        rows = campaign.close()
    return rows[0]


def fuzz_readers(cases: int, directory: Path, seed: int | None = None) -> list[Row]:
    """Run ``cases`` hypothesis-generated inputs through the readers; one row per reader path."""
    campaign = ReaderCampaign(directory)

    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        derandomize=seed is not None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(CASES)
    def one(case: tuple[str, Any]) -> None:
        campaign.run(*case)

    try:
        one()
    finally:
        rows = campaign.close()
    return rows
