"""Masking secrets in text meant for people and logs: API keys given to threadline (in every form a server or a
library could echo them), anything shaped like an API key, credentials in URLs, and the keys the environment and the
key file hold.

Light on purpose (no httpx): the turn engine masks tool failure texts with it, and the CLI masks URLs.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable

__all__ = ["base64_forms", "environment_secrets", "mask_secrets", "secret_forms"]

# A token that looks like an API key: sk-, key- or api- (or _) and then a credential's worth of characters, with a
# digit (or a provider's own * mask) among them, or very long. Words that merely begin so (api_version,
# api-gateway-service, key_value_store.get) are not keys, and masking them would garble what is recorded.
_KEY_SHAPED = re.compile(
    r"\b(sk|key|api)[-_](?:(?=[A-Za-z0-9_\-*.]*[0-9*])[A-Za-z0-9_\-*.]{12,}|[A-Za-z0-9_\-*.]{24,})", re.IGNORECASE
)
_USERINFO = re.compile(r"//[^/@\s]+@")
_MIN_SECRET = 4  # shorter "secrets" would mask ordinary words
_MIN_BASE64 = 8  # bytes: the base64 of a shorter secret is a few characters, as likely to be chance as an echo
# Environment variables whose values are credentials: OPENAI_API_KEY, ANTHROPIC_API_KEY, GITHUB_TOKEN, …
_SECRET_VARIABLE = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD)$")
_MIN_ENVIRONMENT_SECRET = 8  # a short value ("1", "true") is a setting, not a credential


def secret_forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Every form in which a secret could appear in a server's or a library's text, longest first.

    The raw value and its stripped form, each also JSON-escaped, Python-escaped (``repr`` of the text and of its
    UTF-8 bytes, as in "Illegal header value b'Bearer …\\n'") and URL-encoded; and, for a value of at least 8 bytes,
    base64 (see `base64_forms`: the value's own, and of any text that holds it, such as ``Bearer <key>`` or a header
    line; standard and URL-safe alphabets, padded or not, also URL-encoded).
    """
    from urllib.parse import quote, quote_plus

    forms: set[str] = set()
    for secret in secrets:
        for value in {secret, secret.strip()}:
            if len(value) < _MIN_SECRET:
                continue
            forms.update(
                (
                    value,
                    json.dumps(value)[1:-1],
                    json.dumps(value, ensure_ascii=False)[1:-1],
                    repr(value)[1:-1],
                    repr(value.encode("utf-8"))[2:-1],
                    quote(value, safe=""),
                    quote_plus(value, safe=""),
                )
            )
            encoded = base64_forms(value)
            forms.update(encoded)
            forms.update(quote(form, safe="") for form in encoded)
    return tuple(sorted(forms, key=len, reverse=True))


def base64_forms(value: str) -> set[str]:
    """The base64 forms of ``value`` that give it away wherever it stands in the encoded text (empty under 8 bytes).

    Base64 writes 3 bytes as 4 characters, so the characters that encode the value depend on its offset in the
    encoded text modulo 3, and those at its two ends share bits with the bytes around it. For each of the three
    offsets, the run of characters that encode the value's bytes alone is a form: every base64 text holding the
    value (``Bearer <key>``, ``x-api-key: <key>``, ``user:<key>`` of a Basic credential, a whole request dumped)
    contains one of the three, so masking them leaves at most a few bits of the value's first and last byte. The
    whole encodings of the value and of ``Bearer <value>`` are forms too, padded and not, so the usual echoes are
    masked whole. Both alphabets (standard ``+/``, URL-safe ``-_``). Not covered: base64 broken into lines inside
    the value (MIME's 76 characters), or encoded twice.
    """
    data = value.encode("utf-8")
    if len(data) < _MIN_BASE64:
        return set()
    standard: set[str] = set()
    for text in (data, b"Bearer " + data):
        whole = base64.b64encode(text).decode("ascii")
        standard.update((whole, whole.rstrip("=")))
    for offset in range(3):
        # Bits of the value run from 8 * offset to 8 * (offset + len); a character covers 6 bits.
        first = -(-8 * offset // 6)
        end = 8 * (offset + len(data)) // 6
        standard.add(base64.b64encode(bytes(offset) + data).decode("ascii")[first:end])
    return standard | {form.replace("+", "-").replace("/", "_") for form in standard}


def mask_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the given secrets (pass `secret_forms`), API-key-shaped tokens and URL credentials masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _KEY_SHAPED.sub(lambda match: match.group(1) + "-***", text)
    return _USERINFO.sub("//***@", text)


def environment_secrets() -> tuple[str, ...]:
    """The forms (`secret_forms`) of every credential-named environment variable's value (``OPENAI_API_KEY``…) and
    of every key saved in the key file (`threadline.models.keys`)."""
    from .models.keys import stored_key_values

    values = [
        value
        for name, value in os.environ.items()
        if _SECRET_VARIABLE.search(name.upper()) and len(value.strip()) >= _MIN_ENVIRONMENT_SECRET
    ]
    values += [value for value in stored_key_values() if len(value.strip()) >= _MIN_ENVIRONMENT_SECRET]
    return secret_forms(values) if values else ()
