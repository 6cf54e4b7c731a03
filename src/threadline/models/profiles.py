"""Capability profiles of the model families the HTTP adapters know.

A profile says what a family can do (`ModelCapabilities`: tools, streaming, structured output, images, context
length) and how its wire format differs (the role of system text, the name of the token limit, the default
``max_tokens``). The adapters read flags from here and never test model names themselves; this module is the one
place where names are matched, by longest prefix.

A name that matches no family gets a conservative profile: an unknown OpenAI-compatible model (Ollama, vLLM,
llama-server) is assumed to take tools and stream but not images, and structured output goes through a forced
final-result tool rather than ``response_format``. Pass ``capabilities=`` to the model's constructor to say more.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from .base import ModelCapabilities

__all__ = ["ModelProfile", "anthropic_profile", "known_families", "openai_profile"]

SystemRole = Literal["system", "developer", "user"]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What one model family can do and how its requests are shaped.

    Attributes:
        family: The family's name prefix (``"gpt-4o"``), or ``""`` for the fallback profile.
        capabilities: The flags the engine checks before sending.
        max_output_tokens: The ``max_tokens`` sent when the caller sets none (Anthropic always needs one).
        system_role: How system text is sent on OpenAI: ``"system"``, ``"developer"`` (reasoning models) or
            ``"user"`` (models that refuse both).
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"`` (OpenAI reasoning models).
        temperature: Whether the family accepts a ``temperature``; when not, a set temperature is left out.
    """

    family: str
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    max_output_tokens: int | None = None
    system_role: SystemRole = "system"
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    temperature: bool = True

    def with_capabilities(self, capabilities: ModelCapabilities | None) -> ModelProfile:
        """This profile with other capabilities (a caller's override), or itself when None."""
        return self if capabilities is None else replace(self, capabilities=capabilities)


def _caps(
    *, tools: bool = True, structured: bool = False, images: bool = False, context: int | None = None
) -> ModelCapabilities:
    return ModelCapabilities(
        tools=tools,
        streaming=True,
        structured_output=structured,
        images=images,
        context_length=context,
        tool_choice_required=tools,
    )


def _reasoning(family: str, *, images: bool, context: int, tools: bool = True) -> ModelProfile:
    return ModelProfile(
        family,
        _caps(tools=tools, structured=tools, images=images, context=context),
        system_role="developer",
        max_tokens_field="max_completion_tokens",
        temperature=False,
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
    _reasoning("gpt-5", images=True, context=400_000),
)

_OPENAI_FALLBACK = ModelProfile("", _caps(), None)


def _claude(family: str, max_output: int, default_output: int = 8_192, context: int = 200_000) -> ModelProfile:
    # Anthropic needs max_tokens on every request; the default stays modest so a missing setting does not
    # reserve a huge output budget, and never exceeds what the family can produce.
    return ModelProfile(family, _caps(images=True, context=context), min(default_output, max_output))


_ANTHROPIC: tuple[ModelProfile, ...] = (
    _claude("claude-3-haiku", 4_096),
    _claude("claude-3-opus", 4_096),
    _claude("claude-3-sonnet", 4_096),
    _claude("claude-3-5-haiku", 8_192),
    _claude("claude-3-5-sonnet", 8_192),
    _claude("claude-3-7-sonnet", 64_000),
    _claude("claude-sonnet-4", 64_000),
    _claude("claude-opus-4", 32_000),
    _claude("claude-haiku-4", 64_000),
    _claude("claude-opus-4-5", 64_000),
)

_ANTHROPIC_FALLBACK = ModelProfile("", _caps(images=True, context=200_000), 4_096)


def _match(model: str, table: tuple[ModelProfile, ...], fallback: ModelProfile) -> ModelProfile:
    # Routers such as OpenRouter prefix the vendor ("openai/gpt-4o"); the family is what follows the last slash.
    name = model.rsplit("/", 1)[-1].lower()
    best = fallback
    for profile in table:
        if name.startswith(profile.family) and len(profile.family) > len(best.family):
            best = profile
    return best


def openai_profile(model: str) -> ModelProfile:
    """The profile of an OpenAI (or OpenAI-compatible) model name, e.g. ``"gpt-4o-mini"``."""
    return _match(model, _OPENAI, _OPENAI_FALLBACK)


def anthropic_profile(model: str) -> ModelProfile:
    """The profile of an Anthropic model name, e.g. ``"claude-haiku-4-5"``."""
    return _match(model, _ANTHROPIC, _ANTHROPIC_FALLBACK)


def known_families() -> dict[str, tuple[ModelProfile, ...]]:
    """Every known family by provider (what ``threadline models --families`` lists)."""
    return {"openai": _OPENAI, "anthropic": _ANTHROPIC}
