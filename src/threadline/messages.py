"""The log under one public name: the five message kinds, their parts, and `MessageList`.

``from threadline.messages import UserMessage, MessageList`` is the public way in, and this module only gathers
the names from where they live:

- `threadline.message_types`: the value types (the message kinds, `ToolCall`, `Usage`, `Reasoning`, `LLMError`,
  `MessageMeta`, ``INTERRUPTED_TOOL``...), a leaf that imports no other part of the log;
- `threadline.message_list`: `MessageList` and its protocol checks (`validate_messages`);
- `threadline.attachments`: `Attachment`;
- `threadline.pricing.cost`: `Cost`, what a `Usage` cost.

Modules inside threadline import from those, not from here, so the one-way order of the log's modules holds (value
types, their field checks and JSON forms, the list); nothing imports this module but the package's root.
"""

from __future__ import annotations

from .attachments import Attachment
from .message_list import MessageList
from .message_list import validate_messages as validate_messages
from .message_types import DEFAULT_META as DEFAULT_META
from .message_types import (
    INTERRUPTED_TOOL,
    MODES,
    ApprovalMessage,
    AssistantMessage,
    LLMError,
    Message,
    MessageMeta,
    Mode,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    answer_parts,
    arguments_sha256,
    assistant,
    content_for_model,
    system,
    user,
)
from .message_types import MESSAGE_TYPES as MESSAGE_TYPES
from .message_types import NO_ITEMS as NO_ITEMS
from .message_types import AnswerPart as AnswerPart
from .message_types import UtcDatetime as UtcDatetime
from .pricing.cost import Cost

# What ``from threadline.messages import *`` gives, as before the split; the names imported ``as`` themselves above
# are importable by name too, as they always were.
__all__ = [
    "INTERRUPTED_TOOL",
    "MODES",
    "ApprovalMessage",
    "AssistantMessage",
    "Attachment",
    "Cost",
    "LLMError",
    "Message",
    "MessageList",
    "MessageMeta",
    "Mode",
    "Reasoning",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "answer_parts",
    "arguments_sha256",
    "assistant",
    "content_for_model",
    "system",
    "user",
]
