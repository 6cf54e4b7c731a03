"""The key file: API keys saved by ``threadline keys set NAME``, for the providers to read when the environment has
none.

The file is ``keys.json`` in threadline's home directory (`threadline.models.settings.home_dir`), a JSON object from key
names to keys, readable by its owner only (mode 0600). The environment wins: ``OPENAI_API_KEY`` set in the shell is used
before the ``openai`` key of the file. A key's name is its variable's without ``_API_KEY``, in lower case
(``OPENAI_API_KEY`` -> ``openai``, ``ANTHROPIC_API_KEY`` -> ``anthropic``).

A file that other users could read is refused, not used (as ssh does with a private key): the error says how to fix
it, and ``threadline keys set`` writes the file anew with mode 0600. Keys are never printed: errors name the file
and the key's name, never its value.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from ..errors import UserError
from .settings import home_dir

__all__ = [
    "KEYS_NAME",
    "key_file_path",
    "key_file_stamp",
    "key_name_for",
    "save_key",
    "stored_key",
    "stored_key_names",
    "stored_key_values",
]

KEYS_NAME = "keys.json"
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_BAD_KEY_CHARS = re.compile(r"[\x00-\x20\x7f]")
_CHECKS_MODE = os.name == "posix"  # Windows has no mode bits to check


def key_file_path() -> Path:
    """Where the key file is: ``keys.json`` in threadline's home directory (it may not exist)."""
    return home_dir() / KEYS_NAME


def key_name_for(variable: str) -> str:
    """The key file's name for an environment variable's key: ``OPENAI_API_KEY`` -> ``openai``."""
    base = variable.removesuffix("_API_KEY").removesuffix("_KEY")
    return base.lower().replace("_", "-")


def key_file_stamp() -> str:
    """What changes when the key file does (its size and modification time; empty when there is none), so a cache
    of models can tell a model made with an older key."""
    try:
        status = key_file_path().stat()
    except OSError:
        return ""
    return f"{status.st_size}:{status.st_mtime_ns}"


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise UserError(
            f"{name!r} is not a key name: use lower-case letters, digits, '-', '_' or '.' (e.g. openai, anthropic)"
        )
    return name


def _read(path: Path, *, check_mode: bool = True) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as file:
            if check_mode and _CHECKS_MODE:
                mode = os.fstat(file.fileno()).st_mode & 0o777
                if mode & 0o077:
                    raise UserError(
                        f"the key file {path} can be read or written by other users (mode {mode:o}), so it is not "
                        f"used: run chmod 600 {path} (or save a key again with threadline keys set NAME)"
                    )
            text = file.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UserError(f"the key file {path} cannot be read: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError:
        text = ""
    try:
        keys = json.loads(text)
    except ValueError:
        keys = None  # the parser's message would quote the file: it is not shown
    if not isinstance(keys, dict) or not all(isinstance(value, str) for value in keys.values()):
        raise UserError(f"the key file {path} is not a JSON object of names to keys; fix it or remove it")
    return keys


def stored_key(variable: str) -> str | None:
    """The key the key file holds for an environment variable (``OPENAI_API_KEY``: the ``openai`` key), or None.

    Raises:
        UserError: when the file can be read by other users, cannot be read, or is not a JSON object of keys (the
            message never holds a key).
    """
    value = _read(key_file_path()).get(key_name_for(variable))
    return value if value and value.strip() else None


def stored_key_names() -> list[str]:
    """The names of the keys in the key file, sorted (never their values).

    Raises:
        UserError: as `stored_key`.
    """
    return sorted(_read(key_file_path()))


def stored_key_values() -> list[str]:
    """Every key in the key file, for masking them in text meant for people; empty when the file cannot be read."""
    try:
        return [value for value in _read(key_file_path(), check_mode=False).values() if value.strip()]
    except UserError:
        return []


def save_key(name: str, value: str) -> Path:
    """Save ``value`` as the key ``name``: the file is written anew, mode 0600, the other keys kept.

    Returns:
        The key file's path.

    Raises:
        UserError: for a bad name, an empty key or one holding a space or a control character, or a file that
            cannot be read or written (the message never holds the key).
    """
    _check_name(name)
    key = value.strip()
    if not key:
        raise UserError("the key is empty: nothing was saved")
    if _BAD_KEY_CHARS.search(key):
        raise UserError(
            "the key contains a space or a control character; check it (it is not shown): nothing was saved"
        )
    path = key_file_path()
    keys = _read(path, check_mode=False)  # writing it anew with mode 0600 is how a too-open file is fixed
    keys[name] = key
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # left by a writer that was killed
            os.unlink(temporary)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(keys, file, indent=2)
            file.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        raise UserError(f"the key file {path} cannot be written: {exc.strerror or type(exc).__name__}") from None
    return path
