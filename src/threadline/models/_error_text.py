"""The explanation a server gives in an error body, read from its JSON (pure: no I/O, no masking).

OpenAI, Anthropic and the compatible servers put it in ``{"error": {"message": …}}``; Gemini's OpenAI-compatible
endpoint wraps that object in a list; some servers answer ``{"error": "…"}`` or ``{"message": "…"}``. OpenRouter
puts the upstream provider's own error body, as a JSON string, in ``error.metadata.raw`` (with
``metadata.provider_name``) behind a generic "Provider returned error": both are given.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["error_text", "upstream_text"]

_decode = msgspec.json.Decoder().decode


def error_text(data: Any) -> str | None:
    """The message of a decoded error body, with the upstream provider's where OpenRouter passes one on; None when
    the body holds none."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        upstream = upstream_text(error.get("metadata"))
        return f"{error['message']} ({upstream})" if upstream else error["message"]
    if isinstance(error, str):
        return error
    message = data.get("message")
    return message if isinstance(message, str) else None


def upstream_text(metadata: Any) -> str | None:
    """From OpenRouter's ``error.metadata``: ``"<provider>: <its message>"`` (its whole raw body when that holds no
    message it can read), or None."""
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if not (isinstance(raw, str) and raw.strip()):
        return None
    try:
        inner = error_text(_decode(raw))
    except msgspec.DecodeError:
        inner = None
    text = inner or raw.strip()
    provider = metadata.get("provider_name")
    return f"{provider}: {text}" if isinstance(provider, str) and provider else text
