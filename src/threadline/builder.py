"""`PromptBuilder`: an immutable, fluent description of the next turn, and `llm`, the empty builder.

Each method returns a new builder holding accumulated *deltas* (messages to add, config to change); the builder it
came from is unchanged, so builders can be shared and branched freely. Nothing happens until an execution method
applies the deltas to a `Conversation` (a new one, or the one ``conversation.continuation`` refers to), plans the
turn (`threadline.engine.plan_turn`: the call's settings, checked once, over the config) and runs it on the
conversation's host::

    text = llm.agent("You are terse.").request("Capital of France?").prompt()
    conv = llm.tools(get_weather).request("Weather in Paris?").prompt_conversation()
    async for message in conv: ...
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from ._ids import new_id
from ._sync import in_event_loop, iterate_sync, run_sync
from .attachments import Attachment
from .conversation.config import config_problem
from .conversation.conversation import Conversation
from .engine import TurnOptions, TurnResult, plan_turn
from .engine.plan import PROMPT_CACHE_TTLS, CheckedSettings, check_settings, mode_meta
from .engine.spending import Budget, budget_problem
from .errors import OutputValidationError, UserError, warn_renamed
from .message_types import (
    DEFAULT_META,
    MODES,
    AssistantMessage,
    Message,
    MessageMeta,
    SystemMessage,
    ToolCall,
    assistant,
    user,
)
from .models.base import Model, ResponseFormat

if TYPE_CHECKING:
    import pydantic

    from .store.capabilities import ConversationStore

__all__ = ["ROUND_BREAK", "PromptBuilder", "TextStream", "llm"]

T = TypeVar("T")


class PromptBuilder:
    """An immutable builder of prompts and conversation changes. Start from `threadline.llm`."""

    __slots__ = ("_config", "_conversation", "_conversation_id", "_messages", "_store", "_tools")

    def __init__(
        self,
        conversation: Conversation | None = None,
        messages: Iterable[Message] = (),
        config: Mapping[str, Any] | None = None,
        *,
        tools: Iterable[Any] = (),
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
    ) -> None:
        self._conversation = conversation
        self._messages: tuple[Message, ...] = tuple(messages)
        self._config: dict[str, Any] = dict(config or {})
        self._tools: tuple[Any, ...] = tuple(tools)
        self._store = store
        self._conversation_id = conversation_id

    def _copy(
        self,
        *,
        messages: tuple[Message, ...] | None = None,
        config: dict[str, Any] | None = None,
        tools: tuple[Any, ...] | None = None,
        store: ConversationStore | None = None,
        conversation_id: str | None = None,
    ) -> PromptBuilder:
        return PromptBuilder(
            self._conversation,
            self._messages if messages is None else messages,
            self._config if config is None else config,
            tools=self._tools if tools is None else tools,
            store=self._store if store is None else store,
            conversation_id=self._conversation_id if conversation_id is None else conversation_id,
        )

    def _with_message(self, message: Message) -> PromptBuilder:
        return self._copy(messages=(*self._messages, message))

    def _with_config(self, **changes: Any) -> PromptBuilder:
        return self._copy(config={**self._config, **changes})

    # -- inspection -------------------------------------------------------------------------------------------
    @property
    def delta_messages(self) -> tuple[Message, ...]:
        """The messages this builder will add."""
        return self._messages

    @property
    def delta_config(self) -> dict[str, Any]:
        """The config changes this builder will apply (a copy)."""
        config = dict(self._config)
        if self._tools:
            config["tools"] = list(self._tools)
        return config

    @property
    def conversation(self) -> Conversation | None:
        """The conversation this builder refers to, if any."""
        return self._conversation

    # -- message deltas ---------------------------------------------------------------------------------------
    def agent(self, text: str) -> PromptBuilder:
        """Add a system message (instructions) to the log."""
        return self._with_message(SystemMessage(content=_text(text, "agent")))

    def document(self, text: str) -> PromptBuilder:
        """Add a user message carrying a document (reference text, facts) before the request."""
        return self._with_message(user(_text(text, "document")))

    def context(self, text: str) -> PromptBuilder:
        """Deprecated: `document` (the same user message); removed in the next release."""
        warn_renamed("PromptBuilder.context()", "PromptBuilder.document()")
        return self.document(text)

    def request(self, text: str, attachments: Iterable[Attachment] | None = None) -> PromptBuilder:
        """Add the user's request, optionally with attachments (images, mentions of objects)."""
        items = list(attachments or ())
        for item in items:
            if not isinstance(item, Attachment):
                raise TypeError(f"attachments must be Attachment objects, got {type(item).__name__}")
        return self._with_message(user(_text(text, "request"), items))

    def assistant(self, text: str) -> PromptBuilder:
        """Add an assistant message (e.g. an example answer)."""
        return self._with_message(assistant(_text(text, "assistant")))

    # -- config deltas ----------------------------------------------------------------------------------------
    def provider(self, name: str) -> PromptBuilder:
        """Use that provider's default model (``"local"``, ``"openai"``, ``"anthropic"``)."""
        return self._with_config(provider=name, model=None)

    def model(self, name_or_model: str | Model) -> PromptBuilder:
        """Use a model by name (``local``, ``openai:gpt-4o``…) or a `Model` object."""
        if not isinstance(name_or_model, (str, Model)):
            raise TypeError(f"model must be a name or a Model, got {type(name_or_model).__name__}")
        return self._with_config(model=name_or_model)

    def tools(self, *tools: Any) -> PromptBuilder:
        """Offer tools: functions, `Tool`s, `Toolset`s, or a callable ``(conversation) -> tools``."""
        from .tools import BaseToolset, DynamicTools, Tool, as_tool, is_dynamic_provider

        checked: list[Any] = []
        for item in tools:
            if isinstance(item, (Tool, BaseToolset, DynamicTools)):
                checked.append(item)
            elif callable(item):
                checked.append(item if is_dynamic_provider(item) else as_tool(item))
            else:
                raise UserError(f"not a tool: {item!r}")
        return self._copy(tools=(*self._tools, *checked))

    def tool_choice(self, choice: str) -> PromptBuilder:
        """``"auto"``, ``"required"``, ``"none"`` or a tool's name; applies to the first request of a turn."""
        if not isinstance(choice, str) or not choice:
            raise UserError("tool_choice must be 'auto', 'required', 'none' or a tool name")
        return self._with_config(tool_choice=choice)

    def approval(self, policy: bool | Callable[[ToolCall], bool | str | None]) -> PromptBuilder:
        """Which tool calls wait for a person's decision, for tools that say nothing of it themselves
        (``@tool(approval=...)`` wins): True (every call), False (none), or a function of the `ToolCall` answering
        True, False or a reason. A turn that reaches such a call ends with ``stop_reason="awaiting"``; decide with
        `Conversation.approve` / ``deny`` and go on with `Conversation.resume`."""
        problem = config_problem("approval", policy)
        if problem is not None:
            raise UserError(problem)
        return self._with_config(approval=policy)

    def budget(
        self,
        max_cost_usd: float | Decimal | None = None,
        max_tokens: int | None = None,
        *,
        per: Literal["turn", "conversation"] = "turn",
    ) -> PromptBuilder:
        """Limit what a turn (``per="turn"``) or the whole conversation (``per="conversation"``, summed from its log,
        so it holds across processes and restarts) may spend: US dollars as priced by `threadline.pricing`, and
        tokens. A request starts only while spending is below every limit; otherwise the turn stops before it (never
        in the middle of an answer) with ``stop_reason="budget"`` and `TurnResult.detail` saying which limit was
        reached. A cost limit stops the turn too once a call's cost is unknown. No limits: the budget is removed.

        Raises:
            UserError: for a limit that is not a number >= 0.
        """
        problem = budget_problem(max_cost_usd, max_tokens)
        if problem is None and per not in ("turn", "conversation"):
            problem = f"per must be 'turn' or 'conversation', got {per!r:.60}"
        if problem is not None:
            raise UserError(problem)
        if isinstance(max_cost_usd, float):
            max_cost_usd = Decimal(repr(max_cost_usd))  # 0.1 is 0.1, not its binary neighbour
        elif isinstance(max_cost_usd, int):
            max_cost_usd = Decimal(max_cost_usd)
        limit = (
            None
            if max_cost_usd is None and max_tokens is None
            else Budget(max_cost_usd=max_cost_usd, max_tokens=max_tokens)
        )
        return self._with_config(**{"turn_budget" if per == "turn" else "budget": limit})

    def max_tool_rounds(self, n: int) -> PromptBuilder:
        """Tool rounds before a tool-less request forces an answer."""
        problem = config_problem("max_tool_rounds", n)  # the config's rule, not a second one of the builder's
        if problem is not None:
            raise UserError(problem)
        return self._with_config(max_tool_rounds=n)

    def reasoning(
        self, effort: str | None = None, budget_tokens: int | None = None, *, enabled: bool = True
    ) -> PromptBuilder:
        """Turn a reasoning model's thinking on, and say how much: an effort (``"low"``, ``"medium"``, ``"high"``)
        or a budget in tokens; each provider takes the one it knows and derives it from the other (OpenAI and
        Claude 4.6 and later an effort, so a ``budget_tokens`` maps to the nearest effort at or above it; Claude 4.5
        and earlier a thinking budget). ``enabled=False`` turns it off again.

        The model's thinking is kept in the log (`AssistantMessage.reasoning`) and sent back where its provider
        needs it; a model whose profile has no reasoning raises `CapabilityError` before any request.

        Raises:
            UserError: for an unknown effort or a budget that is not a positive integer.
        """
        from .engine.plan import reasoning_settings

        if not enabled:
            return self._with_config(reasoning=None)
        settings = reasoning_settings(effort if effort is not None else True, budget_tokens)
        return self._with_config(reasoning=settings)

    def cache(self, *, prompt: bool = True, ttl: str | None = None) -> PromptBuilder:
        """Ask the provider to cache the stable prefix of every request (its prompt cache; not threadline's own
        request cache, which is ``generate_text(cache=store)``).

        On Anthropic each request carries ``cache_control`` breakpoints (at most the API's four): on the last tool
        definition, on the system prompt, on the end of what the previous request of the conversation sent, and on
        the newest message, so each round of a tool loop reads what the round before wrote and pays the full price
        only for what is new. OpenAI caches long prefixes by itself: nothing is sent for it. The context builder
        keeps the prefix the same from one request to the next (see `threadline.context`).

        Args:
            prompt: True to cache, False to stop.
            ttl: How long a cached prefix lives: ``"5m"`` or ``"1h"`` (Anthropic's ``ttl``; the longer one costs
                more to write); None: the provider's default (five minutes on Anthropic).

        Raises:
            UserError: for a ``ttl`` other than those, or one given with ``prompt=False``.
        """
        if not isinstance(prompt, bool):
            raise UserError(f"cache(prompt=) must be True or False, got {prompt!r}")
        if ttl is not None and not prompt:
            raise UserError("cache(ttl=) needs prompt=True: a lifetime means nothing without caching")
        if ttl is not None and ttl not in PROMPT_CACHE_TTLS:
            raise UserError(
                f"cache(ttl=) must be one of {', '.join(map(repr, PROMPT_CACHE_TTLS))} (or None), got {ttl!r}"
            )
        return self._with_config(prompt_cache=prompt if ttl is None else ttl)

    def mode(self, mode: str) -> PromptBuilder:
        """Switch the mode (``chat``, ``agent``, ``run``); only the system prefix changes."""
        if mode not in MODES:
            raise UserError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        return self._with_config(mode=mode)

    def persona(self, text: str) -> PromptBuilder:
        """A persona for the system prefix in agent and run modes."""
        return self._with_config(persona=_text(text, "persona"))

    def store(self, store: ConversationStore) -> PromptBuilder:
        """Keep the conversation in a store (every message persisted as it happens)."""
        return self._copy(store=store)

    def conversation_id(self, conversation_id: str) -> PromptBuilder:
        """Continue (or create) the conversation with this id in the store."""
        if not isinstance(conversation_id, str) or not conversation_id:
            raise UserError("conversation_id must be a non-empty string")
        return self._copy(conversation_id=conversation_id)

    # -- execution --------------------------------------------------------------------------------------------
    def prompt_conversation(self, **settings: Any) -> Conversation:
        """Apply the deltas to the conversation (a new one unless this builder refers to one) and return it,
        armed for one turn with ``settings`` (``stream``, ``max_tokens``, ``temperature``, ``timeout``,
        ``max_retries``, ``tool_timeout``, provider-prefixed extras).

        The conversation is reserved for that turn from now until it ends (`Conversation.acquire`): a turn running
        on it is waited for first (outside an event loop; inside one, use `prompt_async`, which waits, or
        ``await conversation.acquire_async()`` before this call).

        Raises:
            ConversationBusy: if the conversation is held by another turn and this call could not wait for it.
        """
        checked = check_settings(settings)  # fail before anything changes
        conversation = self._target()
        with conversation.hold(reserve=True):
            self._apply(conversation, checked)  # the reserved turn's settings, planned when it runs
        return conversation

    def _target(self) -> Conversation:
        """The conversation the deltas go to (made now if the builder refers to none), kept in the builder's store."""
        conversation = self._conversation
        if conversation is None:
            return Conversation(store=self._store, id=self._conversation_id)
        if self._conversation_id is not None and self._conversation_id != conversation.id:
            raise UserError("conversation_id() cannot change the id of an existing conversation")
        if self._store is not None:
            conversation.set_store(self._store)
        return conversation

    def _apply(
        self, conversation: Conversation, armed: CheckedSettings | None = None, settings: CheckedSettings | None = None
    ) -> None:
        """Apply config and message deltas to a conversation the caller holds; arm its next turn with ``armed``
        (None: a turn that runs now, planned by the caller with ``settings``; settings armed before and never used
        are forgotten).

        New messages go to a store only once the model said it could serve the turn (its API key, the settings):
        otherwise the store would keep a request no turn answers, and no failure saying why.
        """
        config = dict(self._config)
        if self._tools:
            merged = list(conversation.config.tools)
            merged.extend(item for item in self._tools if not any(item is known for known in merged))
            config["tools"] = merged
        host = conversation.host
        host.apply_config_deltas(config)
        if self._messages and host.store is not None:
            host.check_model(armed if armed is not None else settings)
        meta = mode_meta(conversation.config.mode)
        for message in self._messages:
            # Calls a crash left unanswered are answered before the new messages (the host's record does it).
            host.record(_fresh(message, meta))
        host.arm(armed)

    async def prompt_async(self, **settings: Any) -> str:
        """Run a turn and return the final answer's text.

        A turn already running on the conversation is waited for first; no other turn gets in between this one's
        messages and its answer (see `Conversation.hold`).
        """
        checked = check_settings(settings)
        conversation = self._target()
        async with conversation.hold():
            self._apply(conversation, settings=checked)
            result = TurnResult()
            async for _ in conversation.host.turn(plan_turn(conversation.config, checked), result):
                pass
        return result.text or ""

    def prompt(self, **settings: Any) -> str:
        """Run a turn and return the final answer's text.

        Outside an event loop this returns the ``str``; inside a running loop it returns an awaitable of it (in
        async code, prefer `prompt_async`, which type checkers understand).
        """
        if in_event_loop():
            return self.prompt_async(**settings)  # type: ignore[return-value]
        return run_sync(self.prompt_async(**settings))

    def prompt_for_type(self, output_type: type[T], *, retries: int = 1, **settings: Any) -> T:
        """Run a turn asking for structured output and return a validated instance of ``output_type``.

        Structured output uses a JSON schema where the provider has it, a final-result tool otherwise, and
        constrained decoding on ``local``. An answer that does not validate is sent back with the errors up to
        ``retries`` times.

        Returns:
            The instance outside an event loop; an awaitable of it inside a running loop (in async code, prefer
            `prompt_for_type_async`).

        Raises:
            OutputValidationError: if no answer validated.
        """
        coroutine = self._prompt_for_type(output_type, retries, settings)
        if in_event_loop():
            return coroutine  # type: ignore[return-value]
        return run_sync(coroutine)

    async def prompt_for_type_async(self, output_type: type[T], *, retries: int = 1, **settings: Any) -> T:
        """`prompt_for_type` for async code."""
        return await self._prompt_for_type(output_type, retries, settings)

    async def _prompt_for_type(self, output_type: type[T], retries: int, settings: Mapping[str, Any]) -> T:
        import pydantic

        adapter = pydantic.TypeAdapter(output_type)
        schema = adapter.json_schema()
        wrapped = schema.get("type") != "object"
        if wrapped:  # providers want an object at the root
            schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
            if "$defs" in schema["properties"]["result"]:
                schema["$defs"] = schema["properties"]["result"].pop("$defs")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(output_type, "__name__", "output"))[:64] or "output"
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise UserError(f"retries must be an integer >= 0, got {retries!r}")  # before anything is recorded
        checked = check_settings(settings)
        conversation = self._target()
        # The messages, the attempts and the feedback between them are one piece of work: no other turn gets in.
        async with conversation.hold():
            self._apply(conversation, settings=checked)
            options = plan_turn(conversation.config, checked, response_format=ResponseFormat(name=name, schema=schema))
            return await self._typed_attempts(conversation, options, adapter, wrapped, name, retries)

    async def _typed_attempts(
        self,
        conversation: Conversation,
        options: TurnOptions,
        adapter: pydantic.TypeAdapter[T],
        wrapped: bool,
        name: str,
        retries: int,
    ) -> T:
        import pydantic

        for attempt in range(retries + 1):
            result = TurnResult()
            async for _ in conversation.host.turn(options, result):
                pass
            text = result.text or ""
            try:
                data = _parse_json(_strip_fences(text))
                if wrapped:
                    if not isinstance(data, dict) or "result" not in data:
                        raise ValueError("expected an object with a 'result' field")
                    data = data["result"]
                return adapter.validate_python(data)
            except (ValueError, pydantic.ValidationError) as exc:
                problem = _describe(exc)
                if attempt == retries:
                    raise OutputValidationError(
                        f"the model's answer is not a valid {name}: {problem}", text=text
                    ) from None
                conversation.host.record(
                    user(
                        f"Your answer did not match the required JSON schema: {problem}. "
                        "Reply with only the JSON value."
                    )
                )
        raise AssertionError("unreachable")

    def stream(self, **settings: Any) -> TextStream:
        """Run a turn and iterate over the answer's text as it streams (``for`` or ``async for``)."""
        return TextStream(self, settings)

    def __repr__(self) -> str:
        target = f"conversation {self._conversation.id}" if self._conversation else "a new conversation"
        return f"<PromptBuilder for {target}: {len(self._messages)} messages, config {sorted(self.delta_config)}>"


