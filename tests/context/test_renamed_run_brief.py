"""``RunBrief`` and ``run_brief=`` (issue 32, one word per idea): the old names ``RunContext`` and ``run_context=``
work for one release, with a warning naming the new one."""

from __future__ import annotations

import asyncio

import pytest

import threadline
import threadline.context
from threadline import ContextBuilder, Conversation, ConversationConfig, RunBrief, UserMessage
from threadline.testing import ScriptedModel

BRIEF = RunBrief(directive="Ship it", node_brief="n1: test", step_context="step 1 of 2")


def _contents(built: threadline.BuiltContext) -> list[str | None]:
    return [m.content for m in built.messages]


def test_old_class_name_warns_and_is_the_new_class() -> None:
    with pytest.warns(DeprecationWarning, match=r"threadline\.RunBrief"):
        assert threadline.RunContext is RunBrief
    with pytest.warns(DeprecationWarning, match=r"threadline\.context\.RunBrief"):
        assert threadline.context.RunContext is RunBrief  # type: ignore[attr-defined]


def test_build_accepts_the_old_keyword_and_builds_the_same_request() -> None:
    builder = ContextBuilder()
    log = [UserMessage(content="go")]
    new = builder.build(log, "run", run_brief=BRIEF)
    with pytest.warns(DeprecationWarning, match=r"ContextBuilder\.build\(run_brief=\)"):
        old = builder.build(log, "run", run_context=BRIEF)
    assert _contents(old) == _contents(new)
    assert "RUN_DIRECTIVE\nShip it" in _contents(new)
    with pytest.raises(TypeError, match="both run_brief= and its deprecated old name run_context="):
        builder.build(log, "run", run_brief=BRIEF, run_context=BRIEF)


def test_conversation_build_context_accepts_the_old_keyword() -> None:
    conv = Conversation(config=ConversationConfig(model=ScriptedModel([])))
    new = conv.build_context("run", run_brief=BRIEF)
    with pytest.warns(DeprecationWarning, match=r"Conversation\.build_context\(run_brief=\)"):
        old = conv.build_context("run", run_context=BRIEF)
    assert [m.content for m in old.messages] == [m.content for m in new.messages]
    with pytest.raises(TypeError, match="both run_brief= and its deprecated old name run_context="):
        conv.build_context("run", run_brief=BRIEF, run_context=BRIEF)


def test_a_turn_accepts_the_old_override_and_sends_the_brief() -> None:
    """``run_context=`` as a `TurnOptions` override of ``Conversation.run``/``run_sync`` is now ``run_brief=``."""
    model = ScriptedModel(["new", "old", "old async"])
    conv = Conversation(config=ConversationConfig(model=model, mode="run"))
    conv.run_sync(run_brief=BRIEF)
    with pytest.warns(DeprecationWarning, match=r"Conversation\.run_sync\(run_brief=\)") as caught:
        conv.run_sync(run_context=BRIEF)
    assert caught[0].filename == __file__  # the warning names the caller's line

    async def drive() -> None:
        async for _ in conv.run(run_context=BRIEF):
            pass

    with pytest.warns(DeprecationWarning, match=r"Conversation\.run\(run_brief=\)"):
        asyncio.run(drive())
    sent = [[m.content for m in request.messages] for request in model.requests]
    assert all("RUN_DIRECTIVE\nShip it" in contents for contents in sent)
    with pytest.raises(TypeError, match="both run_brief= and its deprecated old name run_context="):
        conv.run_sync(run_brief=BRIEF, run_context=BRIEF)
