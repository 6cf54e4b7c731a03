"""Messages in and out of JSON: the native versioned form, and the readers of older and foreign formats.

- `threadline.serialization.native`: the threadline format (``{"version": "2.1", "messages": [...]}``) and one
  message as stored bytes; `load_json` / `load_data` read every format below.
- `threadline.serialization.fluent_v1`: version ``"1.0"`` of the fluent_llm format, converted losslessly (a
  ``ToolCallMessage`` becomes an assistant tool call followed by its tool result).
- `threadline.serialization.openai_chat`: a bare list of OpenAI chat messages (``role``, ``content``,
  ``tool_calls``, ``tool_call_id``).
- `threadline.serialization.file_messages`: one message of the JSON-file layout
  (docs/file-format.md#the-json-file-layout; a superset of an OpenAI chat message); the files and folders themselves are
  `threadline.store.jsonfiles`.
- `threadline.serialization.fields`: the checks all readers share (field types, positions, timestamps, JSON text).

Every reader either returns a whole log or raises `MessageListDeserializationError` naming the position and field.
"""

from __future__ import annotations

from .native import (
    FORMAT_VERSION,
    decode_message,
    decode_messages,
    dump_dict,
    dump_json,
    encode_message,
    load_data,
    load_json,
    typed_decoder,
)

__all__ = [
    "FORMAT_VERSION",
    "decode_message",
    "decode_messages",
    "dump_dict",
    "dump_json",
    "encode_message",
    "load_data",
    "load_json",
    "typed_decoder",
]
