"""`ConversationConfig`: how a conversation's turns run, each field checked where it is set (`config_problem`).

The check of a call's keyword settings (`check_settings`, `reasoning_settings`) and the defaults of a turn are
`threadline.engine.plan`'s; they are named here too, where they were first.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._numbers import finite_problem
from ..context import ContextBuilder, ContextSettings
from ..engine.plan import (
    EXTRA_PREFIXES,
    MAX_TOOL_ROUNDS,
    SETTING_KEYS,
    STREAM,
    TOOL_TIMEOUT,
    TURN_KEYS,
    check_settings,
    reasoning_settings,
    setting_problem,
)
from ..engine.spending import Budget
from ..errors import UserError
from ..models.base import Model, ReasoningSettings
from ..tools.tool import approval_problem

__all__ = [
    "CONFIG_FIELDS",
    "EXTRA_PREFIXES",
    "SETTING_KEYS",
    "TURN_KEYS",
    "ConversationConfig",
    "check_settings",
    "own_config",
    "own_value",
    "reasoning_settings",
]


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
        timeout: Seconds to wait for the model: the longest one attempt of an HTTP model call may take in all,
            from the request to the answer's last byte (see `ModelSettings`).
        max_retries: Retries of retryable provider failures.
        extras: Provider-prefixed extras (``openai_…``, ``anthropic_…``, ``local_…``).
        reasoning: A reasoning model's thinking: on, and how much (see `reasoning_settings`); None: the provider's
            default.
        prompt_cache: Ask the provider to cache each request's stable prefix (``.cache(prompt=True)``): True (the
            provider's default lifetime), a lifetime (``"5m"``, ``"1h"``), or None/False (off). See
            `ModelSettings.prompt_cache`.
        tool_timeout: Seconds a tool may run before it is cut off and reported to the model.
        context: The context builder (or just its settings).
        busy_timeout: Seconds a turn (or `Conversation.add`) waits while another turn holds the conversation — in
            this process, or in another one sharing the store — before it raises `ConversationBusy`; None waits as
            long as it takes.
        approval: The approval policy for tools that say nothing of approval: True (every call waits for a
            person's decision), False or None (none waits), or a function of the `ToolCall` answering True, False
            or a reason (see `threadline.engine.waits`).
        turn_budget: The spending limit of each turn (`Budget`, set with ``.budget(..., per="turn")``), checked
            before each model request; None: no limit.
        budget: The spending limit of the whole conversation, summed from its log (``.budget(...,
            per="conversation")``); None: no limit.
    """

    model: str | Model | None = None
    provider: str | None = None
    tools: list[Any] = msgspec.field(default_factory=list)
    tool_choice: str | None = None
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    mode: str | None = None
    persona: str | None = None
    stream: bool = STREAM
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extras: dict[str, Any] = msgspec.field(default_factory=dict)
    reasoning: ReasoningSettings | None = None
    prompt_cache: bool | str | None = None
    tool_timeout: float | None = TOOL_TIMEOUT
    context: ContextBuilder | ContextSettings | None = None
    busy_timeout: float | None = 300.0
    approval: Any = None
    turn_budget: Budget | None = None
    budget: Budget | None = None

    def __post_init__(self) -> None:
        for key in _CHECKED_FIELDS:
            problem = config_problem(key, getattr(self, key))
            if problem is not None:
                raise UserError(problem)


CONFIG_FIELDS = frozenset(ConversationConfig.__struct_fields__)
_CHECKED_FIELDS = (
    "model",
    "tools",
    "max_tool_rounds",
    "busy_timeout",
    "stream",
    "max_tokens",
    "temperature",
    "timeout",
    "max_retries",
    "tool_timeout",
    "approval",
    "prompt_cache",
    "turn_budget",
    "budget",
)


def config_problem(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be the config field ``key`` (checked where it is set, not at the next turn), or None."""
    if key == "model":
        ok = value is None or isinstance(value, (str, Model))
        return None if ok else f"model must be a model name or a Model, got {type(value).__name__} {value!r:.60}"
    if key == "tools":
        ok = isinstance(value, (list, tuple))
        return None if ok else f"tools must be a list of tools, got {type(value).__name__} {value!r:.60}"
    if key == "max_tool_rounds":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else f"max_tool_rounds must be an integer >= 0, got {value!r}"
    if key == "busy_timeout":
        problem = finite_problem(value)
        if problem is not None:
            return f"busy_timeout {problem}"
        ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0)
        return None if ok else f"busy_timeout must be a number of seconds > 0 (or None), got {value!r}"
    if key == "approval":
        return approval_problem(value)
    if key in ("budget", "turn_budget"):
        ok = value is None or isinstance(value, Budget)
        return None if ok else f"{key} must be a Budget (set it with .budget(...)) or None, got {value!r:.60}"
    if key in SETTING_KEYS or key in TURN_KEYS:
        return setting_problem(key, value)
    return None


def own_config(config: ConversationConfig) -> ConversationConfig:
    """A conversation's own copy of a config: deltas on one conversation must never reach another."""
    return msgspec.structs.replace(config, tools=list(config.tools), extras=dict(config.extras))


def own_value(value: Any) -> Any:
    """A config value the conversation owns: lists and dicts are copied (the caller may change theirs later)."""
    if type(value) is list:
        return list(value)
    if type(value) is dict:
        return dict(value)
    return value
