"""Pure helpers shared by the wire translations (`threadline.models.openai`, `threadline.models.anthropic`).

They own what must be the same on every provider: how a log's tool-call ids are made valid for a provider (and
kept unique in the log when a provider hands back ids it already used), how tool-argument text is parsed, the
name of the final-result tool used for structured output, and what a stream reader keeps between events
(`StreamReader`). Nothing here does I/O.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from ..._ids import new_id
from ..._json_values import nested_too_deeply, object_from_text
from ...attachments import Attachment
from ...errors import ModelError, UserError
from ...message_types import Message, ToolCall, UserMessage
from ..base import ModelRequest
from ..tool_catalog import ToolCatalog

__all__ = [
    "FINAL_TOOL",
    "FINAL_TOOL_DESCRIPTION",
    "PARAGRAPH_BREAK",
    "IdMap",
    "StreamReader",
    "WireContext",
    "arguments_text",
    "catalog_for",
    "check_images",
    "check_tool_choice",
    "data_url",
    "final_tool_name",
    "image_bytes",
    "input_arguments",
    "parse_arguments",
    "plain",
    "served_model",
    "too_deep_to_read",
]

FINAL_TOOL = "final_result"
FINAL_TOOL_DESCRIPTION = "Give the final answer. Call this exactly once, with the answer as its arguments."
PARAGRAPH_BREAK = "\n\n"
"""Between the texts of one answer that something else separates: Anthropic text blocks with a tool call or thinking
between them (Claude's "Checking Paris." before a call and "Now Rome." after it), the Responses API's separate
message items. Text blocks side by side (a text split where its citations change) are one text, joined as they came.
"""

_json_encode = msgspec.json.Encoder().encode
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class IdMap:
    """Tool-call ids of one request: the log's ids made valid for a provider, and response ids kept unique.

    An id that is already valid is sent as is, so ids survive a round trip unchanged. Any other id is sent as
    its valid characters plus a hash of the whole id: the same log always gives the same wire ids, and the log
    itself is never rewritten. Ids in responses are new calls; one that is empty or already used in the log (some
    OpenAI-compatible servers number calls ``call_0``, ``call_1``… in every response) is replaced by a fresh one
    so the log's ids stay unique.

    Args:
        strict: Allow only ``[A-Za-z0-9_-]`` (Anthropic); otherwise any characters (OpenAI).
    """

    __slots__ = ("_strict", "_to_wire", "_used_wire", "seen")

    def __init__(self, *, strict: bool) -> None:
        self._strict = strict
        self._to_wire: dict[str, str] = {}
        self._used_wire: set[str] = set()
        self.seen: set[str] = set()

    def wire(self, original: str) -> str:
        """The id to send for a log id (stable for the request)."""
        known = self._to_wire.get(original)
        if known is not None:
            return known
        self.seen.add(original)
        if self._valid(original) and original not in self._used_wire:
            safe = original
        else:
            base = _UNSAFE_CHARS.sub("_", original) if self._strict else original
            digest = hashlib.sha256(original.encode("utf-8")).hexdigest()
            size = 16
            safe = f"{base[:40]}_{digest[:size]}" if base else f"id_{digest[:size]}"
            while safe in self._used_wire:  # a different id already took this one: lengthen the hash
                size += 4
                safe = f"{base[:40]}_{digest[:size]}"
        self._to_wire[original] = safe
        self._used_wire.add(safe)
        return safe

    def _valid(self, value: str) -> bool:
        if self._strict:
            return _SAFE_ID.match(value) is not None
        return 0 < len(value) <= 64

    def response_id(self, value: str | None) -> str:
        """The log id for a call in a response: the provider's own id, unless it would repeat one."""
        if not value or value in self.seen or value in self._used_wire:
            value = f"call_{new_id()}"
        self.seen.add(value)
        return value


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Tool-argument text as ``(arguments, raw_arguments)``: raw text is kept only when it is not a JSON object the
    log can keep (not JSON, not an object, or nested more than the log's limit: a model once sent arguments 3,000
    levels deep, and the call failed with `RecursionError`); the model is then told its arguments were invalid.

    Empty text means no arguments (some servers send ``""`` for a tool without parameters).
    """
    if not text or text.isspace():
        return {}, None
    value = object_from_text(text)
    return ({}, text) if value is None else (value, None)


def too_deep_to_read(what: str) -> ModelError:
    """The error for a body or stream event holding a value nested too deeply for a JSON decoder to build (it raised
    `RecursionError`): a ``bad_response``, logged like any failed call, not a crash of the turn."""
    return ModelError(f"{what} holds a value nested too deeply to read", type="bad_response")


def input_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """A tool input that came as a JSON value, not text (Anthropic's ``tool_use.input``), as ``(arguments,
    raw_arguments)``: anything but an object the log can keep is kept as its JSON text, as `parse_arguments` keeps
    text."""
    if value is None:
        return {}, None
    if isinstance(value, dict) and not nested_too_deeply(value):
        return value, None
    try:
        return {}, _json_encode(value).decode("utf-8")
    except RecursionError:  # built by the decoder, so this deep only on a stack already deeper than the decoder's
        raise too_deep_to_read("the server's tool input") from None


def arguments_text(call: ToolCall) -> str:
    """A logged call's arguments as the JSON text OpenAI's APIs carry; invalid text goes back verbatim, so the model
    sees exactly what it sent."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return _json_encode(call.arguments).decode("utf-8")


def catalog_for(request: ModelRequest) -> ToolCatalog:
    """The wire-name catalog of a request: its offered tools (history names are added as they are met)."""
    return ToolCatalog(spec.name for spec in request.tools)


def final_tool_name(taken: Iterable[str]) -> str:
    """A wire name for the final-result tool that none of the ``taken`` wire names uses."""
    used = set(taken)
    name = FINAL_TOOL
    counter = 1
    while name in used:
        counter += 1
        name = f"{FINAL_TOOL}_{counter}"
    return name


def image_bytes(attachment: Attachment) -> bytes:
    """The bytes of an image attachment, with a clear error when there are none."""
    data = attachment.read_bytes()
    if data is None:
        raise UserError(_no_data(attachment))
    return data


def _no_data(attachment: Attachment) -> str:
    label = attachment.name or attachment.path or "without a name"
    if attachment.path is not None:
        return (
            f"image attachment {label!r} has no data, only the path it once came from; a path read back from a log "
            "(loaded or imported) is never read, so that a log cannot upload local files: attach the file again "
            "with Attachment.image(path)"
        )
    return f"image attachment {label!r} has neither data nor a url"


def check_images(messages: Iterable[Message]) -> None:
    """Refuse, before anything is sent, image attachments a provider cannot be given."""
    for message in messages:
        if not isinstance(message, UserMessage):
            continue
        for attachment in message.attachments:
            if attachment.kind != "image":
                continue
            if attachment.url is None and attachment.data is None:
                raise UserError(_no_data(attachment))
            if attachment.url is None and not (attachment.media_type or "").startswith("image/"):
                raise UserError(
                    f"image attachment {attachment.name or ''!s} has an unknown media type "
                    f"({attachment.media_type!r}); pass media_type='image/png' (or jpeg, gif, webp)"
                )


class WireContext:
    """What one request's translation needs again when its response is read.

    Attributes:
        catalog: Real tool names <-> wire names.
        ids: The log's tool-call ids <-> wire ids.
        final_tool: The wire name of the final-result tool, when structured output goes through a tool.
        wire_names: The wire names of every tool offered (the final-result tool included).
        think_tags: Whether a ``<think>…</think>`` block opening the answer's text is thinking (see
            `threadline.models.http._think_tags`).
    """

    __slots__ = ("catalog", "final_tool", "ids", "think_tags", "wire_names")

    def __init__(self, catalog: ToolCatalog, ids: IdMap, final_tool: str | None = None) -> None:
        self.catalog = catalog
        self.ids = ids
        self.final_tool = final_tool
        self.wire_names: frozenset[str] = frozenset()
        self.think_tags = False


def data_url(attachment: Attachment) -> str:
    """An image attachment as a URL: its own ``url``, else a ``data:`` URL of its bytes."""
    if attachment.url is not None:
        return attachment.url
    encoded = base64.b64encode(image_bytes(attachment)).decode("ascii")
    return f"data:{attachment.media_type};base64,{encoded}"


def plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping as a plain ``dict`` (msgspec encodes only real dicts)."""
    return value if isinstance(value, dict) else dict(value)


def check_tool_choice(request: ModelRequest) -> None:
    """Refuse a ``tool_choice`` that names a tool the request does not offer."""
    choice = request.tool_choice
    if choice is None or choice in ("auto", "required", "none"):
        return
    if not any(spec.name == choice for spec in request.tools):
        offered = ", ".join(spec.name for spec in request.tools) or "none"
        raise UserError(f"tool_choice {choice!r} names a tool that is not offered (offered: {offered})")


class StreamReader:
    """What a provider's stream reader keeps between events (`ChatStream`, `MessageStream` add how events are read).

    Attributes:
        done: Whether the stream's end marker (``[DONE]``, ``message_stop``) came.
    """

    __slots__ = ("_calls", "_context", "_parts", "_stop", "_usage", "done")

    def __init__(self, context: WireContext) -> None:
        self._context = context
        self._parts: list[str] = []
        # Tool calls being assembled, by the index the stream gives them: [id, wire name, argument fragments].
        self._calls: dict[int, list[Any]] = {}
        self._stop: str | None = None
        self._usage: object = None  # the provider's usage struct; subclasses say which
        self.done = False

    @property
    def finished(self) -> bool:
        """Whether the stream said how it ended (its end marker, or a stop reason)."""
        return self.done or self._stop is not None

    @property
    def text(self) -> str:
        """The answer text received so far."""
        return "".join(self._parts)

    def _complete_calls(self) -> list[tuple[str | None, str, str]]:
        """The tool calls of a complete stream, in stream order, as ``(id, wire name, argument text)``.

        Raises:
            ModelError: when the stream ended before the server said it was complete (a cut stream).
        """
        if not self.finished:
            raise ModelError("the stream ended before the answer was complete", type="stream_cut", retryable=True)
        return [(slot[0], slot[1], "".join(slot[2])) for _, slot in sorted(self._calls.items())]


def served_model(value: Any) -> str | None:
    """The model id an answer names (``"gpt-4o-mini-2024-07-18"``), if it names one as text: a compatible server may
    send anything there, and an odd value must not cost the answer."""
    return value if isinstance(value, str) and value else None