ROUND_BREAK = "\n\n"
"""What `TextStream` yields between the text of a tool-calling round and the text of the next round."""


class TextStream:
    """The text of a streamed turn; iterate with ``for`` (outside an event loop) or ``async for``.

    It yields the model's text as it is generated, in every round of the turn. Text a model writes before calling
    tools ("Let me check the weather…") is streamed too: whether a round ends in tool calls is known only when its
    response ends, and holding each round's text back until then would stop the final answer from streaming. The
    text of a round that called tools is followed by a blank line (`ROUND_BREAK`) when more text comes. The final
    answer alone is ``stream.conversation.text`` once the iteration is over.

    Attributes:
        conversation: The conversation the turn ran in (set once iteration starts).
    """

    def __init__(self, builder: PromptBuilder, settings: Mapping[str, Any]) -> None:
        self._builder = builder
        self._settings = dict(settings)
        self.conversation: Conversation | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._run()

    def __iter__(self) -> Iterator[str]:
        return iterate_sync(self._run())

    async def _run(self) -> AsyncIterator[str]:
        import asyncio  # already loaded here (a coroutine is running); not imported with the package

        builder = self._builder
        checked = check_settings(self._settings)
        conversation = builder._target()
        self.conversation = conversation
        async with conversation.hold():
            builder._apply(conversation, settings=checked)
            queue: asyncio.Queue[str | None] = asyncio.Queue()
            rounds = _Rounds(queue.put_nowait)
            result = TurnResult()
            options = plan_turn(conversation.config, checked, on_text=rounds.on_text)

            async def drive() -> None:
                try:
                    async for message in conversation.host.turn(options, result):
                        if isinstance(message, AssistantMessage):
                            rounds.ended(bool(message.tool_calls))
                finally:
                    queue.put_nowait(None)

            task = asyncio.ensure_future(drive())
            try:
                while True:
                    piece = await queue.get()
                    if piece is None:
                        break
                    yield piece
                await task  # re-raises a failure of the turn
            finally:
                if not task.done():
                    task.cancel()
                    try:
                        await task
                    except (asyncio.CancelledError, Exception):
                        pass


