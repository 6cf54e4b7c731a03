"""Capability profiles of the model families the HTTP adapters know.

A profile says what a family can do (`ModelCapabilities`: tools, streaming, structured output, images, context
length) and how its wire format differs (the role of system text, the name of the token limit, the default
``max_tokens``). The adapters read flags from here and never test model names themselves; this module is the one
place where names are matched, by longest prefix.

A name that matches no family gets a conservative profile: an unknown OpenAI-compatible model (Ollama, vLLM,
llama-server) is assumed to take tools and stream but not images, and structured output goes through a forced
final-result tool rather than ``response_format``. Pass ``capabilities=`` to the model's constructor to say more.

A profile also says what the OpenAI adapter sends about tools, which is a property of the *server* rather than of
the model family: the ``tool_choice`` sent when the caller sets none, whether requests that offer tools may be
streamed, and the ``content`` of an assistant message that only calls tools. The defaults are exactly what
OpenAI's own API expects. `SERVERS` names the presets of servers that differ (llama-cpp-python's server, tested in
CI), and `with_server` applies a preset or single options, from ``server=`` or ``THREADLINE_OPENAI_SERVER``,
whatever the base URL is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from ..errors import UserError
from .base import ModelCapabilities

__all__ = [
    "SERVERS",
    "ModelProfile",
    "ToolStreaming",
    "anthropic_profile",
    "known_families",
    "openai_profile",
    "server_options",
]

SystemRole = Literal["system", "developer", "user"]
ToolStreaming = Literal["all", "named", "none"]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What one model family can do and how its requests are shaped.

    Attributes:
        family: The family's name prefix (``"gpt-4o"``), or ``""`` for the fallback profile.
        capabilities: The flags the engine checks before sending.
        max_output_tokens: The ``max_tokens`` sent when the caller sets none (Anthropic always needs one).
        output_limit: The most tokens the family can generate in one answer, when known (a thinking budget must
            fit under it).
        system_role: How system text is sent on OpenAI: ``"system"``, ``"developer"`` (reasoning models) or
            ``"user"`` (models that refuse both).
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"`` (OpenAI reasoning models).
        temperature: Whether the family accepts a ``temperature``; when not, a set temperature is left out.
        tool_choice_default: The ``tool_choice`` sent with tools when the caller sets none. None leaves the field
            out, as OpenAI's API expects (it means ``"auto"`` there); servers that ignore tools without it, such as
            llama-cpp-python's, need ``"auto"``.
        tool_streaming: Which requests that offer tools may be streamed: ``"all"``, only those that force one
            tool by name (``"named"``), or ``"none"``. The others are sent unstreamed and their text arrives as
            one piece: servers that cannot stream an automatic tool choice answer them with an error or nothing.
        tool_call_content: The ``content`` sent on an assistant message that only calls tools. ``""`` is what
            every server tested accepts (llama.cpp's servers refuse ``null`` and a missing key); None sends
            ``null``. The log itself is never changed.
        reasoning_content: Whether the thinking a compatible server returned (``reasoning_content`` or
            ``reasoning``) is sent back on its assistant messages, as ``reasoning_content``: ``"drop"`` (the
            default: most servers ignore it, and DeepSeek's deepseek-reasoner guide answers HTTP 400 to it) or
            ``"send"`` (DeepSeek's thinking mode requires it on turns that called tools). Only thinking from this
            wire family is ever sent; the log keeps all of it either way.
        thought_signatures: Whether the thought signatures Gemini's OpenAI-compatible API attaches to tool calls
            (``extra_content.google.thought_signature``, kept as `Reasoning` pieces with ``provider="google"``) are
            sent back on those calls: ``"send"`` for Gemini, which answers 400 "Function call is missing a
            thought_signature in functionCall parts" without them, ``"drop"`` elsewhere (the log keeps them).
        reasoning_details: Whether the ``reasoning_details`` entries OpenRouter (and Vercel's AI Gateway) return
            with a reasoning model's answer, kept as `Reasoning` pieces with ``provider="openrouter"``, are sent
            back on its assistant messages, unchanged and in order: ``"send"`` on those servers (their guide asks
            for it, and Gemini or Claude behind them refuse a tool loop without its signatures), ``"drop"``
            elsewhere, where the field is unknown. Set from the base URL's host for those two (`server_for_url`).
        reasoning_request: How ``.reasoning()`` is sent on Chat Completions: ``"effort"`` (``reasoning_effort``,
            OpenAI's field) or ``"object"`` (OpenRouter's ``reasoning: {"effort": …}`` or ``{"max_tokens": …}``,
            which it maps to each model behind it; every model there then takes reasoning settings).
        think_tags: On Chat Completions, whether a ``<think>…</think>`` block that opens an answer's text is the
            model's thinking (``"split"``, the default: kept as reasoning, not as the answer), as servers without
            a reasoning parser send it (vLLM without ``--reasoning-parser``, llama.cpp's ``--reasoning-format
            none``, LM Studio); ``"keep"`` leaves the text as it came. Only when the server sent no thinking field.
        reasoning_summary: The reasoning summary asked for on the Responses API when reasoning settings are given
            (``"auto"``, ``"concise"``, ``"detailed"``), or None to ask for none: OpenAI generates summaries only
            for verified organizations ("Your organization must be verified to generate reasoning summaries").
        thinking: How Claude is asked to think: ``"budget"`` (``thinking: {"type": "enabled", "budget_tokens":
            N}``, the only mode of Claude 4.5 and earlier), ``"adaptive"`` (``thinking: {"type": "adaptive"}`` with
            ``output_config.effort``, the only mode of Claude Opus 4.7 and later), or None (no thinking).
        forced_tool: Whether the family accepts a ``tool_choice`` that forces a tool (``"required"``, a tool's name,
            structured output). Claude Opus 5.5, Sonnet 5.5, Fable 5.1 and later refuse it on every request.
        prefill: Whether a request may end with an assistant turn (a prefill). Claude 4.6 and later refuse it.
        effort_with_tools: What Chat Completions does with ``reasoning_effort`` on a request that offers function
            tools: ``"any"`` (takes it), ``"refused"`` (answers 400, "Function tools with reasoning_effort are not
            supported for gpt-5.4 in /v1/chat/completions": reasoning settings with tools are a `CapabilityError`,
            pointing to ``openai-responses:``), or ``"none"`` (the same, and the model's own default effort counts
            too, so such requests carry ``reasoning_effort: "none"``, the value it accepts with tools). The Responses
            API takes both together on every model.
    """

    family: str
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    max_output_tokens: int | None = None
    output_limit: int | None = None
    system_role: SystemRole = "system"
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature: bool = True
    tool_choice_default: str | None = None
    tool_streaming: ToolStreaming = "all"
    tool_call_content: str | None = ""
    reasoning_content: Literal["send", "drop"] = "drop"
    thought_signatures: Literal["send", "drop"] = "drop"
    reasoning_details: Literal["send", "drop"] = "drop"
    reasoning_request: Literal["effort", "object"] = "effort"
    think_tags: Literal["split", "keep"] = "split"
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = "auto"
    thinking: Literal["budget", "adaptive"] | None = None
    forced_tool: bool = True
    prefill: bool = True
    effort_with_tools: Literal["any", "refused", "none"] = "any"

    def with_capabilities(self, capabilities: ModelCapabilities | None) -> ModelProfile:
        """This profile with other capabilities (a caller's override), or itself when None."""
        return self if capabilities is None else replace(self, capabilities=capabilities)

    def with_server(self, spec: str | Mapping[str, Any] | None) -> ModelProfile:
        """This profile as a server serves it: a preset name and/or options (see `server_options`).

        Raises:
            UserError: for an unknown preset, option or value.
        """
        if spec is None:
            return self
        options = server_options(spec)
        if not options:
            return self
        required = options.pop("tool_choice_required", None)
        profile = replace(self, **options)
        if required is not None:
            capabilities = msgspec.structs.replace(profile.capabilities, tool_choice_required=required)
            profile = replace(profile, capabilities=capabilities)
        if profile.reasoning_request == "object" and not profile.capabilities.reasoning:
            # A router that maps reasoning settings to each model behind it takes them for every model name.
            capabilities = msgspec.structs.replace(profile.capabilities, reasoning=True)
            profile = replace(profile, capabilities=capabilities)
        return profile

    def streams_tools(self, *, named: bool) -> bool:
        """Whether a request that offers tools may be streamed (``named``: it forces one tool by name)."""
        return self.tool_streaming == "all" or (self.tool_streaming == "named" and named)


