"""Large tool outputs through a real tool loop: the request carries a preview and an artifact URI, the full output
is saved aside, the built-in read_artifact tool is offered while a preview is in the window and reads it back, and
URIs of other conversations, ``..`` and absolute paths are refused."""

from __future__ import annotations

import pytest

from threadline import AssistantMessage, ContextSettings, Conversation, ConversationConfig, ToolCall, ToolMessage, llm
from threadline.testing import ScriptedModel
from threadline.toolboxes.artifacts import parse_artifact_uri

BIG = "".join(f"line {i:05d}\n" for i in range(1_000))  # 11,000 characters


def fetch_report() -> str:
    """Fetch the big report."""
    return BIG


def read_call(call_id: str, uri: str, **arguments: object) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=call_id, name="read_artifact", arguments={"uri": uri, **arguments})]
    )


async def _turn(conv: Conversation) -> None:
    async for _ in conv:
        pass


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    if request.param == "memory":
        return None
    from threadline import open_store

    return open_store(f"sqlite:///{tmp_path / 'artifacts.db'}")


async def test_preview_artifact_and_read_back_through_the_loop(store) -> None:  # type: ignore[no-untyped-def]
    def second(request):  # type: ignore[no-untyped-def]
        result = request.messages[-1]
        assert isinstance(result, ToolMessage)
        uri = result.content.rsplit("Full output: ", 1)[1]
        return read_call("r1", uri, offset=2_000, limit=24)

    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="big1", name="fetch_report", arguments={})]), second, "Read it."]
    )
    builder = llm.model(model).tools(fetch_report).request("Summarize the report.")
    if store is not None:
        builder = builder.store(store)
    conv = builder.prompt_conversation()
    await _turn(conv)

    uri = f"artifact://{conv.id}/big1"
    # Request 2: the result is a preview ending with the URI, and read_artifact is offered next to the user's tool.
    preview = model.requests[1].messages[-1]
    assert isinstance(preview, ToolMessage)
    assert preview.content.startswith(BIG[:2_000])
    assert preview.content.endswith(f"Full output: {uri}")
    assert len(preview.content) < 2_200
    assert model.requests[0].tool_names == ["fetch_report"]
    assert sorted(model.requests[1].tool_names) == ["fetch_report", "read_artifact"]
    # Request 3: the model read exactly the slice it asked for, sent whole.
    read = model.requests[2].messages[-1]
    assert isinstance(read, ToolMessage) and not read.is_error
    assert read.content.startswith(BIG[2_000:2_024])
    assert "offset=2024" in read.content
    # The log keeps the full output; the artifact holds it too.
    full = next(m for m in conv.messages if isinstance(m, ToolMessage) and m.tool_call_id == "big1")
    assert full.content == BIG
    assert conv.read_artifact("big1") == BIG
    if store is not None:
        assert store.read_artifact(conv.id, "big1", 10, 5) == BIG[10:15]
        store.close()


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("artifact://someone-else/big1", "another conversation"),
        ("artifact://{conv}/../big1", "not an artifact name"),
        ("artifact://{conv}//etc/passwd", "not an artifact name"),
        ("/etc/passwd", "not an artifact URI"),
        ("artifact://{conv}/", "not of the form"),
        ("file:///etc/passwd", "not an artifact URI"),
    ],
)
async def test_read_artifact_refuses_what_is_not_this_conversations(uri: str, why: str) -> None:
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="big1", name="fetch_report", arguments={})]),
            lambda request: read_call("r1", uri.format(conv=conv.id)),
            "ok",
        ]
    )
    conv = Conversation(config=ConversationConfig(model=model, tools=[fetch_report]))
    conv.continuation.request("go").prompt_conversation()
    await _turn(conv)
    refused = model.requests[2].messages[-1]
    assert isinstance(refused, ToolMessage) and refused.is_error
    assert "refused" in refused.content and why in refused.content
    assert BIG[:50] not in refused.content


def test_uri_parser_accepts_only_this_conversation() -> None:
    assert parse_artifact_uri("artifact://c1/call_7", "c1") == "call_7"
    for bad in ("artifact://c2/call_7", "artifact://c1/a/b", "artifact://c1/..", "artifact://c1/~x", "c1/call_7"):
        with pytest.raises(ValueError, match="refused"):
            parse_artifact_uri(bad, "c1")


