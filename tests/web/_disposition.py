"""A strict reader of ``Content-Disposition`` headers (RFC 6266 with RFC 8187's ``filename*``), for the download
tests: what a browser would name the file, or why it could not read the header."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

# RFC 7230 token and quoted-string; RFC 8187 ext-value (only UTF-8, as browsers require of a server today).
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[^"\\\x00-\x1f\x7f]|\\[\x20-\x7e])*"'
_EXT = r"[Uu][Tt][Ff]-8'[A-Za-z0-9-]*'(?:%[0-9A-Fa-f]{2}|[!#$&+.^_`|~0-9A-Za-z-])*"
_PARAM = re.compile(rf"\s*;\s*(?:(filename)\s*=\s*({_TOKEN}|{_QUOTED})|(filename\*)\s*=\s*({_EXT}))")


@dataclass
class Disposition:
    """A parsed header: its type, the plain ``filename`` and the decoded ``filename*`` (None when absent)."""

    kind: str
    filename: str | None
    filename_ext: str | None

    @property
    def saved_as(self) -> str | None:
        """The name a browser saves the file as (``filename*`` wins, RFC 6266 section 4.3)."""
        return self.filename_ext if self.filename_ext is not None else self.filename


def parse(header: str) -> Disposition:
    """The header's parts.

    Raises:
        ValueError: if the header does not follow the grammar, names a parameter twice or is not ASCII.
    """
    if not header.isascii():
        raise ValueError(f"not ASCII: {header!r}")
    kind = re.match(_TOKEN, header)
    if kind is None:
        raise ValueError(f"no disposition type: {header!r}")
    position = kind.end()
    values: dict[str, str] = {}
    while position < len(header):
        match = _PARAM.match(header, position)
        if match is None:
            raise ValueError(f"unreadable at {position}: {header!r}")
        name = match.group(1) or match.group(3)
        if name in values:
            raise ValueError(f"{name} given twice: {header!r}")
        values[name] = match.group(2) or match.group(4)
        position = match.end()
    plain = values.get("filename")
    if plain is not None and plain.startswith('"'):
        plain = re.sub(r"\\(.)", r"\1", plain[1:-1])
    ext = values.get("filename*")
    decoded = None if ext is None else unquote(ext.split("'", 2)[2], errors="strict")
    return Disposition(kind.group().lower(), plain, decoded)


def problems(name: str) -> list[str]:
    """What would make ``name`` a bad file name to save: a path, a control or formatting character (a right-to-left
    override), a leading dot (a hidden file), nothing but an extension."""
    found = []
    if any(c in name for c in "/\\"):
        found.append("a path separator")
    if any(unicodedata.category(c).startswith("C") for c in name):
        found.append("a control or formatting character")
    if name.startswith(".") or name != name.strip():
        found.append("a leading dot or space")
    if len(name) > 255:
        found.append("longer than 255 characters")
    return found