def _caps(
    *,
    tools: bool = True,
    structured: bool = False,
    images: bool = False,
    context: int | None = None,
    reasoning: bool = False,
) -> ModelCapabilities:
    return ModelCapabilities(
        tools=tools,
        streaming=True,
        structured_output=structured,
        images=images,
        context_length=context,
        tool_choice_required=tools,
        reasoning=reasoning,
    )


def _reasoning(
    family: str,
    *,
    images: bool,
    context: int,
    tools: bool = True,
    effort_with_tools: Literal["any", "refused", "none"] = "any",
) -> ModelProfile:
    return ModelProfile(
        family,
        _caps(tools=tools, structured=tools, images=images, context=context, reasoning=True),
        system_role="developer",
        max_tokens_field="max_completion_tokens",
        temperature=False,
        effort_with_tools=effort_with_tools,
    )


_OPENAI: tuple[ModelProfile, ...] = (
    ModelProfile("gpt-4o", _caps(structured=True, images=True, context=128_000), 16_384),
    ModelProfile("gpt-4o-mini", _caps(structured=True, images=True, context=128_000), 16_384),
    ModelProfile("chatgpt-4o", _caps(tools=False, images=True, context=128_000), 16_384),
    ModelProfile("gpt-4.1", _caps(structured=True, images=True, context=1_047_576), 32_768),
    ModelProfile("gpt-4.5", _caps(structured=True, images=True, context=128_000), 16_384),
    ModelProfile("gpt-4-turbo", _caps(images=True, context=128_000), 4_096),
    ModelProfile("gpt-4", _caps(context=8_192), 4_096),
    ModelProfile("gpt-3.5-turbo", _caps(context=16_385), 4_096),
    _reasoning("o1", images=True, context=200_000),
    ModelProfile(
        "o1-mini", _caps(tools=False, context=128_000), system_role="user", max_tokens_field="max_completion_tokens"
    ),
    ModelProfile(
        "o1-preview",
        _caps(tools=False, context=128_000),
        system_role="user",
        max_tokens_field="max_completion_tokens",
        temperature=False,
    ),
    _reasoning("o3", images=True, context=200_000),
    _reasoning("o3-mini", images=False, context=200_000),
    _reasoning("o4-mini", images=True, context=200_000),
    _reasoning("gpt-5", images=True, context=400_000),  # GPT-5.2 and later: `_gpt5_point_release`
    # Open reasoning families served by compatible servers, where the server takes ``reasoning_effort``. gpt-oss
    # (vLLM, Ollama, llama-server) takes low/medium/high. DeepSeek's API takes it in thinking mode (low, high, max;
    # medium is read as high) and requires the thinking of tool-calling turns back (its thinking-mode guide; the
    # names deepseek-reasoner and deepseek-v4 think by default). DeepSeek-R1 and QwQ served by vLLM, Ollama or
    # llama.cpp always think and take no effort, so they keep the fallback profile: their thinking is still read
    # and logged, but ``.reasoning()`` raises CapabilityError for them rather than being silently ignored.
    ModelProfile("gpt-oss", _caps(context=131_072, reasoning=True)),
    ModelProfile("deepseek-reasoner", _caps(reasoning=True), reasoning_content="send"),
    ModelProfile("deepseek-v4", _caps(reasoning=True), reasoning_content="send"),
    # Gemini on Google's OpenAI-compatible endpoint (…/v1beta/openai/): from Gemini 3 on, a tool call comes with a
    # thought signature that must go back with it. Older Gemini sends none, so there is nothing to send.
    ModelProfile("gemini", _caps(), thought_signatures="send"),
)

