"""Approval entries in the log (docs/file-format.md#approvals), as properties over generated logs: every log a
conversation can write with waits and decisions validates and survives JSON byte for byte (version "2.2" exactly
when it holds an entry), and every misplaced entry is refused naming its rule."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import (
    ApprovalMessage,
    AssistantMessage,
    MessageList,
    MessageListDeserializationError,
    ProtocolError,
    ToolCall,
    ToolMessage,
    user,
)
from threadline.message_list import call_waits
from threadline.message_types import Message, arguments_sha256

TOOLS = ["pay", "send_mail", "lookup", "wipe_disk"]
PEOPLE = ["alice", "bob", "ops team", "Zoë"]
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
argument_values = st.one_of(
    st.integers(-5, 5), texts, st.booleans(), st.none(), st.lists(st.integers(0, 9), max_size=3)
)
arguments = st.dictionaries(st.sampled_from(["amount", "to", "path", "flags"]), argument_values, max_size=3)

COMPLETE = ["plain", "approved", "denied", "external", "rule", "started", "restarted"]
"""What happens to a call in a turn that went on ("started": approved, started, its result; "restarted": it stopped
while it ran, was requested again, approved again, started again, and gave its result)."""
OPEN = [
    "waiting",
    "waiting_external",
    "approved_unrun",
    "denied_unanswered",
    "dangling",
    "started_unrun",
    "rerequested",
]
"""What a call may still be doing when the log ends (the turn ended "awaiting", or a crash)."""


@dataclass
class Plan:
    """What happens to one call: its scenario and the details of its entries."""

    call: ToolCall
    scenario: str
    by: str | None = None
    reason: str | None = None
    edited: dict[str, Any] | None = None
    scope: str = "call"


@dataclass
class Built:
    """A generated log and where its targets' entries are (call id -> the call's entries and result)."""

    messages: list[Message]
    targets: dict[str, list[Message]] = field(default_factory=dict)

    def log(self) -> MessageList:
        return MessageList(self.messages)


def request(call: ToolCall, kind: str = "approval", reason: str | None = None) -> ApprovalMessage:
    return ApprovalMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        state="requested",
        kind=kind,  # type: ignore[arg-type]
        reason=reason or f"{call.name} needs a decision",
        arguments_sha256=arguments_sha256(call),
    )


def decision(call: ToolCall, state: str, **fields: Any) -> ApprovalMessage:
    return ApprovalMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        state=state,  # type: ignore[arg-type]
        arguments_sha256=arguments_sha256(call),
        **fields,
    )


def result(call: ToolCall, content: str = "done", is_error: bool = False) -> ToolMessage:
    return ToolMessage(tool_call_id=call.id, tool_name=call.name, content=content, is_error=is_error)


def events(plan: Plan) -> list[Message]:
    """The entries and result of one call, in their order."""
    call = plan.call
    scenario = plan.scenario
    if scenario == "plain":
        return [result(call)]
    if scenario == "dangling":
        return []
    if scenario in ("external", "waiting_external"):
        entries: list[Message] = [request(call, "external", plan.reason)]
        return entries + ([result(call, "from outside")] if scenario == "external" else [])
    if scenario == "rule":
        return [decision(call, "approved", by="rule"), result(call)]
    if scenario in ("started", "started_unrun", "rerequested", "restarted"):
        approved = [
            request(call, reason=plan.reason),
            decision(call, "approved", by=plan.by),
            decision(call, "started"),
        ]
        if scenario == "started":
            return [*approved, result(call)]
        if scenario == "started_unrun":
            return approved
        again = [*approved, request(call, reason="it may have run")]
        if scenario == "rerequested":
            return again
        return [*again, decision(call, "approved", by=plan.by), decision(call, "started"), result(call)]
    entries = [request(call, reason=plan.reason)]
    if scenario == "waiting":
        return entries
    if scenario in ("approved", "approved_unrun"):
        entries.append(
            decision(call, "approved", by=plan.by, reason=plan.reason, arguments=plan.edited, scope=plan.scope)
        )
        return entries + ([result(call)] if scenario == "approved" else [])
    assert scenario in ("denied", "denied_unanswered")
    entries.append(decision(call, "denied", by=plan.by, reason=plan.reason))
    return entries + ([result(call, f"denied by {plan.by}", True)] if scenario == "denied" else [])


@st.composite
def calls(draw: st.DrawFn, prefix: str, count: int) -> list[ToolCall]:
    made = []
    for number in range(count):
        name = draw(st.sampled_from(TOOLS))
        if draw(st.integers(0, 9)) == 0:  # the model wrote arguments that are not JSON: the hash is of its text
            made.append(ToolCall(id=f"{prefix}-{number}", name=name, raw_arguments=draw(texts.filter(bool))))
        else:
            made.append(ToolCall(id=f"{prefix}-{number}", name=name, arguments=draw(arguments)))
    return made


@st.composite
def plans(draw: st.DrawFn, call: ToolCall, scenarios: list[str], by_rule: set[str]) -> Plan:
    allowed = [s for s in scenarios if s != "rule" or call.name in by_rule]
    scenario = draw(st.sampled_from(allowed))
    plan = Plan(call, scenario, by=draw(st.none() | st.sampled_from(PEOPLE)), reason=draw(st.none() | texts))
    if scenario in ("approved", "approved_unrun"):
        plan.edited = draw(st.none() | arguments)
        plan.scope = draw(st.sampled_from(["call", "conversation"]))
    return plan


@st.composite
def interleaved(draw: st.DrawFn, groups: list[list[Message]]) -> list[Message]:
    """The calls' entries mixed in any order that keeps each call's own order (as parallel calls settle)."""
    slots = [index for index, group in enumerate(groups) for _ in group]
    order = draw(st.permutations(slots))
    queues = [list(group) for group in groups]
    return [queues[index].pop(0) for index in order]


def add_turn(
    draw: st.DrawFn, built: Built, planned: list[Plan], by_rule: set[str], *, ends: bool, text: str | None = "ok"
) -> None:
    """Append a user message, the assistant's calls and their entries (and a reply when ``ends``)."""
    built.messages.append(user(draw(texts)))
    built.messages.append(AssistantMessage(tool_calls=[plan.call for plan in planned]))
    groups = [events(plan) for plan in planned]
    built.messages.extend(draw(interleaved(groups)))
    for plan, group in zip(planned, groups, strict=True):
        built.targets[plan.call.id] = group
        if plan.scenario in ("approved", "approved_unrun") and plan.scope == "conversation":
            by_rule.add(plan.call.name)
    if ends:
        built.messages.append(AssistantMessage(content=text))


