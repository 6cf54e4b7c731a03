"""The base64 forms in which a server may echo a key, and a check, independent of threadline's masking, of whether a
key can still be read from a text.

A key reaches a server in a header (``Authorization: Bearer <key>``, Anthropic's ``x-api-key: <key>``), and servers,
proxies and logging middleware echo headers base64-encoded: the key alone, the whole header value, the header line, a
Basic credential around it; in the standard or the URL-safe alphabet, with or without padding. `echoes` gives those
texts; `readable` says whether the key can be recovered from a text (raw, JSON-escaped, URL-encoded, or base64 of any
text holding it at any offset, in either alphabet), by decoding every base64-looking run at every alignment: it does
not know which forms threadline masks, so it cannot agree with a masking by construction.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from urllib.parse import quote, unquote

__all__ = ["echoes", "encodings", "readable", "wrappings"]

_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def wrappings(key: str) -> dict[str, str]:
    """Texts a server may hold the key in before encoding them: the key, the header values and lines that carry it,
    and credentials that put it at each offset modulo 3 after other bytes."""
    return {
        "key": key,
        "Bearer key": f"Bearer {key}",
        "Authorization header": f"Authorization: Bearer {key}",
        "x-api-key header": f"x-api-key: {key}",
        "Basic user:key": f"user:{key}",
        "Basic ab:key": f"ab:{key}",
        "key, then more": f"{key}\r\nHost: api.example.com",
    }


def encodings(text: str) -> dict[str, str]:
    """The base64 forms of ``text`` (standard and URL-safe, padded and not), by name."""
    out: dict[str, str] = {}
    for alphabet, encode in (("standard", base64.b64encode), ("urlsafe", base64.urlsafe_b64encode)):
        encoded = encode(text.encode("utf-8")).decode("ascii")
        out[f"base64 {alphabet}"] = encoded
        out[f"base64 {alphabet}, unpadded"] = encoded.rstrip("=")
    return out


def echoes(key: str) -> dict[str, str]:
    """Every base64 form (see `encodings`) of every `wrappings` text, by name."""
    return {
        f"{encoding} of {name}": form
        for name, text in wrappings(key).items()
        for encoding, form in encodings(text).items()
    }


def readable(text: str, key: str) -> list[str]:
    """How the key can be read from ``text`` (empty: it cannot): as written, JSON-escaped, URL-encoded, or inside
    base64 (all but its first and last byte, which a masked base64 run may still partly hold)."""
    found: list[str] = []
    for name, form in (("raw", key), ("json", json.dumps(key)[1:-1]), ("url", quote(key, safe=""))):
        if form in text:
            found.append(name)
    middle = key.encode("utf-8")[1:-1]
    for source in {text, unquote(text)}:
        for run in _RUN.findall(source):
            standard = run.replace("-", "+").replace("_", "/")
            for offset in range(4):
                part = standard[offset:]
                # The last group of an unpadded run: padded as its length says (one character alone is no byte).
                part = part[: len(part) - 1] if len(part) % 4 == 1 else part + "=" * (-len(part) % 4)
                try:
                    decoded = base64.b64decode(part, validate=True)
                except (binascii.Error, ValueError):
                    continue
                if middle in decoded:
                    found.append(f"base64 ({run[:24]}…)")
                    break
    return found
