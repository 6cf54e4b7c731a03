"""The plan of a turn: the one place a turn's settings get their defaults, and the one check of the settings a call
gives (``prompt(tool_timeout=5)``).

`plan_turn` makes the `TurnOptions` of one turn from a config (a `ConversationConfig`, or None: the defaults alone)
and the call's settings, checked there (`check_settings`) unless they were checked already (`CheckedSettings`). The
defaults are the constants below: `ConversationConfig`, `TurnOptions`, ``generate_text`` and ``request_hash`` take
them from here, and write no copy of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import msgspec

from .._numbers import finite_problem
from ..errors import UserError
from ..message_types import MODES, MessageMeta
from ..models.base import EFFORTS, ModelSettings, ReasoningEffort, ReasoningSettings, ResponseFormat

__all__ = [
    "EXTRA_PREFIXES",
    "MAX_TOOL_ROUNDS",
    "PROMPT_CACHE_TTLS",
    "SETTING_KEYS",
    "STREAM",
    "TOOL_TIMEOUT",
    "TURN_KEYS",
    "CheckedSettings",
    "TurnConfig",
    "TurnOptions",
    "check_settings",
    "mode_meta",
    "plan_turn",
    "reasoning_settings",
    "setting_problem",
]

TOOL_TIMEOUT = 60.0
"""Seconds a tool may run before it is cut off and reported to the model, unless a config or a call says otherwise."""
MAX_TOOL_ROUNDS = 10
"""Tool rounds before a tool-less request forces an answer, unless a config or a call says otherwise."""
STREAM = True
"""Whether answers stream, unless a config or a call says otherwise."""

SETTING_KEYS = ("stream", "max_tokens", "temperature", "timeout", "max_retries", "reasoning", "prompt_cache")
"""The settings of every model call a call may give (`ModelSettings`)."""
TURN_KEYS = ("tool_timeout",)
"""The settings of the turn itself a call may give."""
EXTRA_PREFIXES = ("openai_", "anthropic_", "local_")
"""The prefixes of provider extras a call may give (``openai_seed``)."""
PROMPT_CACHE_TTLS = ("5m", "1h")
"""The lifetimes ``prompt_cache`` may name (Anthropic's ``cache_control.ttl``); True is the provider's default."""


class TurnOptions(msgspec.Struct):
    """What one turn needs beyond the host (made by `plan_turn`).

    Attributes:
        settings: Settings of every model call of the turn.
        tool_choice: Applies to the first request of the turn; later rounds are ``auto``.
        max_tool_rounds: Tool rounds before a tool-less request forces an answer.
        tool_timeout: Seconds a tool may run (a tool's own timeout wins).
        response_format: A JSON schema for structured output.
        on_text: Called with each piece of text as the model streams it.
        on_reasoning: Called with each piece of the model's thinking as it streams (its parts, within an answer and
            from one answer to the next, are separated by a blank line); thinking never reaches ``on_text``.
        run_brief: The run's brief (`RunBrief`: directive, node brief, step context) for the context builder.
        meta: The `MessageMeta` every message of the turn is tagged with (None: the shared default).
        approval: The turn's approval policy for tools that say nothing of approval (`waits.ApprovalPolicy`).
        turn_budget: The turn's spending limit (`threadline.engine.spending.Budget`), checked before each model
            request; None: no limit.
        budget: The conversation's spending limit, summed from its log and checked the same way.
        recover: The turn goes on after its process died (a durable worker's recovery): a call left without a
            result runs again if its tool is idempotent (``@tool(idempotent=True)``), else it waits for a person
            ("it may have run"), instead of being answered ``interrupted``.
    """

    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    tool_choice: str | None = None
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    tool_timeout: float | None = TOOL_TIMEOUT
    response_format: ResponseFormat | None = None
    on_text: Callable[[str], Any] | None = None
    on_reasoning: Callable[[str], Any] | None = None
    run_brief: Any = None
    meta: Any = None
    approval: Any = None
    turn_budget: Any = None
    budget: Any = None
    recover: bool = False


class TurnConfig(Protocol):
    """What `plan_turn` reads of a config; a `ConversationConfig` is one."""

    stream: bool
    max_tokens: int | None
    temperature: float | None
    timeout: float | None
    max_retries: int | None
    extras: dict[str, Any]
    reasoning: ReasoningSettings | None
    prompt_cache: bool | str | None
    tool_choice: str | None
    max_tool_rounds: int
    tool_timeout: float | None
    mode: str | None
    approval: Any
    turn_budget: Any
    budget: Any


class CheckedSettings(dict[str, Any]):
    """A call's settings as `check_settings` returns them (provider extras gathered under ``extras``); `plan_turn`
    takes them as they are, without checking them again."""


def plan_turn(
    config: TurnConfig | None = None, settings: Mapping[str, Any] | None = None, /, **overrides: Any
) -> TurnOptions:
    """The options of one turn: ``settings`` (a call's, e.g. ``tool_timeout=5``) over ``config``'s, over the
    defaults of this module; then ``overrides`` (fields of `TurnOptions`, e.g. ``on_text=``, or a whole
    ``settings=ModelSettings(…)``). The messages of the
    turn are tagged with the config's mode (`mode_meta`) unless ``overrides`` give a ``meta``.

    Pure: it reads ``config`` and changes nothing.

    Raises:
        UserError: for an unknown setting or a value it cannot take, naming it (settings not checked yet only).
    """
    checked = settings if isinstance(settings, CheckedSettings) else check_settings(settings or {})

    def pick(key: str, default: Any) -> Any:
        if key in checked:
            return checked[key]
        return default if config is None else getattr(config, key)

    extras = {} if config is None else dict(config.extras)
    extras.update(checked.get("extras", ()))
    fields: dict[str, Any] = {
        "settings": ModelSettings(
            stream=pick("stream", STREAM),
            max_tokens=pick("max_tokens", None),
            temperature=pick("temperature", None),
            timeout=pick("timeout", None),
            max_retries=pick("max_retries", None),
            extras=extras,
            reasoning=pick("reasoning", None),
            prompt_cache=pick("prompt_cache", None),
        ),
        "tool_choice": None if config is None else config.tool_choice,
        "max_tool_rounds": MAX_TOOL_ROUNDS if config is None else config.max_tool_rounds,
        "tool_timeout": pick("tool_timeout", TOOL_TIMEOUT),
        "meta": None if config is None else mode_meta(config.mode),
        "approval": None if config is None else config.approval,
        "turn_budget": None if config is None else config.turn_budget,
        "budget": None if config is None else config.budget,
    }
    fields.update(overrides)
    return TurnOptions(**fields)


def mode_meta(mode: str | None) -> MessageMeta | None:
    """The meta new messages are tagged with in ``mode`` (None when no mode is set)."""
    return MessageMeta(mode=mode) if mode in MODES else None


def check_settings(settings: Mapping[str, Any]) -> CheckedSettings:
    """Check the keyword settings of a call (``prompt*``, ``generate_text``); provider-prefixed ones are gathered
    under ``extras``.

    Raises:
        UserError: for an unknown setting, or a value it cannot take.
    """
    if isinstance(settings, CheckedSettings):
        return settings
    out = CheckedSettings()
    extras: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "reasoning":
            out[key] = reasoning_settings(value)
        elif key in SETTING_KEYS or key in TURN_KEYS:
            problem = setting_problem(key, value)
            if problem is not None:
                raise UserError(problem)
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


def setting_problem(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be the setting ``key``, or None. Checked where it is given (a wrong one used to fail
    later, or act oddly: every tool "did not finish in -1 s")."""
    if value is None:
        return None
    problem = finite_problem(value)
    if problem is not None:
        return f"{key} {problem} (or None)"
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
    elif key == "prompt_cache":
        ok = isinstance(value, bool) or value in PROMPT_CACHE_TTLS
        wanted = f"True, False or a lifetime ({', '.join(map(repr, PROMPT_CACHE_TTLS))})"
    else:  # reasoning: checked by reasoning_settings
        return None
    return None if ok else f"{key} must be {wanted} (or None), got {value!r}"


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