_OPENAI_FALLBACK = ModelProfile("", _caps(), None)

# GPT-5's chat variants (gpt-5-chat-latest, gpt-5.1-chat-latest, …) are the non-reasoning model behind ChatGPT: they
# take a temperature and no reasoning settings, and the Responses API refuses to include encrypted reasoning for them
# ("Encrypted content is not supported with this model", param "include"). Their names share the reasoning
# family's prefix, so they are matched by pattern before the prefixes.
_GPT5_CHAT = re.compile(r"gpt-5(?:\.\d+)*-chat")
_GPT5_CHAT_PROFILE = ModelProfile(
    "gpt-5-chat",
    _caps(structured=True, images=True, context=128_000),
    16_384,
    max_tokens_field="max_completion_tokens",
)


def _claude(
    family: str,
    max_output: int,
    default_output: int = 8_192,
    context: int = 200_000,
    *,
    thinking: Literal["budget", "adaptive"] | None = None,
    forced_tool: bool = True,
    temperature: bool = True,
    json_outputs: bool = False,
) -> ModelProfile:
    # Anthropic needs max_tokens on every request; the default stays modest so a missing setting does not
    # reserve a huge output budget, and never exceeds what the family can produce. ``json_outputs``: the family
    # takes Claude's JSON outputs (output_config.format), its structured_output capability.
    return ModelProfile(
        family,
        _caps(images=True, context=context, reasoning=thinking is not None, structured=json_outputs),
        min(default_output, max_output),
        max_output,
        temperature=temperature,
        thinking=thinking,
        forced_tool=forced_tool,
        prefill=thinking != "adaptive",
    )


