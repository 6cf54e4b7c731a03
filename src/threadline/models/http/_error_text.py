"""The explanation a server gives in an error body, read from its JSON (pure: no I/O, no masking).

OpenAI, Anthropic and the compatible servers put it in ``{"error": {"message": …}}``; Gemini's OpenAI-compatible
endpoint wraps that object in a list; some servers answer ``{"error": "…"}`` or ``{"message": "…"}``. OpenRouter
puts the upstream provider's own error body, as a JSON string, in ``error.metadata.raw`` (with
``metadata.provider_name``) behind a generic "Provider returned error": both are given.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["error_text", "quota_used_up", "upstream_text"]

_decode = msgspec.json.Decoder().decode

# How servers say that an account's money or quota, not its rate, is what ran out: OpenAI's ``insufficient_quota``
# code (429 "You exceeded your current quota"), Anthropic's rate_limit_error about the "monthly spend limit" (and its
# ``details.error_code``), OpenRouter's and LiteLLM's budget errors. A retry cannot help until someone pays or the
# period resets.
_QUOTA_CODES = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached", "budget_exceeded"}
)
_QUOTA_WORDS = (
    "exceeded your current quota",
    "spend limit",
    "spending limit",
    "credit balance",
    "budget has been exceeded",
)


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
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deeply to read
        inner = None
    text = inner or raw.strip()
    provider = metadata.get("provider_name")
    return f"{provider}: {text}" if isinstance(provider, str) and provider else text


def quota_used_up(data: Any) -> bool:
    """Whether a decoded error body says the account's quota, credit or spend limit is used up (see `_QUOTA_CODES`)."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        return False
    error = data.get("error")
    if not isinstance(error, dict):
        return False
    details = error.get("details")
    codes = [error.get("code"), error.get("type")]
    if isinstance(details, dict):
        codes.append(details.get("error_code"))
    if any(isinstance(code, str) and code.lower() in _QUOTA_CODES for code in codes):
        return True
    message = error_text(data)
    return message is not None and any(words in message.lower() for words in _QUOTA_WORDS)
