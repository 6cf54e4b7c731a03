"""The log's value types: five message kinds and their parts, made under the log's text rule.

A leaf of the package: it imports only the lowest rooms (`threadline._text`, `_ids`, `_json_values`) and
`threadline.attachments` (a leaf too). What is made of messages depends on it, one way: their field checks
(`threadline.message_fields`), the forms they are written in (`threadline.serialization`) and the log that holds
them (`threadline.message_list`). Inside threadline, import the value types from here; `threadline.messages` is the
public name that gives all of these at once.

Messages are `msgspec` structs tagged by ``role``, so a whole log encodes and decodes in one pass (see
`threadline.serialization`).

Memory matters here (a server may hold thousands of conversations), so the structs skip the cyclic GC header
and every message without metadata shares one read-only default `MessageMeta`.

Every message is made through its constructor or its decoder, and both run ``__post_init__``: that is where the
log's text rule is applied, once for every path (constructors, the readers of every format, the turn engine, tool
results). Lone surrogates in any text become U+FFFD (see `threadline._text`) and ``created_at`` is moved to UTC, so
whatever is in a `MessageList` can always be written as JSON and to every store.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias

import msgspec

from ._ids import new_id
from ._json_values import TOO_DEEP
from ._text import MAX_NESTING, replace_non_finite_in, replace_surrogates, replace_surrogates_in
from .attachments import Attachment, clean_attachment
from .pricing.cost import Cost, cost_of

__all__ = [
    "APPROVAL_KINDS",
    "APPROVAL_SCOPES",
    "APPROVAL_STATES",
    "DEFAULT_META",
    "INTERRUPTED_TOOL",
    "MESSAGE_TYPES",
    "MODES",
    "NO_ITEMS",
    "USAGE_COUNTS",
    "AnswerPart",
    "ApprovalKind",
    "ApprovalMessage",
    "ApprovalScope",
    "ApprovalState",
    "AssistantMessage",
    "LLMError",
    "Message",
    "MessageMeta",
    "Mode",
    "Reasoning",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "UtcDatetime",
    "answer_parts",
    "arguments_sha256",
    "assistant",
    "content_for_model",
    "system",
    "user",
]

Mode: TypeAlias = Literal["chat", "agent", "run"]
MODES: tuple[Mode, ...] = ("chat", "agent", "run")

# The content of the error result that answers a tool call left unanswered by a crash or an interruption: in the log
# when a conversation is continued (the engine's repair), and in a request built from a log not yet repaired.
INTERRUPTED_TOOL = "interrupted: the previous run stopped before this tool call finished; it may not have run"
_json_encode = msgspec.json.encode


def _plain_json(data: bytes) -> bool:
    """Whether encoded arguments need no cleaning: `_shallow_ascii`, and no ``null`` (which may be ``nan``)."""
    return _shallow_ascii(data) and b"null" not in data


def _shallow_ascii(data: bytes) -> bool:
    """Whether encoded JSON is ASCII (so its strings hold no surrogates) and has too few brackets to nest past
    `MAX_NESTING` (an upper bound of its depth, counted in C)."""
    return data.isascii() and data.count(b"[") + data.count(b"{") < MAX_NESTING


UtcDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


def _now() -> datetime:
    return datetime.now(UTC)


def _text(value: Any) -> Any:
    """A text field under the log's rule (lone surrogates -> U+FFFD); anything that is not a string is left for the
    engine's checks to refuse."""
    return replace_surrogates(value) if isinstance(value, str) else value


def _utc(value: Any) -> Any:
    """``created_at`` in UTC (a naive datetime is taken as UTC already), so it can always be written and compared.

    Raises:
        ValueError: for a time that has no UTC equivalent (e.g. ``9999-12-31T23:59:59-01:00``).
    """
    if not isinstance(value, datetime):
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"created_at {value.isoformat()} is outside the range of UTC times") from None


def _clean_meta(meta: MessageMeta) -> MessageMeta:
    ids = (meta.run_id, meta.node_id, meta.agent_id)
    cleaned = tuple(_text(value) for value in ids)
    try:
        ui = replace_non_finite_in(replace_surrogates_in(meta.ui))
    except ValueError:
        raise ValueError(f"meta.ui is {TOO_DEEP} (the log keeps no deeper value)") from None
    if ui is meta.ui and all(new is old for new, old in zip(cleaned, ids, strict=True)):
        return meta
    return msgspec.structs.replace(meta, run_id=cleaned[0], node_id=cleaned[1], agent_id=cleaned[2], ui=ui)


