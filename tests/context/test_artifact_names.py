# ruff: noqa: F811
"""Artifacts of tool calls whose ids are not safe names (issue 8, item 6): ``call/1``, ``..``, a NUL, a space, 300
characters. Through the real tool loop on SQLite and PostgreSQL: the preview's URI is readable by ``read_artifact``,
later turns work, and so does a turn after a reload."""

from __future__ import annotations

import pytest

from tests.store._backends import store, store_url  # noqa: F401 - fixtures
from threadline import AssistantMessage, Conversation, ToolCall, ToolMessage, llm
from threadline._artifact_names import artifact_name, is_artifact_name
from threadline.store import Store
from threadline.testing import ScriptedModel, ScriptedRequest
from threadline.toolboxes.artifacts import parse_artifact_uri

BIG = "".join(f"line {i:05d}\n" for i in range(1_000))  # 11,000 characters: sent as a preview
ODD_IDS = ["call/1", "..", "a\x00b", "x" * 300, "call 1", "~x", "call\\1", "é/../..", ""]


def fetch_report() -> str:
    """Fetch the big report."""
    return BIG


def read_back(call_id: str) -> object:
    """A scripted step: read the artifact named in the last preview the model was sent."""

    def step(request: ScriptedRequest) -> AssistantMessage:
        preview = request.messages[-1]
        assert isinstance(preview, ToolMessage)
        uri = preview.content.rsplit("Full output: ", 1)[1]
        arguments = {"uri": uri, "offset": 6_000, "limit": 22}
        return AssistantMessage(tool_calls=[ToolCall(id=call_id, name="read_artifact", arguments=arguments)])

    return step


@pytest.mark.parametrize(
    "call_id", ODD_IDS, ids=["slash", "dotdot", "nul", "long", "space", "tilde", "bslash", "mix", "empty"]
)
def test_any_tool_call_id_gives_a_readable_artifact_now_later_and_after_reload(store: Store, call_id: str) -> None:
    fetch = AssistantMessage(tool_calls=[ToolCall(id=call_id, name="fetch_report", arguments={})])
    model = ScriptedModel([fetch, read_back("r1"), "Read it.", "Still fine."])
    conv = llm.model(model).tools(fetch_report).store(store).request("Read the report.").prompt_conversation()
    assert conv.continuation.prompt() == "Read it."
    uri = model.requests[1].messages[-1].content.rsplit("Full output: ", 1)[1]
    call_id = conv.messages[1].tool_calls[0].id  # as logged (the loop gives an empty id one of its own)
    name = artifact_name(call_id)
    assert uri == f"artifact://{conv.id}/{name}"
    read = model.requests[2].messages[-1]
    assert isinstance(read, ToolMessage) and not read.is_error, read.content
    assert read.content.startswith(BIG[6_000:6_022])
    # A later turn builds the window again (saving the artifact again): it works.
    assert conv.continuation.request("And now?").prompt() == "Still fine."
    assert store.read_artifact(conv.id, name) == BIG

    # After a reload, another turn and another read of the same URI.
    again = Conversation.load(conv.id, store)
    second = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="r2", name="read_artifact",
                            arguments={"uri": uri, "limit": 10})]), "Done."])  # fmt: skip
    assert again.continuation.model(second).request("Once more.").prompt() == "Done."
    reread = second.requests[1].messages[-1]
    assert isinstance(reread, ToolMessage) and not reread.is_error and reread.content.startswith(BIG[:10])
    stored = store.load(conv.id)
    stored.validate()
    assert next(m for m in stored if isinstance(m, ToolMessage) and m.tool_call_id == call_id).content == BIG


def test_names_are_safe_deterministic_and_distinct() -> None:
    names = [artifact_name(i) for i in ODD_IDS]
    assert len(set(names)) == len(names)
    assert names == [artifact_name(i) for i in ODD_IDS]
    for name in names:
        assert is_artifact_name(name)
        assert "/" not in name and "\\" not in name and "\x00" not in name and ".." not in name
        assert 1 <= len(name) <= 200
        assert parse_artifact_uri(f"artifact://c1/{name}", "c1") == name
    # Ids that are already safe names are used as they are, so ordinary URIs stay readable.
    for plain in ("call_abc123", "toolu_01ABC", "c1", "a.b:c-d"):
        assert artifact_name(plain) == plain
    # A safe id can never take the name derived from another id.
    assert artifact_name("call/1") != artifact_name("call_1") == "call_1"


def test_the_reader_accepts_exactly_the_names_the_window_hands_out() -> None:
    for bad in ("call 1", "a\x00b", "..", "x" * 201, "call_1~zz", "call_1~" + "0" * 15, "~" + "0" * 16):
        with pytest.raises(ValueError, match="refused"):
            parse_artifact_uri(f"artifact://c1/{bad}", "c1")


def test_a_conversation_id_holding_a_slash_reads_its_own_artifacts() -> None:
    assert parse_artifact_uri("artifact://team/a/call_1", "team/a") == "call_1"
    with pytest.raises(ValueError, match="another conversation"):
        parse_artifact_uri("artifact://team/b/call_1", "team/a")
