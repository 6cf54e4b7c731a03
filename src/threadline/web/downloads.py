"""The names the viewer's downloads are saved under, as one ``Content-Disposition`` header every browser reads.

RFC 6266: an ASCII ``filename="…"`` for clients that know nothing newer, and the name itself as
``filename*=UTF-8''…`` (RFC 8187's percent-encoded UTF-8, which browsers prefer). A header is latin-1 on the wire, so
a name like ``工具`` written into ``filename=`` as it is answered HTTP 500.

Whatever the name holds (a tool's, a conversation id: text a model or an import chose), the saved name is safe: no
path separators or characters Windows refuses, no control or formatting characters (a right-to-left override can
make ``invoice‮txt.exe`` look like ``invoiceexe.txt``), no leading dot (a hidden file), at most `MAX_NAME`
characters before the extension.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

__all__ = ["MAX_NAME", "content_disposition", "file_name"]

MAX_NAME = 100
# Characters no file name may hold on some system (Windows refuses all of these; "/" and "\" make a path).
_REFUSED = frozenset('/\\:*?"<>|')
# RFC 8187 attr-char besides letters and digits: what ``filename*`` may carry without percent-encoding.
_ATTR_CHARS = "!#$&+-.^_`|~"


def _clean(char: str) -> str:
    if char.isspace():
        return " "
    if char in _REFUSED or unicodedata.category(char).startswith("C"):
        return "_"
    return char


def file_name(text: str, default: str = "download") -> str:
    """``text`` made a safe file name (without extension): line breaks and other spaces become one space, refused,
    control and formatting characters ``_``; no leading or trailing dots or spaces; at most `MAX_NAME` characters
    (``default`` when nothing is left)."""
    cleaned = " ".join("".join(_clean(char) for char in text).split())
    return cleaned.strip(". ")[:MAX_NAME].rstrip(". ") or default


def _ascii(name: str) -> str:
    """The ASCII stand-in for ``name``: accents dropped (``é`` is ``e``), any other character outside ASCII ``_``."""
    decomposed = unicodedata.normalize("NFKD", name)
    kept = (c for c in decomposed if not unicodedata.combining(c))
    return "".join(c if c.isascii() and (c.isalnum() or c in " -_.") else "_" for c in kept)


def content_disposition(name: str, extension: str) -> str:
    """The ``Content-Disposition`` value that downloads ``name`` (any text) as ``<name>.<extension>``.

    Args:
        name: What the file is called (cleaned with `file_name`).
        extension: The file's extension, without the dot (ASCII letters).

    Returns:
        ``attachment; filename="<ASCII name>"; filename*=UTF-8''<percent-encoded name>`` (pure ASCII).
    """
    safe = file_name(name)
    # Decomposing can make dots of other characters ("‥" is ".."): the stand-in must not start a hidden file either.
    plain = _ascii(safe).lstrip(". ") or "download"
    encoded = quote(f"{safe}.{extension}", safe=_ATTR_CHARS)
    return f"attachment; filename=\"{plain}.{extension}\"; filename*=UTF-8''{encoded}"
