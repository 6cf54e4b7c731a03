"""Runs: a directive carried out as an ordered list of nodes, in run mode, resumable from the log alone.

``Run(conversation, directive, nodes=[Node(id, brief), ...])`` executes the nodes in order. For each node it appends
a user message opening the node, then runs one turn in ``run`` mode with the directive, the node brief and the step
context injected after the system prefix. Every message of the run is tagged with ``run_id`` and ``node_id``.

The run's definition (directive and nodes) is written to the log as a UI-only event when the run starts, so
``Run.resume(conversation_id, store)`` needs nothing else: it reads from the log which nodes finished (a node is
finished once an answer without tool calls, tagged with it, follows its opening message) and continues with the
first unfinished one — also after a ``kill -9`` in the middle of a node, whose dangling tool calls the next turn
answers as ``interrupted``.

A node whose turn ends with tool calls waiting (for a person's decision or a result from outside:
docs/architecture.md#tool-calls-that-wait) stops the run there: `RunResult.awaiting` lists the calls and the node
stays unfinished. Once they are decided (`Conversation.approve`, ``deny``, ``submit_result`` on ``run.conversation``,
or on the conversation loaded in another process), running the run again, or ``Run.resume(...)``, goes on: the node's
next turn runs the approved calls first, and the later nodes follow.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._ids import new_id
from ._sync import run_sync
from .context import RunBrief
from .conversation import Conversation, ConversationConfig
from .engine import TurnResult
from .errors import StoreError, UserError
from .message_list import AwaitingCall, call_waits
from .message_types import AssistantMessage, Message, MessageMeta, SystemMessage, UserMessage
from .pricing.cost import Cost
from .pricing.prices import log_cost
from .tracing import hooks as tracing

if TYPE_CHECKING:
    from .store.capabilities import ConversationStore

__all__ = ["Node", "NodeState", "Run", "RunResult"]

NodeState = Literal["pending", "started", "done"]
StepContext = Callable[["Node", "Run"], "str | None"]


@dataclass(frozen=True, slots=True)
class Node:
    """One step of a run: an id unique within the run and a brief saying what to do."""

    id: str
    brief: str


@dataclass(slots=True)
class RunResult:
    """How a run ended: which nodes are done, which are not, the messages this call added, the tool calls that
    stopped it to wait (``awaiting``: decide them, then run the run again), and the spending limit that stopped it
    (``budget``: why, in words)."""

    run_id: str
    completed: list[str]
    pending: list[str]
    new_messages: list[Message] = field(default_factory=list)
    awaiting: list[AwaitingCall] = field(default_factory=list)
    budget: str | None = None

    @property
    def finished(self) -> bool:
        """Whether every node is done."""
        return not self.pending

    @property
    def stop_reason(self) -> str:
        """``"end"`` when every node is done, ``"awaiting"`` when tool calls wait (see `awaiting`), ``"budget"`` when
        a spending limit stopped a node's turn (see `budget`), else ``"unfinished"``."""
        if self.awaiting:
            return "awaiting"
        if self.budget is not None and self.pending:
            return "budget"
        return "end" if not self.pending else "unfinished"

    @property
    def cost(self) -> Cost:
        """What the model calls of this call cost (see `Conversation.cost` for the whole conversation)."""
        return log_cost(self.new_messages)


