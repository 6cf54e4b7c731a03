"""`Attachment`: an image, a file or a mention of a live object, attached to a user message.

The one place where making a log entry reads a file: when the caller's own call names a path
(``Attachment.image(path)``), its bytes are read then, so the log is self-contained. Nothing read back from a log
is ever read from disk.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ._text import replace_surrogates

__all__ = ["Attachment", "AttachmentKind", "clean_attachment"]


AttachmentKind: TypeAlias = Literal["image", "mention", "file"]


class Attachment:
    """Something attached to a user message: an image, a file, or a mention of a live object.

    A mention (``kind="mention"``) carries ``ref`` and, at run time, ``object``: the tools of every object mentioned
    so far in a conversation are offered to the model. Only ``ref`` is saved; after a reload,
    ``conversation.attach(ref, obj)`` binds the object again.

    Files are read when the attachment is made by the caller's own call (``Attachment.image(path)``,
    ``Attachment("image", path=…)``), so the log holds the bytes. An attachment read back from a log (a store, an
    imported file) is never read from disk: one that kept only its ``path`` has no data, and a provider refuses
    to send it with a clear error, so an imported log cannot make threadline upload a local file.

    Args:
        kind: ``"image"``, ``"mention"`` or ``"file"``.
        ref: A stable reference (required for mentions).
        object: The live object of a mention; never serialized.
        data: Raw bytes (images, files).
        path: A local file to read the bytes from, now, when ``data`` is not given (images, files); kept as a
            record of where they came from.
        url: A remote URL (images).
        media_type: MIME type, e.g. ``"image/png"``; guessed from ``path`` when omitted.
        name: A display name.

    Raises:
        ValueError: for an unknown kind, or a mention without a ref.
        OSError: when ``path`` cannot be read.
    """

    __slots__ = ("data", "kind", "media_type", "name", "object", "path", "ref", "url")

    def __init__(
        self,
        kind: AttachmentKind,
        *,
        ref: str | None = None,
        object: Any = None,
        data: bytes | None = None,
        path: str | None = None,
        url: str | None = None,
        media_type: str | None = None,
        name: str | None = None,
    ) -> None:
        _check_kind(kind, ref)
        if data is None and path is not None and kind != "mention":
            data = Path(path).read_bytes()  # the caller's own call: read now, never later from a log
        self._set(kind, ref, object, data, path, url, media_type, name)

    def _set(
        self,
        kind: AttachmentKind,
        ref: str | None,
        object: Any,
        data: bytes | None,
        path: str | Path | None,
        url: str | None,
        media_type: str | None,
        name: str | None,
    ) -> None:
        if media_type is None and path is not None:
            media_type = mimetypes.guess_type(str(path))[0]
        self.kind: AttachmentKind = kind
        self.ref = ref
        self.object = object
        self.data = data
        self.path = str(path) if path is not None else None
        self.url = url
        self.media_type = media_type
        self.name = name

    @classmethod
    def image(cls, source: str | Path | bytes, *, media_type: str | None = None) -> Attachment:
        """An image from a path (read now, so the log is self-contained) or from bytes."""
        if isinstance(source, bytes):
            return cls("image", data=source, media_type=media_type or _sniff_image(source))
        path = Path(source)
        data = path.read_bytes()
        return cls(
            "image",
            data=data,
            path=str(path),
            media_type=media_type or mimetypes.guess_type(path.name)[0] or _sniff_image(data),
            name=path.name,
        )

    @classmethod
    def mention(cls, ref: str, obj: Any) -> Attachment:
        """A mention of a live object whose public methods become tools."""
        return cls("mention", ref=ref, object=obj)

    def read_bytes(self) -> bytes | None:
        """The attachment's bytes (read when it was made from a path), or None. Never reads a file."""
        return self.data

    def to_dict(self) -> dict[str, Any]:
        """The serializable form: every set field except the live ``object``; bytes as base64."""
        out: dict[str, Any] = {"kind": self.kind}
        for key in ("ref", "path", "url", "media_type", "name"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.data is not None:
            out["data"] = base64.b64encode(self.data).decode("ascii")
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attachment:
        """Inverse of `to_dict`. Raises ValueError or TypeError on malformed input."""
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        unknown = set(data) - {"kind", "ref", "path", "url", "media_type", "name", "data"}
        if unknown:
            raise ValueError(f"unknown attachment field(s): {', '.join(sorted(unknown))}")
        for key in ("ref", "path", "url", "media_type", "name", "data"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise TypeError(f"attachment field {key!r} must be a string")
        raw = data.get("data")
        try:
            decoded = base64.b64decode(raw, validate=True) if raw is not None else None
        except ValueError as exc:
            raise ValueError("attachment field 'data' is not valid base64") from exc
        kind = data.get("kind")
        _check_kind(kind, data.get("ref"))
        # Read back from a log: a path is only a record, never a file to read (see the class docstring).
        attachment = cls.__new__(cls)
        attachment._set(
            kind,  # type: ignore[arg-type]
            data.get("ref"),
            None,
            decoded,
            data.get("path"),
            data.get("url"),
            data.get("media_type"),
            data.get("name"),
        )
        return attachment

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attachment):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if k != "data")
        size = f", data=<{len(self.data)} bytes>" if self.data is not None else ""
        return f"Attachment({fields}{size})"


def _check_kind(kind: object, ref: object) -> None:
    if kind not in ("image", "mention", "file"):
        raise ValueError(f"unknown attachment kind {kind!r}: expected 'image', 'mention' or 'file'")
    if kind == "mention" and not ref:
        raise ValueError("a mention attachment needs a ref")


def clean_attachment(attachment: Attachment) -> None:
    """The text rule for an attachment's text fields (its bytes and live object are not text)."""
    for key in ("ref", "path", "url", "media_type", "name"):
        value = getattr(attachment, key)
        if isinstance(value, str) and not value.isascii():
            setattr(attachment, key, replace_surrogates(value))


def _sniff_image(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