async def test_no_preview_no_reader_and_small_outputs_untouched() -> None:
    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="s1", name="fetch_report", arguments={})]), "fine"])
    conv = Conversation(
        config=ConversationConfig(model=model, tools=[fetch_report], context=ContextSettings(tool_preview_chars=50_000))
    )
    conv.continuation.request("go").prompt_conversation()
    await _turn(conv)
    assert model.requests[1].messages[-1].content == BIG
    assert model.requests[1].tool_names == ["fetch_report"]


def test_a_tool_output_the_budget_drops_is_no_artifact_of_the_request() -> None:
    """``ContextReport.artifacts`` lists the outputs sent as previews; before, a large output the budget then
    dropped was listed too (and the engine offers read_artifact whenever that list is not empty)."""
    from threadline import MessageList, user
    from threadline.context import ContextBuilder

    log = MessageList(
        [
            user("u1"),
            AssistantMessage(tool_calls=[ToolCall(id="big", name="t", arguments={})]),
            ToolMessage(tool_call_id="big", tool_name="t", content="B" * 5000),
            AssistantMessage(tool_calls=[ToolCall(id="small", name="t", arguments={})]),
            ToolMessage(tool_call_id="small", tool_name="t", content="ok"),
        ]
    )
    built = ContextBuilder(ContextSettings(max_messages=3)).build(log, conversation_id="c")
    sent = [message.tool_call_id for message in built.messages if isinstance(message, ToolMessage)]
    assert sent == ["small"]
    assert built.report.artifacts == []

    wide = ContextBuilder(ContextSettings(max_messages=10)).build(log, conversation_id="c")
    assert [uri.rsplit("/", 1)[-1] for uri in wide.report.artifacts] == ["big"]


async def test_artifacts_saved_before_the_conversation_got_a_store_are_read_from_that_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A conversation that starts in memory and is then given a store: before, the artifacts saved in memory were
    marked saved but never written to the store, so read_artifact on the URI the model had been shown failed."""
    from threadline import open_store

    def read_more(request):  # type: ignore[no-untyped-def]
        result = next(m for m in request.messages if isinstance(m, ToolMessage) and m.tool_call_id == "big1")
        return read_call("r1", result.content.rsplit("Full output: ", 1)[1], offset=4_000, limit=22)

    fetch = AssistantMessage(tool_calls=[ToolCall(id="big1", name="fetch_report", arguments={})])
    model = ScriptedModel([fetch, "Got it.", read_more, "Read more."])
    conv = llm.model(model).tools(fetch_report).request("Fetch the report.").prompt_conversation()
    await _turn(conv)
    store = open_store(f"sqlite:///{tmp_path / 'later.db'}")
    later = conv.continuation.store(store).request("Read more of it.").prompt_conversation()
    await _turn(later)
    read = later.messages[-2]
    assert isinstance(read, ToolMessage) and read.tool_name == "read_artifact"
    assert not read.is_error and read.content.startswith(BIG[4_000:4_022])
    assert store.read_artifact(conv.id, "big1") == BIG
    store.close()


@pytest.mark.parametrize(("extra", "previewed"), [(50, False), (400, True)])
async def test_an_output_is_previewed_only_when_the_preview_is_shorter(extra: int, previewed: bool) -> None:
    """Before, an output just over the preview size (2,050 characters) went out as a longer preview plus an
    artifact link and a read_artifact tool: more to send, and a round trip to read 50 characters."""
    output = "x" * (2_000 + extra)

    def fetch() -> str:
        """Fetch it."""
        return output

    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="f1", name="fetch", arguments={})]), "Done."])
    conv = llm.model(model).tools(fetch).request("Fetch it.").prompt_conversation()
    await _turn(conv)
    sent = model.requests[1].messages[-1]
    assert isinstance(sent, ToolMessage)
    if previewed:
        assert len(sent.content) < len(output) and "Full output: artifact://" in sent.content
        assert "read_artifact" in model.requests[1].tool_names
    else:
        assert sent.content == output and model.requests[1].tool_names == ["fetch"]