def _adaptive(family: str, *, temperature: bool = False, forced_tool: bool = True) -> ModelProfile:
    # Claude 4.6 and later (Anthropic's thinking docs, "Thinking support, defaults, and rejected configurations by
    # model" and "Limits and feature compatibility"): a 1M-token context, 128K output, adaptive thinking, no
    # prefill; from Opus 4.7 on, a temperature other than the default is refused on every request, and Opus 5.5,
    # Sonnet 5.5 and Fable/Mythos 5.1 and later refuse a forced tool on every request.
    return _claude(
        family,
        128_000,
        context=1_000_000,
        thinking="adaptive",
        forced_tool=forced_tool,
        temperature=temperature,
        json_outputs=True,
    )


_ANTHROPIC: tuple[ModelProfile, ...] = (
    _claude("claude-3-haiku", 4_096),
    _claude("claude-3-opus", 4_096),
    _claude("claude-3-sonnet", 4_096),
    _claude("claude-3-5-haiku", 8_192),
    _claude("claude-3-5-sonnet", 8_192),
    # Extended thinking with a budget: the only mode of these families (they answer 400 to adaptive).
    _claude("claude-3-7-sonnet", 64_000, thinking="budget"),
    _claude("claude-sonnet-4", 64_000, thinking="budget"),
    _claude("claude-opus-4", 32_000, thinking="budget"),
    # Claude's JSON outputs (structured output without a forced tool) from the 4.5 families on.
    _claude("claude-haiku-4", 64_000, thinking="budget", json_outputs=True),  # Haiku 4.5 is the only Haiku 4
    _claude("claude-sonnet-4-5", 64_000, thinking="budget", json_outputs=True),
    _claude("claude-opus-4-5", 64_000, thinking="budget", json_outputs=True),
    # Adaptive thinking: 4.6 takes both modes but deprecates the budget; 4.7 and later refuse it.
    _adaptive("claude-opus-4-6", temperature=True),
    _adaptive("claude-sonnet-4-6", temperature=True),
    _adaptive("claude-opus-4-7"),
    _adaptive("claude-opus-4-8"),
    _adaptive("claude-sonnet-5"),
    _adaptive("claude-opus-5"),
    _adaptive("claude-fable-5"),
    _adaptive("claude-mythos-5"),
    _adaptive("claude-haiku-5"),
    _adaptive("claude-fable-5-1", forced_tool=False),
    _adaptive("claude-mythos-5-1", forced_tool=False),
    _adaptive("claude-fable-5-2", forced_tool=False),
    _adaptive("claude-mythos-5-2", forced_tool=False),
    _adaptive("claude-opus-5-5", forced_tool=False),
    _adaptive("claude-sonnet-5-5", forced_tool=False),
)

