"""`Conversation`: owns a `MessageList` and a `ConversationConfig`, runs turns, persists what they produce.

Iterating a conversation (``async for message in conversation``) runs one turn with the settings it was armed with
(`PromptBuilder.prompt_conversation`) and yields each new message as it is recorded. ``conversation.continuation``
returns a builder that refers to this same conversation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ._ids import new_id
from .context import BuiltContext, ContextBuilder, ContextSettings, artifact_uri
from .errors import StoreError, UserError
from .loop import TurnOptions, TurnResult, run_turn
from .messages import AssistantMessage, Message, MessageList, MessageMeta, UserMessage
from .models.base import Model, ModelSettings
from .tools import ResolvedTools, Tool, Toolset, resolve_tools

if TYPE_CHECKING:
    from .builder import PromptBuilder
    from .store.base import Store

__all__ = ["Conversation", "ConversationConfig", "split_settings"]

SETTING_KEYS = ("stream", "max_tokens", "temperature", "timeout", "max_retries")
TURN_KEYS = ("tool_timeout",)
EXTRA_PREFIXES = ("openai_", "anthropic_", "local_")
MODES = ("chat", "agent", "run")


class ConversationConfig(msgspec.Struct):
    """How a conversation's turns run. Every field can be changed with `Conversation.apply_config_deltas`.

    Attributes:
        model: A model name (``local``, ``openai:gpt-4o``…) or a `Model`; None means the provider's default model,
            else ``THREADLINE_MODEL``, else ``local``.
        provider: A provider name whose default model is used when ``model`` is None.
        tools: Functions, `Tool`s, `Toolset`s and dynamic providers offered on every request.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool name; applies to the first request of a turn.
        max_tool_rounds: Tool rounds before a tool-less request forces an answer.
        mode: ``"chat"``, ``"agent"`` or ``"run"``; changes only the system prefix.
        persona: Added to the system prefix in agent and run modes.
        stream: Stream answers.
        max_tokens: Upper bound on tokens per model call.
        temperature: Sampling temperature.
        timeout: Seconds to wait for the model.
        max_retries: Retries of retryable provider failures.
        extras: Provider-prefixed extras (``openai_…``, ``anthropic_…``, ``local_…``).
        tool_timeout: Seconds a tool may run before it is cut off and reported to the model.
        context: The context builder (or just its settings).
    """

    model: str | Model | None = None
    provider: str | None = None
    tools: list[Any] = msgspec.field(default_factory=list)
    tool_choice: str | None = None
    max_tool_rounds: int = 10
    mode: str | None = None
    persona: str | None = None
    stream: bool = True
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extras: dict[str, Any] = msgspec.field(default_factory=dict)
    tool_timeout: float | None = 60.0
    context: ContextBuilder | ContextSettings | None = None


_CONFIG_FIELDS = frozenset(ConversationConfig.__struct_fields__)
_default_context = ContextBuilder()


def split_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Check the keyword settings of ``prompt*`` calls; provider-prefixed ones are gathered under ``extras``.

    Raises:
        UserError: for an unknown setting.
    """
    out: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in settings.items():
        if key in SETTING_KEYS or key in TURN_KEYS:
            out[key] = value
        elif key.startswith(EXTRA_PREFIXES):
            extras[key] = value
        else:
            known = ", ".join((*SETTING_KEYS, *TURN_KEYS))
            raise UserError(
                f"unknown setting {key!r}: use one of {known}, or a provider-prefixed extra like openai_seed"
            )
    if extras:
        out["extras"] = extras
    return out


