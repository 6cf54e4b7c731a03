"""Lone surrogates through a real tool loop and into SQLite and PostgreSQL (issue 8, item 2): a tool returning a file
name that is not UTF-8, a model naming a tool or an argument with one, and store text outside messages (titles,
modes, metadata, artifacts, pages) — the turn finishes, the stored log validates and reloads, U+FFFD stands in."""

from __future__ import annotations

import os

import pytest

from threadline import AssistantMessage, Conversation, StoreError, ToolCall, ToolMessage, llm
from threadline.store import Store
from threadline.testing import ScriptedModel

BAD = os.fsdecode(b"report-\xff.txt")  # what os.listdir gives for that name: 'report-\udcff.txt'
FIXED = "report-\ufffd.txt"


def list_files() -> str:
    """List the files (one of them is not named in UTF-8)."""
    return BAD


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def test_a_tool_returning_a_lone_surrogate_finishes_the_turn_and_stores_a_valid_log(store: Store) -> None:
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="c1", name="list_files", arguments={})]), "done", "second answer"]
    )
    conv = llm.model(model).tools(list_files).store(store).request("list my files").prompt_conversation()
    assert conv.continuation.prompt() == "done"
    # The model was sent the cleaned text, and the log holds it.
    assert model.requests[1].messages[-1].content == FIXED
    assert conv.continuation.request("again").prompt() == "second answer"
    stored = store.load(conv.id)
    stored.validate()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert stored[2].content == FIXED
    assert stored == conv.messages


def test_a_model_naming_a_tool_and_an_argument_with_lone_surrogates(store: Store) -> None:
    model = ScriptedModel(
        [
            AssistantMessage(
                content=f"opening {BAD}",
                tool_calls=[
                    ToolCall(id="c1", name="read_file", arguments={"path": BAD}),
                    ToolCall(id=f"c2-{BAD}", name=f"read_{BAD}", arguments={BAD: 1}),
                ],
            ),
            "done",
        ]
    )
    conv = llm.model(model).tools(read_file).store(store).request(f"read {BAD}").prompt_conversation()
    assert conv.continuation.prompt() == "done"
    stored = store.load(conv.id)
    stored.validate()
    user, called, first, second, _ = stored
    assert user.content == f"read {FIXED}"
    assert called.content == f"opening {FIXED}"
    assert first.content == f"contents of {FIXED}"  # the tool itself received the cleaned argument
    assert isinstance(second, ToolMessage) and second.is_error  # no such tool: an error result, the loop goes on
    assert second.tool_call_id == f"c2-{FIXED}" and second.tool_name == f"read_{FIXED}"
    assert store.get_conversation(conv.id).title == f"read {FIXED}"
    # Reloaded and continued: the log is whole.
    again = Conversation.load(conv.id, store)
    assert again.messages == stored


def test_store_text_outside_messages_follows_the_rule(store: Store) -> None:
    info = store.create_conversation(title=BAD, metadata={BAD: [BAD, {"k": BAD}]})
    assert info.title == FIXED
    assert store.get_conversation(info.id).metadata == {FIXED: [FIXED, {"k": FIXED}]}
    store.update_metadata(info.id, title=f"new {BAD}", active_mode=BAD, metadata={"x": BAD})
    updated = store.get_conversation(info.id)
    assert updated.title == f"new {FIXED}"
    assert updated.active_mode == FIXED
    assert updated.metadata == {FIXED: [FIXED, {"k": FIXED}], "x": FIXED}
    store.save_artifact(info.id, "out", f"full output: {BAD}")
    assert store.read_artifact(info.id, "out") == f"full output: {FIXED}"
    page = store.save_page(BAD, f"<p>{BAD}</p>", f"/* {BAD} */", f"// {BAD}", conversation_id=info.id)
    for saved in (page, store.get_page(page.id)):
        assert (saved.title, saved.html, saved.css, saved.js) == (
            FIXED,
            f"<p>{FIXED}</p>",
            f"/* {FIXED} */",
            f"// {FIXED}",
        )
    store.cache_put("key", {"text": BAD})
    assert store.cache_get("key") == {"text": FIXED}


def test_an_id_holding_a_lone_surrogate_is_a_clear_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="lone surrogate"):
        store.create_conversation(id=BAD)
    with pytest.raises(StoreError, match=r"lone surrogate|no conversation"):
        store.get_conversation(BAD)
    # The store is still usable after the refusal.
    assert store.create_conversation(title="fine").title == "fine"