class _Rounds:
    """Passes streamed text on, with `ROUND_BREAK` between a tool-calling round's text and the next round's."""

    __slots__ = ("_put", "_separate", "_streamed")

    def __init__(self, put: Callable[[str], Any]) -> None:
        self._put = put
        self._streamed = False
        self._separate = False

    def on_text(self, piece: str) -> None:
        if self._separate:
            self._separate = False
            self._put(ROUND_BREAK)
        self._streamed = True
        self._put(piece)

    def ended(self, called_tools: bool) -> None:
        self._separate = self._separate or (called_tools and self._streamed)
        self._streamed = False


def _fresh(message: Message, meta: MessageMeta | None) -> Message:
    """A copy with a new id and timestamp (a builder may be run many times, and ids are unique within a log),
    tagged with the conversation's mode unless it carries its own meta."""
    if meta is not None and message.meta is DEFAULT_META:
        return msgspec.structs.replace(message, id=new_id(), created_at=datetime.now(UTC), meta=meta)
    return msgspec.structs.replace(message, id=new_id(), created_at=datetime.now(UTC))


def _text(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{what}() takes a str, got {type(text).__name__}")
    return text


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n\s*```\s*$", re.S)


def _strip_fences(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body") if match else text.strip()


def _parse_json(text: str) -> Any:
    """Parse JSON text (raises ValueError with a short reason)."""
    import json

    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None


def _describe(exc: Exception) -> str:
    import pydantic

    if isinstance(exc, pydantic.ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'value'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
    return str(exc)


llm = PromptBuilder()
"""The empty builder: ``llm.agent(...).request(...).prompt()``."""
