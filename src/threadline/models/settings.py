"""threadline's home directory (``THREADLINE_HOME``, else the user data directory) and the settings file in it.

The settings file ``config.json`` holds what ``threadline models default NAME`` chose: the model used when none is
named (after ``THREADLINE_MODEL``, which wins, as the environment does over every file). Light on purpose: the
model registry reads it, and ``import threadline`` must not pay for more than ``json`` and ``os``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["HOME_ENV", "SETTINGS_NAME", "configured_default_model", "home_dir", "save_default_model", "settings_path"]

HOME_ENV = "THREADLINE_HOME"
SETTINGS_NAME = "config.json"
_DEFAULT_MODEL = "default_model"


def home_dir() -> Path:
    """``$THREADLINE_HOME``, else the platform's user data directory for threadline (it may not exist yet)."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("threadline", appauthor=False))


def settings_path() -> Path:
    """Where the settings file is: ``config.json`` in `home_dir`."""
    return home_dir() / SETTINGS_NAME


def _read_settings() -> dict[str, Any]:
    path = settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserError(f"the settings file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        settings = json.loads(text)
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        raise UserError(f"the settings file {path} is not a JSON object; fix it or remove it")
    return settings


def configured_default_model() -> str | None:
    """The default model saved by ``threadline models default NAME``, if any.

    Raises:
        UserError: when the settings file cannot be read or holds something else than a JSON object.
    """
    value = _read_settings().get(_DEFAULT_MODEL)
    return value if isinstance(value, str) and value.strip() else None


def save_default_model(name: str | None) -> Path:
    """Save ``name`` as the default model (None: forget the saved one); the other settings stay as they are.

    Returns:
        The settings file's path.

    Raises:
        UserError: for an empty name, or a settings file that cannot be read or written.
    """
    if name is not None and not name.strip():
        raise UserError("a model name must be a non-empty string")
    settings = _read_settings()
    if name is None:
        settings.pop(_DEFAULT_MODEL, None)
    else:
        settings[_DEFAULT_MODEL] = name.strip()
    path = settings_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)  # whole or not at all: a reader never sees half a file
    except OSError as exc:
        raise UserError(f"the settings file {path} cannot be written: {exc.strerror or exc}") from None
    return path