# A model id no family knows is a newer Claude: it thinks adaptively, takes no prefill and no temperature, and answers
# in JSON outputs (as every Claude since Opus 4.7). Its limits are not known, so the default answer stays short and
# the context modest.
_ANTHROPIC_FALLBACK = ModelProfile(
    "",
    _caps(images=True, context=200_000, reasoning=True, structured=True),
    4_096,
    temperature=False,
    thinking="adaptive",
    prefill=False,
)


def _match(model: str, table: tuple[ModelProfile, ...], fallback: ModelProfile) -> ModelProfile:
    # Routers such as OpenRouter prefix the vendor ("openai/gpt-4o"); the family is what follows the last slash.
    name = model.rsplit("/", 1)[-1].lower()
    best = fallback
    for profile in table:
        if name.startswith(profile.family) and len(profile.family) > len(best.family):
            best = profile
    return best


# From GPT-5.2 on, Chat Completions refuses reasoning_effort on a request with function tools ("Function tools with
# reasoning_effort are not supported for gpt-5.4 in /v1/chat/completions. Please use /v1/responses instead."), and
# from GPT-5.6 on, which applies a default effort, it refuses tools unless the request says "none" (its error text:
# "To use function tools, use /v1/responses or set reasoning_effort to 'none'"). Matched by the release number, so
# gpt-5.3-codex and releases newer than this table (gpt-5.7, gpt-5.10) get the rule of their place in that order,
# not the plain gpt-5 profile that a prefix match would give them.
_GPT5_POINT = re.compile(r"gpt-5\.(\d+)(?!\d)")


@functools.lru_cache(maxsize=64)
def _gpt5_point_release(name: str) -> ModelProfile | None:
    match = _GPT5_POINT.match(name)
    if match is None or int(match.group(1)) < 2:
        return None
    release = int(match.group(1))
    effort_with_tools: Literal["refused", "none"] = "none" if release >= 6 else "refused"
    return _reasoning(f"gpt-5.{release}", images=True, context=400_000, effort_with_tools=effort_with_tools)


def openai_profile(model: str) -> ModelProfile:
    """The profile of an OpenAI (or OpenAI-compatible) model name, e.g. ``"gpt-4o-mini"``."""
    name = model.rsplit("/", 1)[-1].lower()
    if _GPT5_CHAT.match(name):
        return _GPT5_CHAT_PROFILE
    return _gpt5_point_release(name) or _match(model, _OPENAI, _OPENAI_FALLBACK)


def anthropic_profile(model: str) -> ModelProfile:
    """The profile of an Anthropic model name, e.g. ``"claude-haiku-4-5"``."""
    return _match(model, _ANTHROPIC, _ANTHROPIC_FALLBACK)


# -- servers ------------------------------------------------------------------------------------------------------

SERVERS: dict[str, dict[str, Any]] = {
    # OpenAI's own API, and the servers whose documentation says they take its requests as they are: vLLM,
    # llama.cpp's C++ llama-server (with --jinja), Ollama, the LiteLLM proxy. The profile defaults already are this.
    "openai": {},
    # llama-cpp-python's server with --chat_format chatml-function-calling (tested in CI): it ignores tools unless
    # tool_choice is "auto" or a name, answers "required" with HTTP 500, and cannot stream an automatic choice
    # (a 500, or an empty stream); a named choice streams.
    "llama-cpp-python": {"tool_choice_default": "auto", "tool_streaming": "named", "tool_choice_required": False},
    # OpenRouter, and Vercel's AI Gateway, which speaks its dialect: reasoning comes as ``reasoning_details``
    # entries that must go back on the assistant message (OpenRouter's reasoning-tokens guide).
    "openrouter": {"reasoning_details": "send", "reasoning_request": "object"},
    "vercel-ai-gateway": {"reasoning_details": "send", "reasoning_request": "object"},
}
"""Presets of what a server does about tools, by name (``server="llama-cpp-python"``)."""