class Conversation:
    """A conversation: its log, its config, and optionally a store that keeps every message as it happens.

    Args:
        messages: The log to start from (a `MessageList` is used as is, not copied).
        config: How turns run.
        store: Persist every message here the moment it exists.
        id: The conversation id (a new one by default). With a store that already has this id and no ``messages``,
            the stored log is loaded.
    """

    def __init__(
        self,
        messages: MessageList | Iterable[Message] | None = None,
        config: ConversationConfig | None = None,
        *,
        store: Store | None = None,
        id: str | None = None,
    ) -> None:
        self.config = config or ConversationConfig()
        self.id: str = id or new_id()
        self.store = store
        self.last_turn: TurnResult | None = None
        self._armed: dict[str, Any] = {}
        self._attached: dict[str, Any] = {}
        self._mentions: dict[str, None] = {}
        self._mention_tools: dict[str, tuple[Any, Toolset]] = {}
        self._artifacts: dict[str, str] = {}
        self._saved_artifacts: set[str] = set()
        self._artifact_tool: Tool | None = None
        self._memory_cache: dict[str, Any] = {}
        self._call_ids: set[str] | None = None
        self._window_cache: dict[Any, Any] = {}
        self._in_store = False
        self._untitled = False  # stored without a title yet: the first user message names it
        if store is not None and id is not None and store.has_conversation(id):
            if messages is not None:
                raise UserError(
                    f"conversation {id!r} already exists in the store; use Conversation.load({id!r}, store) "
                    "to continue it"
                )
            messages = store.load(id)
            info = store.get_conversation(id)
            if info.active_mode and self.config.mode is None:
                self.config.mode = info.active_mode
            self._in_store = True
        if isinstance(messages, MessageList):
            self.messages = messages
        else:
            self.messages = MessageList(messages or ())
        for message in self.messages:
            self._note_mentions(message)
        if store is not None and not self._in_store and len(self.messages):
            self._ensure_stored()
            store.append(self.id, list(self.messages))

    # -- construction -----------------------------------------------------------------------------------------
    @classmethod
    def load(cls, id: str, store: Store, config: ConversationConfig | None = None) -> Conversation:
        """Restore a stored conversation (its log and its active mode).

        Raises:
            StoreError: if the store has no conversation with that id.
        """
        if not store.has_conversation(id):
            raise StoreError(f"no conversation {id!r} in {store.url}")
        return cls(config=config, store=store, id=id)

    @property
    def continuation(self) -> PromptBuilder:
        """A fresh builder that refers to this conversation."""
        from .builder import PromptBuilder

        return PromptBuilder(conversation=self)

    def apply_config_deltas(self, deltas: Mapping[str, Any]) -> None:
        """Set config fields.

        Raises:
            ValueError: for an unknown key (nothing is changed then).
        """
        unknown = [key for key in deltas if key not in _CONFIG_FIELDS]
        if unknown:
            raise ValueError(f"Unknown config key: {', '.join(map(repr, unknown))}")
        if "mode" in deltas and deltas["mode"] is not None and deltas["mode"] not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {deltas['mode']!r}")
        for key, value in deltas.items():
            setattr(self.config, key, value)
        if "mode" in deltas and self.store is not None and deltas["mode"] is not None:
            self._ensure_stored()
            self.store.update_metadata(self.id, active_mode=deltas["mode"])

    def attach(self, ref: str, obj: Any) -> None:
        """Bind a live object to a mention ``ref`` (e.g. after a reload); its tools are offered from now on."""
        self._attached[ref] = obj
        self._mentions.setdefault(ref, None)

    # -- the log ----------------------------------------------------------------------------------------------
    def add(self, *messages: Message) -> None:
        """Append messages to the log (and the store)."""
        for message in messages:
            self._record(message)

    def _record(self, message: Message) -> None:
        self.messages.append(message)
        self._note_mentions(message)
        if self._call_ids is not None and type(message) is AssistantMessage and message.tool_calls:
            self._call_ids.update(call.id for call in message.tool_calls)
        if self.store is not None:
            self._ensure_stored()
            self.store.append(self.id, (message,))
            if self._untitled and type(message) is UserMessage and message.content.strip():
                # The row was made before any user message (e.g. to keep the mode): title it now.
                self.store.update_metadata(self.id, title=self._title())
                self._untitled = False

    def _known_call_ids(self) -> set[str]:
        """Every tool-call id in the log (built on first use, then kept up to date by `_record`)."""
        if self._call_ids is None:
            self._call_ids = {
                call.id for message in self.messages if type(message) is AssistantMessage for call in message.tool_calls
            }
        return self._call_ids

    def _ensure_stored(self) -> None:
        if self._in_store or self.store is None:
            return
        if not self.store.has_conversation(self.id):
            title = self._title()
            self.store.create_conversation(title=title, id=self.id)
            self._untitled = title is None
            if self.config.mode is not None:
                self.store.update_metadata(self.id, active_mode=self.config.mode)
        self._in_store = True

    def _title(self) -> str | None:
        for message in self.messages:
            if type(message) is UserMessage and message.content.strip():
                text = " ".join(message.content.split())
                return text if len(text) <= 80 else text[:79] + "…"
        return None

    def _note_mentions(self, message: Message) -> None:
        if type(message) is UserMessage and message.attachments:
            for attachment in message.attachments:
                if attachment.kind == "mention" and attachment.ref:
                    self._mentions.setdefault(attachment.ref, None)
                    if attachment.object is not None:
                        self._attached[attachment.ref] = attachment.object

    @property
    def text(self) -> str | None:
        """The content of the last assistant message."""
        for message in reversed(self.messages):
            if type(message) is AssistantMessage:
                return message.content
        return None

    # -- turns ------------------------------------------------------------------------------------------------
    def resolve_model(self) -> Model:
        """The model the next turn uses."""
        from .models import DEFAULT_MODELS, get_model

        config = self.config
        if config.model is not None:
            return get_model(config.model)
        if config.provider is not None:
            if config.provider not in DEFAULT_MODELS:
                raise UserError(
                    f"unknown provider {config.provider!r}: use one of {', '.join(DEFAULT_MODELS)} or .model(...)"
                )
            return get_model(DEFAULT_MODELS[config.provider])
        return get_model(None)

    def _arm(self, settings: Mapping[str, Any]) -> None:
        self._armed = split_settings(settings)

    def _turn_options(self, **overrides: Any) -> TurnOptions:
        config = self.config
        armed = self._armed
        extras = dict(config.extras)
        extras.update(armed.get("extras", {}))
        settings = ModelSettings(
            stream=armed.get("stream", config.stream),
            max_tokens=armed.get("max_tokens", config.max_tokens),
            temperature=armed.get("temperature", config.temperature),
            timeout=armed.get("timeout", config.timeout),
            max_retries=armed.get("max_retries", config.max_retries),
            extras=extras,
        )
        meta = MessageMeta(mode=config.mode) if config.mode in MODES else None  # type: ignore[arg-type]
        options = TurnOptions(
            settings=settings,
            tool_choice=config.tool_choice,
            max_tool_rounds=config.max_tool_rounds,
            tool_timeout=armed.get("tool_timeout", config.tool_timeout),
            meta=meta,
        )
        for key, value in overrides.items():
            setattr(options, key, value)
        return options

    def run(self, **overrides: Any) -> AsyncIterator[Message]:
        """Run one turn with the armed settings (plus `TurnOptions` overrides); yields each new message."""
        options = self._turn_options(**overrides)
        self._armed = {}
        return run_turn(self, options)

    def __aiter__(self) -> AsyncIterator[Message]:
        return self.run()

    def _resolve_tools(self) -> ResolvedTools:
        resolved = resolve_tools(self.config.tools, self)
        for ref in self._mentions:
            obj = self._attached.get(ref)
            if obj is None:
                continue
            cached = self._mention_tools.get(ref)
            if cached is None or cached[0] is not obj:
                toolset = Toolset.from_object(obj)
                if any(name in resolved.tools for name in toolset.names()):
                    toolset = Toolset.from_object(obj, name=ref)
                cached = (obj, toolset)
                self._mention_tools[ref] = cached
            resolved.add(cached[1], self)
        return resolved

    def _context_builder(self) -> ContextBuilder:
        context = self.config.context
        if context is None:
            return _default_context
        if isinstance(context, ContextSettings):
            builder = ContextBuilder(settings=context)
            self.config.context = builder
            return builder
        return context

    def build_context(self, mode: str | None = None, run_context: Any = None) -> BuiltContext:
        """The request the next turn would send (without a summary note), and its report; changes nothing but
        saving large tool outputs as artifacts. Used by ``threadline logs show ID --context``."""
        return self._build(self._resolve_tools(), mode or self.config.mode, run_context, cache=None)

    def _build(
        self, tools: ResolvedTools, mode: str | None, run_context: Any, cache: dict[Any, Any] | None
    ) -> BuiltContext:
        builder = self._context_builder()
        counter = None
        if builder.settings.max_tokens is not None and builder.settings.token_counter is None:
            counter = getattr(self.resolve_model(), "count_tokens", None)
        return builder.build(
            self.messages,
            mode,
            self.config.persona,
            run_context,
            tools,
            artifacts=self._save_artifact,
            conversation_id=self.id,
            token_counter=counter,
            cache=cache,
        )

    async def _build_context(self, tools: ResolvedTools, run_context: Any = None) -> BuiltContext:
        builder = self._context_builder()
        built = self._build(tools, self.config.mode, run_context, self._window_cache)
        cut = built.report.dropped_span()[1]
        if builder.settings.summarizer is not None and cut > 0:
            summary = await self._summary_of_head(cut)
            if summary:
                builder.add_summary(built, summary)
        return built

    async def _summary_of_head(self, cut: int) -> str | None:
        """A summary of the log's first ``cut`` messages, rolled forward from the last one and cached by span."""
        from ._summary import summarize
        from .models import get_model

        items = self.messages._items
        first, last = items[0].id, items[cut - 1].id
        span_key = f"summary:{self.id}:{first}:{last}"
        latest_key = f"summary:{self.id}:latest"
        cached = self._cache_get(span_key)
        if isinstance(cached, str):
            return cached
        previous: str | None = None
        start = 0
        latest = self._cache_get(latest_key)
        if isinstance(latest, dict):
            index = latest.get("upto_index")
            if (
                isinstance(index, int)
                and 0 <= index < cut
                and items[index].id == latest.get("upto_id")
                and isinstance(latest.get("text"), str)
            ):
                previous, start = latest["text"], index + 1
        summarizer = self._context_builder().settings.summarizer
        assert summarizer is not None
        try:
            text = await summarize(get_model(summarizer), previous, items[start:cut])
        except Exception as exc:  # a failed summary must not fail the turn: the window is sent without it
            import logging

            logging.getLogger("threadline").warning("summarizer failed, sending the window without a summary: %s", exc)
            return None
        if text:
            self._cache_put(span_key, text)
            self._cache_put(latest_key, {"upto_index": cut - 1, "upto_id": last, "text": text})
        return text or None

    def _cache_get(self, key: str) -> Any:
        if self.store is not None:
            return self.store.cache_get(key)
        return self._memory_cache.get(key)

    def _cache_put(self, key: str, value: Any) -> None:
        if self.store is not None:
            self.store.cache_put(key, value)
        else:
            self._memory_cache[key] = value

    # -- artifacts --------------------------------------------------------------------------------------------
    def _save_artifact(self, name: str, content: str) -> str:
        if name not in self._saved_artifacts:
            if self.store is not None:
                self._ensure_stored()
                self.store.save_artifact(self.id, name, content)
            else:
                self._artifacts[name] = content
            self._saved_artifacts.add(name)
        return artifact_uri(self.id, name)

    def read_artifact(self, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read an artifact of this conversation (a full tool output saved by the context builder).

        Raises:
            StoreError: if there is no such artifact.
        """
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must not be negative")
        if self.store is not None:
            return self.store.read_artifact(self.id, name, offset, limit)
        if name not in self._artifacts:
            raise StoreError(f"no artifact {name!r} in conversation {self.id}")
        text = self._artifacts[name]
        return text[offset:] if limit is None else text[offset : offset + limit]

    def _with_artifact_reader(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        from .toolboxes.artifacts import artifact_reader

        offered = dict(tools)
        if self._artifact_tool is None:
            self._artifact_tool = artifact_reader(self)
        offered.setdefault(self._artifact_tool.name, self._artifact_tool)
        return offered

    def __repr__(self) -> str:
        return f"<Conversation {self.id} ({len(self.messages)} messages)>"
