"""Runs: nodes executed in order in run mode, every message tagged, resumable from the log alone — also after the
process running it is killed with SIGKILL in the middle of a node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    ModelError,
    StoreError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    open_store,
)
from threadline.runs import Node, Run
from threadline.testing import ScriptedModel

NODES = [Node("gather", "Collect the figures."), Node("draft", "Write the draft."), Node("check", "Check it.")]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_nodes_run_in_order_with_the_run_brief_injected_and_messages_tagged() -> None:
    model = ScriptedModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="add", arguments={"a": 2, "b": 3})]),
            "Figures: 5.",
            "Draft written.",
            "Checked.",
        ]
    )
    conv = Conversation(config=ConversationConfig(model=model, tools=[add], persona="You are a careful analyst."))
    result = Run(conv, "Produce the quarterly report.", NODES).run()

    assert result.finished and result.completed == ["gather", "draft", "check"] and result.pending == []
    first = model.requests[0].messages
    assert "MODE\n- active: run\n" in first[0].content and "You are a careful analyst." in first[0].content
    assert [m.content for m in first[1:4]] == [
        "RUN_DIRECTIVE\nProduce the quarterly report.",
        "NODE_BRIEF\ngather: Collect the figures.",
        "STEP_CONTEXT\nStep 1 of 3. Finished: none. Still to come: draft, check. Do only this step, then answer "
        "with its result.",
    ]
    assert first[4].content == "NODE gather (1 of 3)\nCollect the figures."
    third = model.requests[2].messages  # the draft node sees what gather produced
    assert third[2].content == "NODE_BRIEF\ndraft: Write the draft."
    assert "Figures: 5." in [m.content for m in third]
    # Every message of the run carries the run and its node; the run's definition is a UI-only event.
    tagged = [m for m in conv.messages if not isinstance(m, SystemMessage)]
    assert all(m.meta.run_id == result.run_id and m.meta.mode == "run" for m in tagged)
    assert [m.meta.node_id for m in tagged] == ["gather"] * 4 + ["draft"] * 2 + ["check"] * 2
    marker = conv.messages[0]
    assert isinstance(marker, SystemMessage) and not marker.meta.include_in_context
    conv.messages.validate()


def test_a_failed_node_is_continued_on_resume_and_finished_nodes_are_not_rerun(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    model = ScriptedModel(["gathered", ModelError("upstream 503", type="server", partial="Draft: the quar")])
    conv = Conversation(config=ConversationConfig(model=model), store=store)
    run = Run(conv, "Report", NODES)
    with pytest.raises(ModelError):
        run.run()
    assert run.states() == {"gather": "done", "draft": "started", "check": "pending"}

    resumed_model = ScriptedModel(["Draft: the quarter went well.", "Checked."])
    resumed = Run.resume(conv.id, store, model=resumed_model)
    assert resumed.run_id == run.run_id and resumed.nodes == NODES and resumed.directive == "Report"
    result = resumed.run()
    assert result.finished
    assert len(resumed_model.requests) == 2  # gather was not run again
    retry = resumed_model.requests[0].messages
    assert retry[2].content == "NODE_BRIEF\ndraft: Write the draft."
    assert "Draft: the quar\n[LLM_ERROR type=server message=upstream 503]" in [m.content for m in retry]
    # No second opening message for the draft node.
    reloaded = store.load(conv.id)
    openings = [m for m in reloaded if isinstance(m, UserMessage) and m.meta.node_id == "draft"]
    assert len(openings) == 1
    reloaded.validate()
    store.close()


def test_resume_without_a_run_and_bad_definitions_give_clear_errors(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    conv = Conversation(store=store)
    conv.add(UserMessage(content="hello"))
    with pytest.raises(StoreError, match="no record of any run"):
        Run.resume(conv.id, store)
    with pytest.raises(StoreError, match="no conversation"):
        Run.resume("nope", store)
    with pytest.raises(UserError, match="unique"):
        Run(conv, "x", [Node("a", "1"), Node("a", "2")])
    with pytest.raises(UserError, match="at least one node"):
        Run(conv, "x", [])
    with pytest.raises(UserError, match="directive"):
        Run(conv, "", NODES)
    store.close()


RUNNER = textwrap.dedent(
    """
    import sys, time
    from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, open_store
    from threadline.runs import Node, Run
    from threadline.testing import ScriptedModel

    def slow_lookup(topic: str) -> str:
        '''Look a topic up (slowly).'''
        print("TOOL-STARTED", flush=True)
        time.sleep(60)
        return "never"

    store = open_store(sys.argv[1])
    model = ScriptedModel([
        "gathered",
        AssistantMessage(tool_calls=[ToolCall(id="slow1", name="slow_lookup", arguments={"topic": "q3"})]),
    ])
    conv = Conversation(config=ConversationConfig(model=model, tools=[slow_lookup]), store=store)
    print("CONVERSATION", conv.id, flush=True)
    nodes = [Node("gather", "Collect."), Node("draft", "Write."), Node("check", "Check.")]
    Run(conv, "Report", nodes).run()
    """
)


def test_a_run_killed_mid_node_resumes_from_the_log(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    conversation_id = None
    with subprocess.Popen([sys.executable, str(script), url], stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        for line in process.stdout:
            if line.startswith("CONVERSATION"):
                conversation_id = line.split()[1]
            if line.startswith("TOOL-STARTED") or time.monotonic() > deadline:
                break
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert conversation_id is not None

    store = open_store(url)
    log = store.load(conversation_id)
    # The draft node's tool call was stored before the tool ran; its result never was.
    assert isinstance(log[-1], AssistantMessage) and log[-1].tool_calls[0].id == "slow1"

    def slow_lookup(topic: str) -> str:
        """Look a topic up (slowly)."""
        return "q3 figures"

    model = ScriptedModel(["Draft done.", "Check done."])
    resumed = Run.resume(conversation_id, store, model=model, tools=[slow_lookup])
    assert resumed.states() == {"gather": "done", "draft": "started", "check": "pending"}
    result = resumed.run()
    assert result.finished
    log = store.load(conversation_id)
    log.validate()
    repaired = next(m for m in log if isinstance(m, ToolMessage) and m.tool_call_id == "slow1")
    assert repaired.is_error and repaired.content.startswith("interrupted")
    assert repaired.meta.node_id == "draft" and repaired.meta.run_id == resumed.run_id
    assert [m.content for m in log if isinstance(m, AssistantMessage) and not m.tool_calls] == [
        "gathered",
        "Draft done.",
        "Check done.",
    ]
    assert len(model.requests) == 2
    store.close()
