"""A user's own backend that is a `ConversationStore` and nothing more (issue 32): a conversation runs on it,
through a tool turn, and reloads from it; what needs more of a store (the cache, Pages, the viewer) refuses it with
an error naming the capability and the methods it lacks, never an AttributeError from deep inside. Every built-in
store is every capability."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import Conversation
from threadline.errors import ConversationBusy, StoreError, UserError
from threadline.generate import generate_text
from threadline.message_list import MessageList
from threadline.message_types import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from threadline.store import (
    ArtifactStore,
    BrowsableStore,
    CacheStore,
    ConversationInfo,
    ConversationStore,
    PageStore,
    Store,
)
from threadline.testing import ScriptedModel
from threadline.toolboxes import Pages

CAPABILITIES = [ConversationStore, BrowsableStore, ArtifactStore, CacheStore, PageStore]


class DictStore(ConversationStore):
    """A backend of the kind a user writes: dicts in memory, the six methods `ConversationStore` asks for."""

    url = "dicts://"

    def __init__(self) -> None:
        self.infos: dict[str, ConversationInfo] = {}
        self.logs: dict[str, list[Message]] = {}

    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        cid = id or uuid.uuid4().hex
        if cid in self.infos:
            raise StoreError(f"conversation {cid!r} exists")
        now = datetime.now(UTC)
        self.infos[cid] = ConversationInfo(cid, title, now, now, metadata=dict(metadata or {}))
        self.logs[cid] = []
        return self.get_conversation(cid)

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        if conversation_id not in self.infos:
            raise StoreError(f"no conversation {conversation_id!r}")
        return dataclasses.replace(self.infos[conversation_id], message_count=len(self.logs[conversation_id]))

    def update_metadata(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        active_mode: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationInfo:
        info = self.get_conversation(conversation_id)
        self.infos[conversation_id] = dataclasses.replace(
            info,
            title=info.title if title is None else title,
            active_mode=info.active_mode if active_mode is None else active_mode,
            metadata={**info.metadata, **(metadata or {})},
            updated_at=datetime.now(UTC),
        )
        return self.get_conversation(conversation_id)

    def load(self, conversation_id: str) -> MessageList:
        self.get_conversation(conversation_id)
        return MessageList(list(self.logs[conversation_id]))

    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        self.get_conversation(conversation_id)
        log = self.logs[conversation_id]
        stored = {message.id: message for message in log}
        fresh: list[Message] = []
        for message in messages:
            if message.id in stored:
                if stored[message.id] != message:
                    raise StoreError(f"a different message {message.id!r} is stored already")
                continue
            fresh.append(message)
        if not fresh:
            return  # a repeat, whatever the count
        if expected_count is not None and expected_count != len(log):
            raise ConversationBusy(f"{len(log)} messages stored, the writer expected {expected_count}")
        log.extend(fresh)

    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        info = self.get_conversation(conversation_id)
        log = self.logs[conversation_id]
        cut = next((i + 1 for i, message in enumerate(log) if message.id == at), None)
        if cut is None:
            raise StoreError(f"no message {at!r}")
        while cut < len(log) and isinstance(log[cut], ToolMessage):
            cut += 1
        fork = self.create_conversation(
            title or f"{info.title} (fork)",
            {"forked_from": {"conversation": conversation_id, "message": at}},
            id=id,
        )
        self.logs[fork.id] = log[:cut]
        return self.get_conversation(fork.id)


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"22 C in {city}"


def weather_model(*answers: str) -> ScriptedModel:
    call = ToolCall(id=f"call_{uuid.uuid4().hex[:8]}", name="get_weather", arguments={"city": "Paris"})
    return ScriptedModel([AssistantMessage(tool_calls=[call]), *answers])


def converse(store: ConversationStore, model: ScriptedModel, prompt: str, *tools: Any) -> Conversation:
    """A new conversation kept in ``store``, after one turn on ``prompt``."""
    conversation = Conversation(store=store)
    builder = conversation.continuation.model(model)
    if tools:
        builder = builder.tools(*tools)
    builder.request(prompt).prompt()
    return conversation


def test_a_conversation_runs_a_tool_turn_on_a_store_of_its_own_and_reloads_from_it() -> None:
    store = DictStore()
    model = weather_model("It is 22 C in Paris.")
    conversation = converse(store, model, "Weather in Paris?", get_weather)

    assert [type(m).__name__ for m in conversation.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert "22 C in Paris" in str(conversation.messages[2].content)
    stored = store.load(conversation.id)
    assert stored == conversation.messages
    stored.validate()
    assert store.get_conversation(conversation.id).title == "Weather in Paris?"

    reloaded = Conversation.load(conversation.id, store)
    reloaded.messages.validate()
    assert reloaded.messages == conversation.messages

    # A second turn on the reloaded conversation appends to the same log, under the store's (default) lease.
    reloaded.continuation.model(ScriptedModel(["Still 22 C."])).request("And now?").prompt()
    assert len(store.load(conversation.id)) == 6
    store.load(conversation.id).validate()


def test_a_fork_and_a_mode_are_kept_in_it() -> None:
    store = DictStore()
    conversation = converse(store, ScriptedModel(["Hi."]), "Hello")
    conversation.apply_config_deltas({"mode": "chat"})
    assert store.get_conversation(conversation.id).active_mode == "chat"
    fork = conversation.fork()
    assert fork.store is store
    assert store.load(fork.id) == conversation.messages
    assert store.get_conversation(fork.id).metadata["forked_from"]["conversation"] == conversation.id


def test_another_writer_behind_the_conversations_back_is_refused_by_its_count() -> None:
    store = DictStore()
    conversation = converse(store, ScriptedModel(["Hi."]), "Hello")
    store.append(conversation.id, [UserMessage(content="written by someone else")])
    with pytest.raises(ConversationBusy):
        conversation.record(UserMessage(content="mine"))
    assert len(store.load(conversation.id)) == 3


def test_large_tool_outputs_stay_in_memory_when_the_store_keeps_no_artifacts() -> None:
    store = DictStore()

    def big() -> str:
        """A large output."""
        return "x" * 5_000

    call = AssistantMessage(tool_calls=[ToolCall(id="call_big", name="big", arguments={})])
    model = ScriptedModel([call, "Done."])
    conversation = converse(store, model, "Go", big)
    # The second request carried a preview and an artifact URI; the artifact is readable from the conversation.
    assert "artifact://" in str(model.requests[-1].messages)
    assert conversation.host.read_artifact("call_big") == "x" * 5_000
    assert len(store.load(conversation.id)) == 4


async def test_generate_text_logs_a_run_in_it() -> None:
    store = DictStore()
    result = await generate_text(model=ScriptedModel(["Hello."]), prompt="Hi", store=store)
    assert result.conversation_id is not None
    assert [m.content for m in store.load(result.conversation_id)] == ["Hi", "Hello."]


async def test_the_cache_refuses_it_naming_cache_store() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(UserError, match=r"cache= takes a store that is a CacheStore") as caught:
        await generate_text(model=model, prompt="Hi", cache=DictStore())  # type: ignore[arg-type]
    assert "DictStore lacks CacheStore (no cache_get, cache_put, cache_get_raw)" in str(caught.value)
    assert model.requests == []


def test_pages_refuses_it_naming_page_store() -> None:
    with pytest.raises(UserError, match=r"Pages needs a store that is a PageStore") as caught:
        Pages(DictStore())  # type: ignore[arg-type]
    assert "PageStore (no save_page, get_page, list_pages)" in str(caught.value)


def test_the_viewer_refuses_it_naming_what_it_lacks() -> None:
    pytest.importorskip("starlette")
    from threadline.web.app import create_app

    with pytest.raises(UserError, match="the viewer needs a store") as caught:
        create_app(DictStore())  # type: ignore[arg-type]
    text = str(caught.value)
    assert "BrowsableStore (no list_conversations, list_summaries" in text
    assert "ArtifactStore (no save_artifact, read_artifact)" in text
    assert "PageStore (no save_page, get_page, list_pages)" in text
    assert "lacks ConversationStore" not in text and "; ConversationStore" not in text


def test_an_object_that_only_looks_like_a_store_is_told_what_it_lacks() -> None:
    """A class that does not subclass `ConversationStore` must write its defaults too; the error says which."""

    class Bare:
        url = "bare://"

    with pytest.raises(UserError) as caught:
        Pages(Bare())  # type: ignore[arg-type]
    assert "Bare lacks PageStore (no save_page, get_page, list_pages)" in str(caught.value)
    store = DictStore()
    assert isinstance(store, ConversationStore)
    assert not isinstance(Bare(), ConversationStore)


def test_the_own_store_is_a_conversation_store_and_nothing_more() -> None:
    store = DictStore()
    assert [isinstance(store, capability) for capability in CAPABILITIES] == [True, False, False, False, False]


def test_a_subclass_missing_a_method_cannot_be_made() -> None:
    class Half(ConversationStore):
        url = "half://"

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]


def test_every_builtin_store_is_every_capability(any_store: Store) -> None:
    for capability in CAPABILITIES:
        assert isinstance(any_store, capability), capability.__name__
    # And statically: a Store is accepted wherever a capability is asked for (mypy checks these lines too).
    as_conversation: ConversationStore = any_store
    as_browsable: BrowsableStore = any_store
    as_artifacts: ArtifactStore = any_store
    as_cache: CacheStore = any_store
    as_pages: PageStore = any_store
    assert {id(s) for s in (as_conversation, as_browsable, as_artifacts, as_cache, as_pages)} == {id(any_store)}
