"""`ConversationConfig`: how a conversation's turns run; and the check of the keyword settings of ``prompt*``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec

from ._numbers import finite_problem
from .context import ContextBuilder, ContextSettings
from .errors import UserError
from .models.base import EFFORTS, Model, ReasoningEffort, ReasoningSettings

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

SETTING_KEYS = ("stream", "max_tokens", "temperature", "timeout", "max_retries", "reasoning")
TURN_KEYS = ("tool_timeout",)
EXTRA_PREFIXES = ("openai_", "anthropic_", "local_")


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
        tool_timeout: Seconds a tool may run before it is cut off and reported to the model.
        context: The context builder (or just its settings).
        busy_timeout: Seconds a turn (or `Conversation.add`) waits while another turn holds the conversation — in
            this process, or in another one sharing the store — before it raises `ConversationBusy`; None waits as
            long as it takes.
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
    reasoning: ReasoningSettings | None = None
    tool_timeout: float | None = 60.0
    context: ContextBuilder | ContextSettings | None = None
    busy_timeout: float | None = 300.0

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
    if key in SETTING_KEYS or key in TURN_KEYS:
        try:
            _check_value(key, value)
        except UserError as exc:
            return str(exc)
    return None


def check_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Check the keyword settings of ``prompt*`` calls; provider-prefixed ones are gathered under ``extras``.

    Raises:
        UserError: for an unknown setting, or a value it cannot take.
    """
    out: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "reasoning":
            out[key] = reasoning_settings(value)
        elif key in SETTING_KEYS or key in TURN_KEYS:
            _check_value(key, value)
            out[key] = value
        elif key.startswith(EXTRA_PREFIXES):
            problem = finite_problem(value)
            if problem is not None:
                raise UserError(f"{key} {problem} (a request cannot carry infinity or NaN)")
            extras[key] = value
        else:
            known = ", ".join((*SETTING_KEYS, *TURN_KEYS))
            raise UserError(
                f"unknown setting {key!r}: use one of {known}, or a provider-prefixed extra like openai_seed"
            )
    if extras:
        out["extras"] = extras
    return out


def _check_value(key: str, value: Any) -> None:
    """A setting's value, checked where it is given (a wrong one used to fail later, or act oddly: every tool
    "did not finish in -1 s")."""
    if value is None:
        return
    problem = finite_problem(value)
    if problem is not None:
        raise UserError(f"{key} {problem} (or None)")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "stream":
        ok, wanted = isinstance(value, bool), "True or False"
    elif key in ("max_tokens",):
        ok, wanted = isinstance(value, int) and not isinstance(value, bool) and value > 0, "a positive integer"
    elif key == "max_retries":
        ok, wanted = isinstance(value, int) and not isinstance(value, bool) and value >= 0, "an integer >= 0"
    elif key == "temperature":
        ok, wanted = number and value >= 0, "a number >= 0"
    elif key in ("timeout", "tool_timeout"):
        ok, wanted = number and value > 0 and value == value, "a number of seconds > 0"
    else:  # reasoning: checked by reasoning_settings
        return
    if not ok:
        raise UserError(f"{key} must be {wanted} (or None), got {value!r}")


def reasoning_settings(value: Any = None, budget_tokens: Any = None) -> ReasoningSettings | None:
    """Reasoning settings from what a caller may write: a `ReasoningSettings`, an effort (``"low"``, ``"medium"``,
    ``"high"``), a mapping with ``effort`` and/or ``budget_tokens``, ``True`` (on, default effort), or None/False
    (off, unless ``budget_tokens`` is given).

    Raises:
        UserError: for an unknown effort, a budget that is not a positive integer, or another kind of value.
    """
    effort: Any
    budget: Any
    if isinstance(value, ReasoningSettings):
        effort, budget = value.effort, value.budget_tokens
    elif isinstance(value, Mapping):
        unknown = set(value) - {"effort", "budget_tokens"}
        if unknown:
            raise UserError(f"reasoning takes effort and budget_tokens, not {', '.join(sorted(map(str, unknown)))}")
        effort, budget = value.get("effort"), value.get("budget_tokens")
    elif value is True:
        effort, budget = None, None
    elif value is None or value is False:
        if budget_tokens is None:
            return None
        effort, budget = None, None
    elif isinstance(value, str):
        effort, budget = value, None
    else:
        raise UserError(f"reasoning must be an effort ({', '.join(EFFORTS)}), a mapping or True, got {value!r}")
    if budget_tokens is not None:
        budget = budget_tokens
    if effort is not None and effort not in EFFORTS:
        raise UserError(f"reasoning effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    if budget is not None and (type(budget) is not int or budget < 1):
        raise UserError(f"reasoning budget_tokens must be a positive integer, got {budget!r}")
    return ReasoningSettings(effort=cast("ReasoningEffort | None", effort), budget_tokens=budget)


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