class _ReadOnlyDict(dict[str, Any]):
    """The ``ui`` dict of the shared default meta: writing to it would change every message at once."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "this message has the shared default meta; give it its own first: message.meta = MessageMeta(ui={...})"
        )

    # ``|=`` too: ``message.meta.ui |= {...}`` mutates the dict before the frozen meta refuses the assignment.
    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]


class MessageMeta(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Context and UI metadata carried by every message.

    Attributes:
        mode: The mode the message was produced in (``"chat"``, ``"agent"``, ``"run"``), if known.
        run_id: The run that produced the message (run mode).
        node_id: The run node that produced the message (run mode).
        agent_id: The agent that produced the message, for multi-agent logs.
        include_in_context: False for UI-only events: kept in the log, never sent to a model.
        ui: Free-form UI extras (collapsed, part type, widget, preview).
    """

    mode: Mode | None = None
    run_id: str | None = None
    node_id: str | None = None
    agent_id: str | None = None
    include_in_context: bool = True
    ui: dict[str, Any] = {}


DEFAULT_META = MessageMeta(ui=_ReadOnlyDict())


class _ReadOnlyList(list[Any]):
    """The one empty ``attachments``/``tool_calls`` list shared by every message that has none.

    Most messages have neither, and an empty list per message costs 56 bytes; writing to the shared one would change
    every message at once, so it refuses.
    """

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "this message has the shared empty list; give it its own first: "
            "message.tool_calls = [...] or message.attachments = [...]"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


NO_ITEMS: list[Any] = _ReadOnlyList()


def _shared(name: str) -> str:
    """One copy of a name that repeats across a log (tool and model names); interned strings are freed with their
    last user, so a log full of distinct names costs nothing extra once it is gone. In a tool-using log this saves
    about 60 of 430 bytes per message (measured with tracemalloc on 80,000 messages)."""
    return sys.intern(name) if type(name) is str else name  # exactly str: sys.intern refuses subclasses


