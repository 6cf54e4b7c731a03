"""Models by name: ``local``, ``openai:…``, ``openai-responses:…``, ``anthropic:…``, or any `Model` object.

Provider modules are imported only when a name needs them, so resolving ``local`` never imports httpx and
resolving ``openai:…`` never imports llama.cpp.

`get_model` shares one instance per name *and configuration*: the environment variables that configure a provider
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``…) are part of the cache key, as a hash, so a key never sits in the cache in the
clear; so is the state of the key file (`threadline.models.keys`), which is read when the environment has no key. When
they change, the next `get_model` makes a model that uses the new values, and the instance it replaces has its
connection pools closed.

A package adds a provider without threadline changing by declaring an entry point in the group
``threadline.providers`` (`ENTRY_POINT_GROUP`) named after its prefix, whose object is a factory as
`register_provider` takes it (the part after the colon -> a `Model`; an ``environment`` attribute on it lists the
environment variables it reads). The entry points are read only when a name's prefix is not registered already, so
``import threadline`` and the built-in providers never pay for it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

from ..errors import ThreadlineError, UserError
from .base import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    ReasoningSettings,
    ResponseFormat,
    TextDelta,
    ToolSpec,
)

__all__ = [
    "DEFAULT_MODELS",
    "ENTRY_POINT_GROUP",
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ReasoningDelta",
    "ReasoningSettings",
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
    "openai-responses": "openai-responses:o4-mini",
}

ENTRY_POINT_GROUP = "threadline.providers"
"""The entry-point group where packages declare providers: ``<prefix> = "package.module:factory"``."""

_factories: dict[str, Callable[[str], Model]] = {}
_packages: dict[str, str] = {}  # prefix -> the distribution whose entry point made it (for error messages)
_environment: dict[str, tuple[str, ...]] = {}
_cache: dict[str, tuple[str, Model]] = {}  # name -> (configuration fingerprint, model)
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


def _openai_responses(rest: str) -> Model:
    from .openai_responses import OpenAIResponsesModel

    return OpenAIResponsesModel(rest)


_factories.update(local=_local, openai=_openai, anthropic=_anthropic)
_factories["openai-responses"] = _openai_responses
_environment.update(
    openai=("OPENAI_BASE_URL", "OPENAI_API_KEY", "THREADLINE_OPENAI_SERVER"),
    anthropic=("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
)
_environment["openai-responses"] = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


def register_provider(prefix: str, factory: Callable[[str], Model], *, environment: Iterable[str] = ()) -> None:
    """Make ``"<prefix>:<model>"`` names resolve through ``factory(model)``.

    Args:
        prefix: The provider part of names.
        factory: Makes a model from the part after the colon.
        environment: The environment variables the factory reads: when one changes, `get_model` makes a new
            instance instead of returning the cached one.
    """
    with _lock:
        _factories[prefix] = factory
        _environment[prefix] = tuple(environment)
        _packages.pop(prefix, None)  # registered here, not by a package's entry point
        for key in [key for key in _cache if key.partition(":")[0] == prefix]:
            _retire(_cache.pop(key)[1])


def default_model_name() -> str:
    """``THREADLINE_MODEL`` if set, else the default saved by ``threadline models default NAME``, else ``local``.

    Raises:
        UserError: when the settings file that would hold the saved default cannot be read.
    """
    from .settings import configured_default_model

    return os.environ.get("THREADLINE_MODEL") or configured_default_model() or "local"


def get_model(name: str | Model | None = None) -> Model:
    """Resolve a model name (``local``, ``local:/path.gguf``, ``openai:gpt-4o``, ``openai-responses:o4-mini``,
    ``anthropic:…``) to a `Model`.

    Instances are cached per name and configuration, so connection pools and loaded weights are shared within a
    process, and a changed ``OPENAI_BASE_URL`` or key gives a model that uses it.

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
        fingerprint = _fingerprint(_environment.get(provider, ()))
        cached = _cache.get(name)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        factory = _factories.get(provider)
    if factory is None:
        factory = _from_entry_point(provider)
        if factory is not None:  # registered now, with the environment it reads
            fingerprint = _fingerprint(_environment.get(provider, ()))
    if factory is None:
        known = ", ".join(sorted(_factories))
        raise UserError(
            f"unknown model {name!r}: the provider must be one of {known} (e.g. 'openai:gpt-4o-mini'), or one an"
            f" installed package declares in the entry-point group {ENTRY_POINT_GROUP!r}"
        )
    try:
        model = factory(rest)
    except ThreadlineError:
        raise
    except Exception as exc:
        package = _packages.get(provider)
        if package is None:
            raise
        raise UserError(
            f"the provider {provider!r} of the package {package} failed to make {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    with _lock:
        cached = _cache.get(name)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]  # another thread made the same one meanwhile
        _cache[name] = (fingerprint, model)
    if cached is not None:
        _retire(cached[1])
    return model


def _from_entry_point(prefix: str) -> Callable[[str], Model] | None:
    """The factory an installed package declares for ``prefix`` (see `ENTRY_POINT_GROUP`), registered; None when no
    package declares one.

    Raises:
        UserError: naming the package, when its entry point cannot be loaded or is not a factory.
    """
    if not prefix:
        return None
    from importlib.metadata import entry_points  # here: reading the installed packages costs, and only this needs it

    found = list(entry_points(group=ENTRY_POINT_GROUP, name=prefix))
    if not found:
        return None
    point = found[0]
    package = point.dist.name if point.dist is not None else point.value.partition(":")[0]
    where = f"the provider {prefix!r} of the package {package} (entry point {point.value!r} in {ENTRY_POINT_GROUP!r})"
    try:
        factory: Callable[[str], Model] = point.load()
    except Exception as exc:
        raise UserError(f"{where} could not be loaded: {type(exc).__name__}: {exc}") from exc
    if not callable(factory):
        raise UserError(f"{where} is not a factory: it must take the model part of the name and return a Model")
    with _lock:
        known = _factories.get(prefix)  # another thread loaded it meanwhile
    if known is not None:
        return known
    register_provider(prefix, factory, environment=getattr(factory, "environment", ()))
    _packages[prefix] = package  # errors of its factory name the package
    return factory


def _fingerprint(names: tuple[str, ...]) -> str:
    """A hash of the configuring environment variables (the cache key must never hold a key in the clear)."""
    if not names:
        return ""
    import hashlib  # here, not at import: it loads OpenSSL, which `import threadline` need not pay for

    digest = hashlib.sha256()
    for variable in names:
        digest.update(variable.encode())
        digest.update(b"\x00" + os.environ.get(variable, "").encode("utf-8", "surrogatepass") + b"\x00")
    # A key saved with `threadline keys set` is read when the environment has none: a changed key file makes a
    # new model too (its size and time stand for it; the keys themselves are not read here).
    from .keys import key_file_stamp

    digest.update(key_file_stamp().encode())
    return digest.hexdigest()


def _retire(model: Model) -> None:
    """Close a replaced model's pools, each on its own event loop (a loop that runs no more closes them at exit)."""
    close_soon = getattr(model, "close_soon", None)
    if close_soon is not None:
        close_soon()


async def close_cached_models(loop: object | None = None) -> None:
    """Close the resources (connection pools) of every cached model; used at interpreter exit."""
    with _lock:
        models = [model for _, model in _cache.values()]
    for model in models:
        try:
            await model.aclose()
        except Exception:  # closing is best effort
            pass
