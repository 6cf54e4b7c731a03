"""Models by name: ``local``, ``openai:…``, ``anthropic:…``, or any `Model` object.

Provider modules are imported only when a name needs them, so resolving ``local`` never imports httpx and
resolving ``openai:…`` never imports llama.cpp.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from ..errors import UserError
from .base import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ResponseFormat,
    TextDelta,
    ToolSpec,
)

__all__ = [
    "DEFAULT_MODELS",
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ResponseFormat",
    "TextDelta",
    "ToolSpec",
    "default_model_name",
    "get_model",
    "register_provider",
]

# The model a bare provider name means (``.provider("openai")``).
DEFAULT_MODELS: dict[str, str] = {
    "local": "local:smollm2",
    "openai": "openai:gpt-4o-mini",
    "anthropic": "anthropic:claude-haiku-4-5",
}

_factories: dict[str, Callable[[str], Model]] = {}
_cache: dict[str, Model] = {}
_lock = threading.Lock()


def _local(rest: str) -> Model:
    from .local import LocalModel

    return LocalModel(rest or "smollm2")


def _openai(rest: str) -> Model:
    from .openai import OpenAIModel

    return OpenAIModel(rest)


def _anthropic(rest: str) -> Model:
    from .anthropic import AnthropicModel

    return AnthropicModel(rest)


_factories.update(local=_local, openai=_openai, anthropic=_anthropic)


def register_provider(prefix: str, factory: Callable[[str], Model]) -> None:
    """Make ``"<prefix>:<model>"`` names resolve through ``factory(model)``."""
    with _lock:
        _factories[prefix] = factory
        for key in [key for key in _cache if key.partition(":")[0] == prefix]:
            del _cache[key]


def default_model_name() -> str:
    """``THREADLINE_MODEL`` if set, else ``local``."""
    return os.environ.get("THREADLINE_MODEL") or "local"


def get_model(name: str | Model | None = None) -> Model:
    """Resolve a model name (``local``, ``local:/path.gguf``, ``openai:gpt-4o``, ``anthropic:…``) to a `Model`.

    Instances are cached per name, so connection pools and loaded weights are shared within a process.

    Args:
        name: A model name, a `Model` (returned as is), or None for the default model.

    Raises:
        UserError: for an unknown provider or an empty model name.
    """
    if isinstance(name, Model):
        return name
    if name is None:
        name = default_model_name()
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"a model name must be a non-empty string, got {name!r}")
    name = name.strip()
    provider, _, rest = name.partition(":")
    if provider in DEFAULT_MODELS and not rest:
        name = DEFAULT_MODELS[provider]
        provider, _, rest = name.partition(":")
    with _lock:
        cached = _cache.get(name)
        if cached is not None:
            return cached
        factory = _factories.get(provider)
    if factory is None:
        known = ", ".join(sorted(_factories))
        raise UserError(f"unknown model {name!r}: the provider must be one of {known} (e.g. 'openai:gpt-4o-mini')")
    model = factory(rest)
    with _lock:
        return _cache.setdefault(name, model)


async def close_cached_models(loop: object | None = None) -> None:
    """Close the resources (connection pools) of every cached model; used at interpreter exit."""
    with _lock:
        models = list(_cache.values())
    for model in models:
        try:
            await model.aclose()
        except Exception:  # closing is best effort
            pass
