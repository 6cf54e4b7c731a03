"""What the command line names, loaded with a clear error: the tools of ``-T`` (``module:name``, ``pages``,
``mcp:COMMAND``, ``mcp+http://URL``), the ``--tool-choice`` checked against them, and the model of ``-m`` (its
weights loaded with a progress line)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._exception_text import describe_exception
from ..errors import UserError
from ._errors import EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from rich.console import Console

    from ..attachments import Attachment
    from ..models.base import Model
    from ..store import Store

__all__ = ["check_model", "check_tool_choice", "load_tool", "load_tools", "prepare_model", "resolve_model"]


def load_tool(spec: str, store: Store | None = None) -> Any:
    """The tool a ``-T`` option names.

    - ``MODULE:NAME``: ``MODULE`` is a module importable from the current directory (``mytools``, ``pkg.tools``) or
      a ``.py`` file; ``NAME`` is a function, a `Tool`, a `Toolset`, or an object whose public methods become tools.
    - ``pages``: the `threadline.toolboxes.Pages` toolset, saving pages in ``store``.
    - ``mcp:COMMAND LINE``: the tools of a stdio MCP server (``mcp:uvx mcp-server-time``), started now so a
      server that cannot start is reported at once.
    - ``mcp+http://…`` (or ``mcp+https://…``): the tools of a streamable-HTTP MCP server.

    Raises:
        CommandError: with one line saying what is wrong with the spec.
    """
    from ..tools import BaseToolset, Tool, Toolset

    if spec == "pages":
        if store is None:
            raise CommandError("-T pages saves pages in the store; it cannot be used with --no-log", EXIT_USAGE)
        from ..toolboxes import Pages

        return Pages(store)
    if spec.startswith(("mcp:", "mcp+http://", "mcp+https://")):
        return _load_mcp(spec)
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise CommandError(
            f"bad tool {spec!r}: expected MODULE:NAME (e.g. mytools:get_weather), pages, mcp:COMMAND or mcp+http://URL",
            EXIT_USAGE,
        )
    module = _import_tool_module(module_name, spec)
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise CommandError(f"bad tool {spec!r}: {module_name} has no attribute {attribute!r}", EXIT_USAGE) from None
    if isinstance(target, (Tool, BaseToolset)):
        return target
    if inspect.isclass(target) or inspect.ismodule(target):
        kind = "a class" if inspect.isclass(target) else "a module"
        raise CommandError(f"bad tool {spec!r}: {attribute} is {kind}; name a function or an object", EXIT_USAGE)
    if callable(target):
        return target
    if type(target).__module__ == "builtins":  # 42 or "text": its methods are not tools anyone meant to offer
        kind = type(target).__name__
        raise CommandError(
            f"bad tool {spec!r}: {attribute} is a {kind} value; name a function or an object", EXIT_USAGE
        )
    return Toolset.from_object(target)


def _load_mcp(spec: str) -> Any:
    """``-T mcp:COMMAND`` or ``-T mcp+http://…``: an MCP server's toolset, connected now."""
    import shlex

    from ..tools import Toolset
    from ..tools.mcp.toolset import MCPConnectionError

    if spec.startswith("mcp:"):
        try:
            command = shlex.split(spec[len("mcp:") :])
        except ValueError as exc:
            raise CommandError(f"bad tool {spec!r}: {exc}", EXIT_USAGE) from None
        if not command:
            raise CommandError(
                f"bad tool {spec!r}: give the server's command, e.g. mcp:uvx mcp-server-time", EXIT_USAGE
            )
        target: dict[str, Any] = {"command": command}
    else:
        target = {"url": spec[len("mcp+") :]}
    try:
        return Toolset.from_mcp(**target).connect()
    except (MCPConnectionError, UserError) as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def load_tools(specs: Iterable[str], store: Store | None = None) -> list[Any]:
    """`load_tool` for each ``-T`` option (``store`` is where ``-T pages`` saves pages)."""
    return [load_tool(spec, store) for spec in specs]