Target = Callable[[st.DrawFn, Built, set[str]], None]


@st.composite
def logs(draw: st.DrawFn, target: Target | None = None, *, waits: bool = True) -> Built:
    """A valid log of a few turns whose calls wait and are decided in every way a conversation records; the last
    turn may end with calls that wait or dangle. ``target`` adds its own complete turns at a random place."""
    built = Built([])
    by_rule: set[str] = set()
    turns = draw(st.integers(0, 4))
    place = draw(st.integers(0, turns))
    for number in range(turns + 1):
        if number == place and target is not None:
            target(draw, built, by_rule)
        if number == turns:
            break
        last = number == turns - 1
        if draw(st.booleans()):
            built.messages.append(user(draw(texts)))
            built.messages.append(AssistantMessage(content=draw(texts) or "hi"))
            continue
        made = draw(calls(f"t{number}", draw(st.integers(1, 3))))
        scenarios = COMPLETE if waits else ["plain"]
        ends = not last or target is not None or draw(st.booleans())
        if not ends and waits:
            scenarios = COMPLETE + OPEN
        planned = [draw(plans(call, scenarios, by_rule)) for call in made]
        add_turn(draw, built, planned, by_rule, ends=ends)
    return built


def target_turn(scenario: str, *, tool: str = "pay", scope: str = "call", follow: bool = False) -> Target:
    """A complete turn with one call ``target`` of ``scenario`` (and, with ``follow``, a next turn with a call)."""

    def add(draw: st.DrawFn, built: Built, by_rule: set[str]) -> None:
        call = ToolCall(id="target", name=tool, arguments=draw(arguments))
        plan = Plan(call, scenario, by=draw(st.sampled_from(PEOPLE)), reason=draw(st.none() | texts), scope=scope)
        add_turn(draw, built, [plan], by_rule, ends=True)
        if follow:
            later = Plan(ToolCall(id="later", name="lookup", arguments={}), "plain")
            add_turn(draw, built, [later], by_rule, ends=True)

    return add


def rule_turns(draw: st.DrawFn, built: Built, by_rule: set[str]) -> None:
    """A tool no other turn calls approved for the conversation, then a later call of it approved by rule (target
    "target")."""
    first = Plan(ToolCall(id="granted", name="purge", arguments={}), "approved", by="alice", scope="conversation")
    add_turn(draw, built, [first], by_rule, ends=True)
    later = Plan(ToolCall(id="target", name="purge", arguments=draw(arguments)), "rule")
    add_turn(draw, built, [later], by_rule, ends=True)


CASES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- valid logs -------------------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_every_log_a_conversation_writes_validates_and_survives_json(built: Built) -> None:
    log = built.log()
    log.validate()
    text = log.to_json()
    again = MessageList.from_json(text)
    assert again == log
    assert again.to_json() == text
    assert MessageList.from_dict(json.loads(text)) == log
    has_entry = any(type(message) is ApprovalMessage for message in log)
    assert json.loads(text)["version"] == ("2.2" if has_entry else "2.1")