class ToolCall(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """One tool call requested by the model.

    Attributes:
        id: The call id, unique within the log; tool results refer to it.
        name: The tool's real name (e.g. ``Notes.add_note``), never a provider's wire name.
        arguments: The parsed arguments: a JSON object, nested at most ``threadline._text.MAX_NESTING`` (128)
            levels deep (a deeper one is refused with a `ValueError` naming the call).
        raw_arguments: The model's argument text when it was not a JSON object the log can keep (not valid JSON, or
            nested more than 128 levels deep; ``arguments`` is then empty); kept so the failure is visible, the
            model is told it is invalid, and the log translates back losslessly.
    """

    id: str
    name: str
    arguments: dict[str, Any] = {}
    raw_arguments: str | None = None

    def __post_init__(self) -> None:
        name, arguments = self.name, self.arguments
        try:
            # Arguments encoded by msgspec (C, faster than walking them in Python) are ASCII only when every string
            # in them is, and hold no "null" unless a value is None or a float JSON cannot express (which msgspec
            # writes as null); anything else (non-ASCII text, nulls, values that are not JSON) takes the full path.
            plain = (
                name.isascii()
                and self.id.isascii()
                and self.raw_arguments is None
                and (not arguments or _plain_json(_json_encode(arguments)))
            )
        except Exception:
            plain = False
        if not plain:
            name = _text(name)
            self.id = _text(self.id)
            if isinstance(arguments, dict):
                try:
                    cleaned = replace_surrogates_in(arguments)
                except ValueError:
                    raise ValueError(
                        f"tool call {self.id!r:.60}: arguments are {TOO_DEEP} (the log keeps no deeper value; a "
                        "model's argument text that deep is kept as raw_arguments)"
                    ) from None
                self.arguments = replace_non_finite_in(cleaned)
            self.raw_arguments = _text(self.raw_arguments)
        self.name = _shared(name)


class LLMError(msgspec.Struct, kw_only=True, gc=False):
    """Why a model call failed; set on the `AssistantMessage` that logs the failure."""

    type: str
    message: str
    retryable: bool = False

    def __post_init__(self) -> None:
        self.type = _text(self.type)
        self.message = _text(self.message)


class Usage(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """Token usage reported by the model for one call, and its price.

    Attributes:
        input_tokens: Tokens of the request (cached ones included).
        output_tokens: Tokens generated, reasoning included.
        reasoning_tokens: The part of ``output_tokens`` spent on reasoning, where the provider reports it.
        cache_read_tokens, cache_write_tokens: The parts of ``input_tokens`` read from and written to a prompt cache.
        cost: Its `Cost`, set by the turn engine when the call is logged (None: not priced; a sum counts it unknown).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: Cost | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        both = self.cost is None and other.cost is None and not (self.total_tokens or other.total_tokens)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost=None if both else cost_of(self.cost, self.total_tokens) + cost_of(other.cost, other.total_tokens),
        )


USAGE_COUNTS = ("input_tokens", "output_tokens", "reasoning_tokens", "cache_read_tokens", "cache_write_tokens")


class Reasoning(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """One piece of a model's reasoning, kept in its assistant message so it can be sent back exactly.

    Reasoning models think before they answer, and some providers refuse a tool loop whose earlier turns do not
    carry that thinking back verbatim (Anthropic's signed ``thinking`` blocks, the Responses API's encrypted
    ``reasoning`` items). The log keeps every piece; each provider's translation decides what it may send (see
    docs/architecture.md#reasoning-replay): signed or encrypted reasoning only to the family that produced it, plain
    text to none by default.

    Attributes:
        text: The visible thinking, or a summary of it (``""`` when the provider shows none).
        signature: The provider's signature over ``text`` (Anthropic ``thinking.signature``), sent back unchanged.
        redacted: Opaque reasoning data (Anthropic ``redacted_thinking.data``, Responses ``encrypted_content``; for
            OpenRouter, the rest of its ``reasoning_details`` entry as JSON, kept to go back as it came).
        provider: The wire family that produced it: ``"anthropic"``, ``"openai-responses"`` (OpenAI's own
            Responses API), ``"openai-responses@host:port"`` (another server speaking the Responses API, named by
            its base URL's host and port, never its credentials or path: vLLM, a proxy, Azure), ``"openai"``,
            ``"google"`` (a thought signature of Gemini's OpenAI-compatible API, with no text), or ``"openrouter"``
            (one ``reasoning_details`` entry of OpenRouter or Vercel's AI Gateway).
        id: The provider's id for it (a Responses reasoning item's ``id``; several summary parts of one item share
            it, in order), or for a Gemini thought signature the id of the tool call it came with.
        position: Where the piece stood among the answer's parts (reasoning, its text, its tool calls, counted
            from 0) when it did not come before all of them; None: it came first (see `answer_parts`).
    """

    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str | None = None
    id: str | None = None
    position: Annotated[int, msgspec.Meta(ge=0)] | None = None

    def __post_init__(self) -> None:
        text = self.text
        if not (type(text) is str and text.isascii()):
            self.text = _text(text)
        self.signature = _text(self.signature)
        self.redacted = _text(self.redacted)
        if self.provider is not None:
            self.provider = _shared(_text(self.provider))
        self.id = _text(self.id)


class _BaseMessage(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="role", gc=False):
    id: str = msgspec.field(default_factory=new_id)
    """Sortable unique id (a ULID)."""
    created_at: UtcDatetime = msgspec.field(default_factory=_now)
    """When the message was made, in UTC."""
    meta: MessageMeta = DEFAULT_META
    """Context and UI metadata."""

    def _clean_common(self) -> None:
        """The text rule for the fields every message has (see the module docstring)."""
        self.id = _text(self.id)
        self.created_at = _utc(self.created_at)
        if self.meta is not DEFAULT_META and isinstance(self.meta, MessageMeta):
            self.meta = _clean_meta(self.meta)

    @property
    def role(self) -> str:
        """``"system"``, ``"user"``, ``"assistant"``, ``"tool"`` or ``"approval"`` (the tag written in the JSON
        form)."""
        return self.__struct_config__.tag  # type: ignore[return-value]


# Each ``__post_init__`` below runs for every message made or decoded (10,000 per log read), so it first checks, in
# one expression, the case of almost every message: ASCII text, a UTC time, the default meta. Only a message that
# fails that check pays for the full rule; an AttributeError there means a field is not a string, which the full
# path leaves alone for the engine's own checks to report.


class SystemMessage(_BaseMessage, tag="system"):
    """An instruction in the log (e.g. from ``.agent(text)``); the per-request system prefix is never stored."""

    content: str

    def __post_init__(self) -> None:
        try:
            plain = (
                self.meta is DEFAULT_META
                and self.created_at.tzinfo is UTC
                and self.id.isascii()
                and self.content.isascii()
            )
        except AttributeError:
            plain = False
        if not plain:
            self._clean_common()
            self.content = _text(self.content)


class UserMessage(_BaseMessage, tag="user"):
    """A user turn, optionally with attachments."""

    content: str
    attachments: list[Attachment] = NO_ITEMS

    def __post_init__(self) -> None:
        try:
            plain = (
                self.meta is DEFAULT_META
                and self.created_at.tzinfo is UTC
                and self.id.isascii()
                and self.content.isascii()
            )
        except AttributeError:
            plain = False
        if not plain:
            self._clean_common()
            self.content = _text(self.content)
        attachments = self.attachments
        if attachments is not NO_ITEMS:
            if not attachments:
                self.attachments = NO_ITEMS
            for attachment in attachments:
                if isinstance(attachment, Attachment):
                    clean_attachment(attachment)


class AssistantMessage(_BaseMessage, tag="assistant"):
    """A model turn: text, tool calls, or a failure (``error`` set, ``content`` = the partial output).

    ``reasoning`` holds the model's thinking, in order (see `Reasoning`); a failed call keeps what it had streamed
    of it, without a signature, so it is never sent back as if it were whole.
    """

    content: str | None = None
    tool_calls: list[ToolCall] = NO_ITEMS
    error: LLMError | None = None
    model: str | None = None
    usage: Usage | None = None
    reasoning: list[Reasoning] = NO_ITEMS

    def __post_init__(self) -> None:
        content, model = self.content, self.model
        try:
            plain = (
                self.meta is DEFAULT_META
                and self.created_at.tzinfo is UTC
                and self.id.isascii()
                and (content is None or content.isascii())
                and (model is None or model.isascii())
            )
        except AttributeError:
            plain = False
        if not plain:
            self._clean_common()
            self.content = _text(content)
            model = _text(model)
        # Memory: most assistant messages have no tool calls or reasoning and share one empty list; model names
        # repeat.
        if not self.tool_calls and self.tool_calls is not NO_ITEMS:
            self.tool_calls = NO_ITEMS
        if not self.reasoning and self.reasoning is not NO_ITEMS:
            self.reasoning = NO_ITEMS
        if model is not None:
            self.model = _shared(model)


class ToolMessage(_BaseMessage, tag="tool"):
    """The result of one tool call."""

    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    duration_ms: float | None = None

    def __post_init__(self) -> None:
        name = self.tool_name
        try:
            plain = (
                self.meta is DEFAULT_META
                and self.created_at.tzinfo is UTC
                and self.id.isascii()
                and self.content.isascii()
                and self.tool_call_id.isascii()
                and name.isascii()
            )
        except AttributeError:
            plain = False
        if not plain:
            self._clean_common()
            self.tool_call_id = _text(self.tool_call_id)
            self.content = _text(self.content)
            name = _text(name)
        self.tool_name = _shared(name)


ApprovalState: TypeAlias = Literal["requested", "approved", "denied", "started"]
ApprovalKind: TypeAlias = Literal["approval", "external"]
ApprovalScope: TypeAlias = Literal["call", "conversation"]
APPROVAL_STATES: tuple[ApprovalState, ...] = ("requested", "approved", "denied", "started")
APPROVAL_KINDS: tuple[ApprovalKind, ...] = ("approval", "external")
APPROVAL_SCOPES: tuple[ApprovalScope, ...] = ("call", "conversation")


class ApprovalMessage(_BaseMessage, tag="approval"):
    """A tool call's wait, and how it ended: the log's record of a call that may not run yet (file format 2.2).

    Never sent to a model. A ``"requested"`` entry says the call waits: for a person's decision (``kind="approval"``)
    or for a result from outside (``kind="external"``, ended by the result itself). An ``"approved"`` or
    ``"denied"`` entry is the decision, bound to the call by ``tool_call_id`` and to the arguments the person saw by
    ``arguments_sha256``. A ``"started"`` entry is written just before an approved call of a tool that is not
    idempotent runs: if the process stops before its result is logged, the next turn knows it may have run and asks
    a person again instead of running it twice. The rules of their order are in `MessageList.validate` and
    docs/file-format.md#approvals.

    Attributes:
        tool_call_id: The call this entry is about.
        tool_name: The called tool's name.
        state: ``"requested"``, ``"approved"``, ``"denied"``, or ``"started"`` (an approved call began to run).
        arguments_sha256: `arguments_sha256` of the call as the model wrote it.
        kind: What the call waits for: ``"approval"`` (a person) or ``"external"`` (a result from outside).
        reason: Why it waits (on a request) or why it was decided so (on a decision).
        by: Who decided (free text; ``"rule"`` for a call approved by an earlier ``scope="conversation"`` approval).
        arguments: On an approval that edits them: the arguments the call runs with (checked against the tool's
            schema before they are logged).
        scope: ``"call"``, or ``"conversation"``: the tool is approved for the rest of the conversation.
    """

    tool_call_id: str
    tool_name: str
    state: ApprovalState
    arguments_sha256: str
    kind: ApprovalKind = "approval"
    reason: str | None = None
    by: str | None = None
    arguments: dict[str, Any] | None = None
    scope: ApprovalScope = "call"

    def __post_init__(self) -> None:
        self._clean_common()
        self.tool_call_id = _text(self.tool_call_id)
        self.tool_name = _shared(_text(self.tool_name))
        self.reason = _text(self.reason)
        self.by = _text(self.by)
        if isinstance(self.arguments, dict):
            try:
                self.arguments = replace_non_finite_in(replace_surrogates_in(self.arguments))
            except ValueError:
                raise ValueError(f"approval of {self.tool_call_id!r:.60}: arguments are {TOO_DEEP}") from None


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage | ApprovalMessage


def arguments_sha256(call: ToolCall) -> str:
    """The SHA-256 (hex) of a call's arguments as the model wrote them: its raw argument text when it kept one,
    else its arguments as JSON with sorted keys and no spaces (the same bytes in every process and store)."""
    import hashlib

    if call.raw_arguments is not None:
        data = call.raw_arguments.encode("utf-8", "surrogatepass")
    else:
        data = msgspec.json.encode(call.arguments, order="sorted")
    return hashlib.sha256(data).hexdigest()


def content_for_model(message: AssistantMessage) -> str | None:
    """The assistant text a provider is sent: for a failed call, the partial output followed by a block
    ``[LLM_ERROR type=… message=…]`` so that "continue" resumes from it on any provider."""
    if message.error is None:
        return message.content
    block = f"[LLM_ERROR type={message.error.type} message={message.error.message}]"
    return f"{message.content}\n{block}" if message.content else block


AnswerPart: TypeAlias = "Reasoning | str | ToolCall"


def answer_parts(message: AssistantMessage) -> list[AnswerPart]:
    """The parts of an assistant answer in the order the model produced them: its reasoning pieces, its text (one
    part, ``content_for_model``), and its tool calls.

    Reasoning without a ``position`` comes first, in its order; then the text, then the tool calls; each reasoning
    piece with a ``position`` is put back at that index (interleaved thinking between tool calls keeps its place).
    """
    text = content_for_model(message)
    parts: list[AnswerPart] = [piece for piece in message.reasoning if piece.position is None]
    if text:
        parts.append(text)
    parts.extend(message.tool_calls)
    placed = sorted((piece for piece in message.reasoning if piece.position is not None), key=_position)
    for piece in placed:
        parts.insert(min(_position(piece), len(parts)), piece)
    return parts


def _position(piece: Reasoning) -> int:
    return piece.position if piece.position is not None else 0


def system(text: str, *, meta: MessageMeta | None = None) -> SystemMessage:
    """A system message for the log."""
    return SystemMessage(content=text, meta=meta or DEFAULT_META)


def user(text: str, attachments: Iterable[Attachment] | None = None, *, meta: MessageMeta | None = None) -> UserMessage:
    """A user message, optionally with attachments."""
    return UserMessage(content=text, attachments=list(attachments or ()), meta=meta or DEFAULT_META)


def assistant(text: str, *, meta: MessageMeta | None = None) -> AssistantMessage:
    """An assistant text message (e.g. to seed a conversation with an example answer)."""
    return AssistantMessage(content=text, meta=meta or DEFAULT_META)


MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage, ApprovalMessage)
"""The five message classes (what `MessageList` holds)."""