class Run:
    """Execute ``nodes`` in order in run mode.

    Args:
        conversation: Where the run happens (its log is the run's only state).
        directive: What the whole run is for; injected into every node's request.
        nodes: The steps, in order.
        run_id: The run's id (a new one by default).
        step_context: A text, or ``(node, run) -> text``, injected as the step context (default: progress so far).
    """

    def __init__(
        self,
        conversation: Conversation,
        directive: str,
        nodes: Sequence[Node],
        *,
        run_id: str | None = None,
        step_context: str | StepContext | None = None,
    ) -> None:
        if not directive or not isinstance(directive, str):
            raise UserError("a run needs a directive (a non-empty string)")
        node_list = list(nodes)
        if not node_list:
            raise UserError("a run needs at least one node")
        ids = [node.id for node in node_list]
        if len(set(ids)) != len(ids):
            raise UserError(f"node ids must be unique within a run, got {ids}")
        self.conversation = conversation
        self.directive = directive
        self.nodes = node_list
        self.run_id = run_id or new_id()
        self.step_context = step_context
        self._budget: str | None = None  # why a spending limit stopped the last node run, if one did

    # -- state from the log -----------------------------------------------------------------------------------
    def states(self) -> dict[str, NodeState]:
        """Each node's state, worked out from the log alone."""
        states: dict[str, NodeState] = {node.id: "pending" for node in self.nodes}
        for message in self.conversation.messages:
            meta = message.meta
            if meta.run_id != self.run_id or meta.node_id not in states:
                continue
            node_id = meta.node_id
            if isinstance(message, UserMessage):
                if states[node_id] == "pending":
                    states[node_id] = "started"
            elif (
                isinstance(message, AssistantMessage)
                and not message.tool_calls
                and message.error is None
                and states[node_id] == "started"
            ):
                states[node_id] = "done"
        return states

    def _started(self) -> bool:
        return any(
            isinstance(message, SystemMessage) and message.meta.run_id == self.run_id and "run" in message.meta.ui
            for message in self.conversation.messages
        )

    # -- execution --------------------------------------------------------------------------------------------
    async def iterate(self) -> AsyncIterator[Message]:
        """Run the unfinished nodes; yield every new message as it is recorded. A node whose turn ends with tool
        calls waiting stops the run there (see `RunResult.awaiting`).

        The run holds its conversation from start to end (`Conversation.hold`): no other turn gets between nodes.
        """
        conversation = self.conversation
        self._budget = None
        async with conversation.hold():
            steps = self._nodes(conversation)
            if tracing.tracer is not None:  # one span around the run's turns
                steps = tracing.tracer.workflow(self, steps)
            async with aclosing(steps):  # a caller that stops reading ends the node's turn (and its spans) now
                async for message in steps:
                    yield message

    async def _nodes(self, conversation: Conversation) -> AsyncGenerator[Message, None]:
        if conversation.config.mode != "run":
            conversation.apply_config_deltas({"mode": "run"})
        if not self._started():
            marker = SystemMessage(
                content=f"RUN {self.run_id} START: {self.directive}",
                meta=MessageMeta(
                    mode="run",
                    run_id=self.run_id,
                    include_in_context=False,
                    ui={"run": {"directive": self.directive, "nodes": [[n.id, n.brief] for n in self.nodes]}},
                ),
            )
            conversation.host.record(marker)
            yield marker
        for position, node in enumerate(self.nodes):
            state = self.states()[node.id]
            if state == "done":
                continue
            meta = MessageMeta(mode="run", run_id=self.run_id, node_id=node.id)
            if state == "pending":
                opening = UserMessage(
                    content=f"NODE {node.id} ({position + 1} of {len(self.nodes)})\n{node.brief}", meta=meta
                )
                # record() answers calls a crash left unanswered in the previous node before this opening.
                conversation.host.record(opening)
                yield opening
            brief = RunBrief(
                directive=self.directive,
                node_brief=f"{node.id}: {node.brief}",
                step_context=self._step_context(node, position),
            )
            options = conversation.host.plan(run_brief=brief, meta=meta)
            turn = TurnResult()
            async for message in conversation.host.turn(options, turn):
                yield message
            if turn.stop_reason == "awaiting":
                return  # the node goes on once its calls are decided
            if turn.stop_reason == "budget":
                self._budget = turn.detail
                return  # a spending limit: the node stays unfinished

    async def run_async(self) -> RunResult:
        """Run the unfinished nodes to the end (async)."""
        added: list[Message] = []
        async for message in self.iterate():
            added.append(message)
        return self._result(added)

    def run(self) -> RunResult:
        """Run the unfinished nodes to the end (from synchronous code)."""
        return run_sync(self.run_async())

    def _result(self, added: list[Message]) -> RunResult:
        states = self.states()
        done = [n.id for n in self.nodes if states[n.id] == "done"]
        pending = [n.id for n in self.nodes if states[n.id] != "done"]
        awaiting = call_waits(self.conversation.messages).waiting if pending else []
        return RunResult(self.run_id, done, pending, added, awaiting, self._budget)

    def _step_context(self, node: Node, position: int) -> str | None:
        if isinstance(self.step_context, str):
            return self.step_context
        if callable(self.step_context):
            return self.step_context(node, self)
        done = [n.id for n in self.nodes[:position]]
        later = [n.id for n in self.nodes[position + 1 :]]
        return (
            f"Step {position + 1} of {len(self.nodes)}. Finished: {', '.join(done) or 'none'}. "
            f"Still to come: {', '.join(later) or 'none'}. Do only this step, then answer with its result."
        )

    # -- resumption -------------------------------------------------------------------------------------------
    @classmethod
    def resume(
        cls,
        conversation_id: str,
        store: ConversationStore,
        *,
        run_id: str | None = None,
        config: ConversationConfig | None = None,
        step_context: str | StepContext | None = None,
        **config_deltas: Any,
    ) -> Run:
        """Load a conversation and the run recorded in it (the latest run unless ``run_id`` is given).

        Args:
            conversation_id: The conversation to load from ``store``.
            store: Where it is kept.
            run_id: Which run to resume (default: the latest started in the log).
            config: The conversation config (model, tools…), which the store does not keep.
            step_context: As for `Run`.
            **config_deltas: Config fields to set, e.g. ``model=…``, ``tools=[…]``.

        Raises:
            StoreError: if the conversation or the run is not found.
        """
        conversation = Conversation.load(conversation_id, store, config)
        if config_deltas:
            conversation.apply_config_deltas(config_deltas)
        marker = _find_marker(conversation.messages, run_id)
        if marker is None:
            what = f"run {run_id!r}" if run_id else "any run"
            raise StoreError(f"conversation {conversation_id!r} has no record of {what}")
        definition = marker.meta.ui["run"]
        nodes = [Node(str(node_id), str(brief)) for node_id, brief in definition["nodes"]]
        return cls(
            conversation, str(definition["directive"]), nodes, run_id=marker.meta.run_id, step_context=step_context
        )


def _find_marker(messages: Iterable[Message], run_id: str | None) -> SystemMessage | None:
    found: SystemMessage | None = None
    for message in messages:
        if (
            isinstance(message, SystemMessage)
            and isinstance(message.meta.ui.get("run"), dict)
            and message.meta.run_id is not None
            and (run_id is None or message.meta.run_id == run_id)
        ):
            found = message
    return found