@CASES
@given(logs())
def test_what_the_log_says_waits_is_what_was_left_open(built: Built) -> None:
    waits = call_waits(built.log())
    last_calls = next((m.tool_calls for m in reversed(built.messages) if isinstance(m, AssistantMessage)), [])
    answered = {m.tool_call_id for m in built.messages if isinstance(m, ToolMessage)}
    open_calls = [call for call in last_calls if call.id not in answered]
    by_state = {
        "dangling": [call.id for call in waits.dangling],
        "waiting": [w.call.id for w in waits.waiting],
        "approved": [call.id for call, _ in waits.approved],
        "denied": [call.id for call, _ in waits.denied],
        "started": [call.id for call, _ in waits.started],
    }
    expected: dict[str, list[str]] = {"dangling": [], "waiting": [], "approved": [], "denied": [], "started": []}
    for call in open_calls:
        entries = built.targets[call.id]
        last = entries[-1] if entries else None
        state = "dangling" if last is None else {"requested": "waiting"}.get(last.state, last.state)  # type: ignore[union-attr]
        expected[state].append(call.id)
    assert by_state == expected


@CASES
@given(logs(waits=False))
def test_a_log_without_entries_reads_unchanged_as_2_0_and_2_1(built: Built) -> None:
    log = built.log()
    text = log.to_json()
    assert json.loads(text)["version"] == "2.1"
    for version in ("2.0", "2.1"):
        labelled = text.replace('"version":"2.1"', f'"version":"{version}"', 1)
        assert MessageList.from_json(labelled) == log
        assert MessageList.from_dict(json.loads(labelled)) == log


@CASES
@given(logs(target_turn("approved")))
def test_an_older_version_holding_an_entry_is_refused(built: Built) -> None:
    text = built.log().to_json()
    position = next(i for i, m in enumerate(built.messages) if type(m) is ApprovalMessage)
    for version in ("2.0", "2.1"):
        labelled = text.replace('"version":"2.2"', f'"version":"{version}"', 1)
        for read in (MessageList.from_json, lambda t: MessageList.from_dict(json.loads(t))):
            with pytest.raises(MessageListDeserializationError, match=r"from 2\.2 on") as caught:
                read(labelled)
            assert caught.value.position == position


# -- misplaced entries ------------------------------------------------------------------------------------------------
def copy_of(message: Message, **changes: Any) -> Message:
    """The same entry as a new message (its own id), with ``changes``."""
    from threadline._ids import new_id

    return msgspec.structs.replace(message, id=new_id(), **changes)


def refused(messages: list[Message], offender: Message, rule: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        MessageList(messages).validate()
    assert caught.value.rule == rule, caught.value
    assert caught.value.index == next(i for i, m in enumerate(messages) if m is offender)


def target_entries(built: Built) -> list[Message]:
    return built.targets["target"]


def position(built: Built, message: Message) -> int:
    return next(i for i, m in enumerate(built.messages) if m is message)


@CASES
@given(logs(target_turn("approved")))
def test_an_entry_before_its_call_is_misplaced(built: Built) -> None:
    requested = target_entries(built)[0]
    messages = [m for m in built.messages if m is not requested]
    owner = next(
        i
        for i, m in enumerate(messages)
        if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].id == "target"
    )
    messages.insert(owner, requested)
    refused(messages, requested, "misplaced_approval")


@CASES
@given(logs(target_turn("external")), st.sampled_from(["move", "copy"]))
def test_an_entry_after_its_result_is_misplaced(built: Built, how: str) -> None:
    requested, answer = target_entries(built)
    late = requested if how == "move" else copy_of(requested)
    messages = [m for m in built.messages if m is not late]
    messages.insert(messages.index(answer) + 1, late)
    refused(messages, late, "misplaced_approval")


@CASES
@given(logs(target_turn("approved", follow=True)), st.integers(0, 1))
def test_an_entry_for_a_call_of_an_older_assistant_message_is_misplaced(built: Built, which: int) -> None:
    late = copy_of(target_entries(built)[which])
    later_result = built.targets["later"][0]
    built.messages.insert(position(built, later_result), late)  # among the next message's calls, before their result
    refused(built.messages, late, "misplaced_approval")


@CASES
@given(logs(target_turn("approved")), st.integers(0, 1), st.sampled_from(["hash", "tool"]))
def test_an_entry_naming_other_arguments_or_another_tool_is_refused(built: Built, which: int, what: str) -> None:
    entry = target_entries(built)[which]
    if what == "hash":
        forged = copy_of(
            entry, arguments_sha256=arguments_sha256(ToolCall(id="x", name="pay", arguments={"forged": 1}))
        )
    else:
        forged = copy_of(entry, tool_name="lookup")
    built.messages[position(built, entry)] = forged
    refused(built.messages, forged, "approval_hash")


