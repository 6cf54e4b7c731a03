"""Artifact names: one safe, deterministic name for the full output of any tool call.

A large tool output is saved as ``artifact://<conversation>/<name>`` and read back by the model with
``read_artifact``. Tool-call ids come from models and imported files and may be anything (``call/1``, ``..``, a NUL,
a space, 300 characters), so the name is derived from the id:

- an id that is already a safe name (``[A-Za-z0-9_][A-Za-z0-9_.:-]*``, at most 200 characters, no ``..``) is the
  name itself, so ordinary ids (``call_abc123``, ``toolu_01…``) give readable URIs;
- any other id gives a readable safe prefix, ``~`` and 16 hex digits of the id's SHA-256
  (``call_1~5e7b…``). ``~`` never appears in a name of the first kind, so two ids never share a name.

`is_artifact_name` accepts exactly the names `artifact_name` gives; the context window hands out only those and
``read_artifact`` accepts only those.
"""

from __future__ import annotations

import re

__all__ = ["ARTIFACT_SCHEME", "READ_ARTIFACT", "artifact_name", "artifact_uri", "is_artifact_name"]

ARTIFACT_SCHEME = "artifact://"
READ_ARTIFACT = "read_artifact"  # the name of the tool that reads artifacts (`toolboxes.artifacts`)

_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
_DERIVED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,39}~[0-9a-f]{16}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9_.:-]+")
PREFIX_CHARS = 40


def _is_safe(name: str) -> bool:
    return _SAFE.fullmatch(name) is not None and ".." not in name


def artifact_name(tool_call_id: str) -> str:
    """The artifact name of a tool call's full output (see the module docstring); the same id always gives the same
    name."""
    if _is_safe(tool_call_id):
        return tool_call_id
    import hashlib  # here, not at the top: `import threadline` stays light (it loads OpenSSL)

    digest = hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    prefix = _UNSAFE_RUN.sub("_", tool_call_id).replace("..", "_")[:PREFIX_CHARS].rstrip(".")
    if not prefix or not _SAFE.fullmatch(prefix[0]):
        prefix = ("call_" + prefix)[:PREFIX_CHARS].rstrip(".")
    return f"{prefix}~{digest}"


def is_artifact_name(name: str) -> bool:
    """Whether ``name`` is one `artifact_name` can give (what ``read_artifact`` accepts)."""
    if not isinstance(name, str):
        return False
    if _is_safe(name):
        return True
    return _DERIVED.fullmatch(name) is not None and ".." not in name


def artifact_uri(conversation_id: str, name: str) -> str:
    """``artifact://<conversation>/<name>``: where the full output saved under ``name`` is read."""
    return f"{ARTIFACT_SCHEME}{conversation_id}/{name}"
