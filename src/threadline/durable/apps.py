"""The apps a worker runs turns of: `PromptBuilder` objects in the user's modules, named ``module:attr``.

Every worker imports the same apps; a queued turn names its app by ``attr`` alone, so the name must be the same on
every worker. A worker that lacks the app a turn names fails that turn with `UnknownApp`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping

from ..builder import PromptBuilder
from ..errors import UserError
from ..models import default_model_name
from ..models.base import Model

__all__ = ["UnknownApp", "app_named", "app_provider", "load_apps"]


class UnknownApp(Exception):
    """A turn names an app the worker that ran it does not have (start every worker with the same ``--app``s)."""


def load_apps(specs: Iterable[str]) -> dict[str, PromptBuilder]:
    """Import each ``module:attr`` and return the builders by ``attr``.

    Raises:
        UserError: for a spec without ``:``, a module or attribute that cannot be found, an attribute that is not
            a `PromptBuilder`, or two apps with one name.
    """
    apps: dict[str, PromptBuilder] = {}
    for spec in specs:
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise UserError(f"an app is named module:attr, got {spec!r}")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the module's own failure, or ModuleNotFoundError
            raise UserError(f"cannot import the module of app {spec!r}: {type(exc).__name__}: {exc}") from None
        builder = getattr(module, attr, None)
        if builder is None:
            raise UserError(f"module {module_name!r} has no {attr!r} (app {spec!r})")
        if not isinstance(builder, PromptBuilder):
            raise UserError(
                f"app {spec!r} is a {type(builder).__name__}, not a PromptBuilder (threadline.llm.model(...)...)"
            )
        if attr in apps:
            raise UserError(f"two apps are named {attr!r}: an app is known by its attribute name")
        apps[attr] = builder
    if not apps:
        raise UserError("a worker needs at least one app (--app module:attr)")
    return apps


def app_named(apps: Mapping[str, PromptBuilder], name: str) -> PromptBuilder:
    """The app called ``name``.

    Raises:
        UnknownApp: naming the app and the apps this worker has.
    """
    builder = apps.get(name)
    if builder is None:
        have = ", ".join(sorted(apps)) or "none"
        raise UnknownApp(f"this worker has no app {name!r} (its apps: {have}); start it with --app module:{name}")
    return builder


def app_provider(builder: PromptBuilder) -> str:
    """The provider an app's model is on: the prefix of its model name (``openai`` for ``openai:gpt-4o``,
    ``local`` for the default model), which names the queue its turns wait on and the ``--limit`` that applies."""
    config = builder.delta_config
    model = config.get("model")
    if isinstance(model, Model):
        name = model.name
    elif isinstance(model, str):
        name = model
    else:
        name = config.get("provider") or default_model_name()
    return name.strip().partition(":")[0] or "local"