_OPTIONS: dict[str, dict[str, Any]] = {
    "tool_choice_default": {"auto": "auto", "none": "none", "required": "required", "omit": None},
    "tool_streaming": {"all": "all", "named": "named", "none": "none"},
    "tool_call_content": {"empty": "", "null": None},
    "tool_choice_required": {"true": True, "false": False},
    "reasoning_content": {"send": "send", "drop": "drop"},
    "thought_signatures": {"send": "send", "drop": "drop"},
    "reasoning_details": {"send": "send", "drop": "drop"},
    "reasoning_request": {"effort": "effort", "object": "object"},
    "think_tags": {"split": "split", "keep": "keep"},
}

# The presets a base URL implies by its host, when no server is named.
_HOSTS = {"openrouter.ai": "openrouter", "ai-gateway.vercel.sh": "vercel-ai-gateway"}


def server_for_url(base_url: str) -> str | None:
    """The preset a base URL's host stands for (``"https://openrouter.ai/api/v1"`` -> ``"openrouter"``), or None."""
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return None
    return _HOSTS.get(host)


def server_options(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """The profile options a server spec stands for.

    A spec is a preset name from `SERVERS`, ``key=value`` options, or both, separated by commas:
    ``"llama-cpp-python"``, ``"tool_choice_default=auto,tool_streaming=named"``, ``"llama-cpp-python,
    tool_call_content=null"``. Options: ``tool_choice_default`` (``auto``, ``none``, ``required``, ``omit``),
    ``tool_streaming`` (``all``, ``named``, ``none``), ``tool_call_content`` (``empty``, ``null``),
    ``tool_choice_required`` (``true``, ``false``), ``reasoning_content`` (``send``, ``drop``: whether the server's
    thinking is sent back), ``thought_signatures`` (``send``, ``drop``: whether Gemini's thought signatures go back
    on their tool calls, for a Gemini served under another name), ``reasoning_details`` (``send``, ``drop``: whether
    OpenRouter's reasoning entries go back on their assistant messages), ``reasoning_request`` (``effort``,
    ``object``: how ``.reasoning()`` is sent, as ``reasoning_effort`` or as OpenRouter's ``reasoning`` object),
    ``think_tags`` (``split``, ``keep``: whether a ``<think>…</think>`` block opening an answer is its thinking). A
    mapping gives the options directly, with Python values.

    Raises:
        UserError: for an unknown preset, option or value.
    """
    if isinstance(spec, Mapping):
        items: list[tuple[str, Any]] = list(spec.items())
        options: dict[str, Any] = {}
        for key, value in items:
            choices = _option_choices(key)
            if value not in choices.values():
                raise UserError(f"server option {key}={value!r} is not one of {sorted(map(repr, choices.values()))}")
            options[key] = value
        return options
    if not isinstance(spec, str):
        raise UserError(f"a server spec must be a string or a mapping, got {type(spec).__name__}")
    options = {}
    for part in (piece.strip() for piece in spec.split(",")):
        if not part:
            continue
        key, equals, value = part.partition("=")
        key = key.strip()
        if not equals:
            preset = SERVERS.get(key.lower())
            if preset is None:
                known = ", ".join(sorted(SERVERS))
                raise UserError(f"unknown server {key!r}: the presets are {known}, or give key=value options")
            options.update(preset)
            continue
        choices = _option_choices(key)
        word = value.strip().lower()
        if word not in choices:
            raise UserError(f"server option {key}={value.strip()!r} must be one of {', '.join(choices)}")
        options[key] = choices[word]
    return options


def _option_choices(key: str) -> dict[str, Any]:
    choices = _OPTIONS.get(key)
    if choices is None:
        raise UserError(f"unknown server option {key!r}: the options are {', '.join(_OPTIONS)}")
    return choices


def known_families() -> dict[str, tuple[ModelProfile, ...]]:
    """Every known family by provider (what ``threadline models --families`` lists)."""
    return {"openai": (*_OPENAI, _GPT5_CHAT_PROFILE), "anthropic": _ANTHROPIC}