@CASES
@given(logs(target_turn("approved")), st.sampled_from(["approval", "external"]))
def test_a_second_request_is_refused(built: Built, kind: str) -> None:
    requested = target_entries(built)[0]
    again = copy_of(requested, kind=kind)
    built.messages.insert(position(built, requested) + 1, again)
    refused(built.messages, again, "duplicate_request")


@CASES
@given(logs(target_turn("approved")) | logs(target_turn("denied")))
def test_a_decision_without_a_request_is_refused(built: Built) -> None:
    requested, decided, _ = target_entries(built)
    built.messages.remove(requested)
    refused(built.messages, decided, "decision_without_request")


@CASES
@given(logs(target_turn("external")), st.sampled_from(["approved", "denied"]))
def test_a_decision_on_an_external_call_is_refused(built: Built, state: str) -> None:
    requested = target_entries(built)[0]
    decided = copy_of(requested, state=state, kind="approval", reason=None, by="alice")
    built.messages.insert(position(built, requested) + 1, decided)
    refused(built.messages, decided, "decision_on_external")


@CASES
@given(logs(target_turn("approved")) | logs(target_turn("denied")), st.sampled_from(["approved", "denied"]))
def test_a_second_decision_is_refused(built: Built, state: str) -> None:
    decided = target_entries(built)[1]
    again = copy_of(decided, state=state, scope="call", arguments=None, by="eve")
    built.messages.insert(position(built, decided) + 1, again)
    refused(built.messages, again, "duplicate_decision")


@CASES
@given(logs(target_turn("approved")) | logs(target_turn("denied")))
def test_a_result_before_the_decision_is_refused(built: Built) -> None:
    _, decided, answer = target_entries(built)
    built.messages.remove(answer)
    built.messages.insert(position(built, decided), answer)
    refused(built.messages, answer, "undecided")


@CASES
@given(logs(target_turn("denied")) | logs(target_turn("external")) | logs(target_turn("approved")))
def test_only_an_approval_may_have_conversation_scope(built: Built) -> None:
    entries = [m for m in target_entries(built) if type(m) is ApprovalMessage and m.state != "approved"]
    entry = entries[-1]
    forged = copy_of(entry, scope="conversation")
    built.messages[position(built, entry)] = forged
    refused(built.messages, forged, "approval_scope")


@CASES
@given(logs(target_turn("denied")) | logs(target_turn("approved")), st.integers(0, 1))
def test_only_an_approval_may_edit_the_arguments(built: Built, which: int) -> None:
    entry = target_entries(built)[which]
    if entry.state == "approved":  # type: ignore[union-attr]
        entry = target_entries(built)[0]
    forged = copy_of(entry, arguments={"amount": 1})
    built.messages[position(built, entry)] = forged
    refused(built.messages, forged, "approval_arguments")


@CASES
@given(logs(rule_turns))
def test_a_rule_approval_needs_an_earlier_conversation_wide_approval(built: Built) -> None:
    MessageList(built.messages).validate()
    granted = built.targets["granted"][1]
    by_rule = built.targets["target"][0]
    built.messages[position(built, granted)] = copy_of(granted, scope="call")
    refused(built.messages, by_rule, "decision_without_request")


@CASES
@given(logs(target_turn("plain", tool="fresh_tool")))
def test_a_rule_approval_for_a_tool_never_approved_for_the_conversation_is_refused(built: Built) -> None:
    answer = target_entries(built)[0]
    assert isinstance(answer, ToolMessage)
    forged = decision(ToolCall(id="target", name="fresh_tool", arguments={}), "approved", by="rule")
    owner = next(
        m for m in built.messages if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].id == "target"
    )
    forged = copy_of(forged, arguments_sha256=arguments_sha256(owner.tool_calls[0]))
    built.messages.insert(position(built, answer), forged)
    refused(built.messages, forged, "decision_without_request")


@CASES
@given(logs(target_turn("approved")) | logs(target_turn("denied")) | logs(target_turn("external")))
def test_a_start_without_an_approval_is_refused(built: Built) -> None:
    requested = target_entries(built)[0]
    started = copy_of(requested, state="started", kind="approval", reason=None)
    built.messages.insert(position(built, requested) + 1, started)  # before any approval of the call
    refused(built.messages, started, "misplaced_start")


@CASES
@given(logs(target_turn("started")))
def test_a_second_start_and_a_request_before_any_start_are_refused(built: Built) -> None:
    requested, approved, started, _answer = target_entries(built)
    twice = copy_of(started)
    built.messages.insert(position(built, started) + 1, twice)
    refused(built.messages, twice, "misplaced_start")
    built.messages.remove(twice)
    early = copy_of(requested, reason="again")
    built.messages.insert(position(built, approved) + 1, early)
    refused(built.messages, early, "duplicate_request")