def _import_tool_module(module_name: str, spec: str) -> Any:
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise CommandError(f"bad tool {spec!r}: no file {path}", EXIT_USAGE)
        name = f"_threadline_tools_{path.stem}"
        file_spec = importlib.util.spec_from_file_location(name, path)
        if file_spec is None or file_spec.loader is None:
            raise CommandError(f"bad tool {spec!r}: cannot import {path}", EXIT_USAGE)
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[name] = module
        loader = file_spec.loader

        def execute() -> Any:
            loader.exec_module(module)
            return module

        return _run_import(execute, module_name, spec)
    # The console script does not put the working directory on sys.path, but "-T mytools:f" means ./mytools.py.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return _run_import(lambda: importlib.import_module(module_name), module_name, spec)


def _run_import(do_import: Callable[[], Any], module_name: str, spec: str) -> Any:
    try:
        return do_import()
    except ModuleNotFoundError as exc:
        raise CommandError(f"bad tool {spec!r}: cannot import {module_name!r} ({exc})", EXIT_USAGE) from None
    except Exception as exc:
        # The module's own exception: its message is read safely (its __str__ may raise anything).
        raise CommandError(
            f"bad tool {spec!r}: importing {module_name} failed: {describe_exception(exc)}", EXIT_USAGE
        ) from None


def check_tool_choice(choice: str | None, tools: list[Any]) -> None:
    """Refuse a ``--tool-choice`` that names no offered tool, before any model is loaded.

    Raises:
        CommandError: naming the offered tools.
    """
    if choice is None or choice in ("auto", "required", "none"):
        return
    from ..tools import resolve_tools

    names = sorted(resolve_tools(tools).tools)
    if choice not in names:
        offered = ", ".join(names) or "none"
        raise CommandError(f"tool_choice names {choice!r}, which is not offered (offered: {offered})", EXIT_USAGE)


def resolve_model(name: str | None) -> Model:
    """The model a ``-m`` option names (None: the default model, see `threadline.models.default_model_name`).

    Raises:
        CommandError: when the name is unknown or its provider cannot be loaded here.
    """
    from ..models import get_model

    try:
        return get_model(name)
    except UserError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except ImportError as exc:
        provider = (name or "").partition(":")[0] or "default"
        raise CommandError(f"the {provider!r} provider cannot be loaded here: {exc}", EXIT_USAGE) from None


def check_model(
    model: Model,
    tools: list[Any],
    tool_choice: str | None = None,
    settings: dict[str, Any] | None = None,
    attachments: list[Attachment] | None = None,
) -> None:
    """Ask ``model`` whether it can serve a turn with these tools and settings, before anything is stored: what the
    turn would refuse only after the user's message is in the log (no API key for the provider's own endpoint, tools
    or reasoning settings the model lacks) is refused now, and the store keeps nothing of the command.

    Args:
        model: The model of ``-m``.
        tools: The tools of ``-T``.
        tool_choice: The ``--tool-choice``, if any.
        settings: The turn's keyword settings, as ``prompt_conversation`` takes them (``max_tokens``,
            ``reasoning``, provider-prefixed extras from ``-o``…).
        attachments: The ``-a`` files of the prompt (an image needs a model that takes images).

    Raises:
        UserError: for a missing API key, or a setting the model refuses.
        CapabilityError: for tools, a forced tool or reasoning the model lacks.
    """
    from ..conversation.config import SETTING_KEYS, check_settings
    from ..message_types import user
    from ..models.base import ModelRequest, ModelSettings
    from ..tools import resolve_tools

    specs = resolve_tools(tools).specs() if tools else []
    # As a turn reads them: unknown names refused, provider-prefixed extras (-o) gathered under ``extras``.
    checked = check_settings(settings or {})
    request = ModelRequest(
        messages=[user("…", attachments or [])],
        tools=specs,
        tool_choice=tool_choice if specs else None,
        settings=ModelSettings(
            **{key: value for key, value in checked.items() if key in SETTING_KEYS or key == "extras"}
        ),
    )
    model.check(request)


def prepare_model(model: Model, console: Console) -> None:
    """Load a model's weights now, with a spinner (or, off a terminal, one progress line) on ``console``.

    Models without weights to load (HTTP providers, test models) return at once.
    """
    load = getattr(model, "load", None)
    if not callable(load) or getattr(model, "loaded", False):
        return
    message = f"Loading {model.name} …"
    if console.is_terminal:
        with console.status(message, spinner="dots"):
            load()
    else:
        console.print(message, highlight=False)
        load()
        console.print(f"Loaded {model.name}.", highlight=False)
