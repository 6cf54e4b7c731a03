"""threadline: LLM conversations with tools, kept as one protocol-complete log.

The log (`MessageList` of system, user, assistant and tool messages, failures included) is the single source of
truth: saved, reloaded, continued on another model, trimmed into a context window, resumed after a crash.

    from threadline import llm
    print(llm.agent("You are terse.").request("Capital of France?").prompt())

Importing this package is light: model SDKs, llama.cpp, database drivers and the CLI/web libraries are imported
only when something needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .builder import PromptBuilder, TextStream, llm
from .context import BuiltContext, ContextBuilder, ContextReport, ContextSettings, ModePrompts, RunBrief
from .conversation import Conversation, ConversationConfig
from .engine import TurnResult
from .errors import (
    ApprovalRequired,
    AwaitingDecision,
    CapabilityError,
    ConversationBusy,
    MessageListDeserializationError,
    ModelError,
    OutputValidationError,
    ProtocolError,
    StoreError,
    ThreadlineError,
    UserError,
)
from .message_list import AwaitingCall
from .messages import (
    ApprovalMessage,
    AssistantMessage,
    Attachment,
    Cost,
    LLMError,
    Message,
    MessageList,
    MessageMeta,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    assistant,
    system,
    user,
)
from .models import (
    Model,
    ModelCapabilities,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    ReasoningSettings,
    TextDelta,
    ToolSpec,
    get_model,
)
from .models.tool_catalog import ToolCatalog
from .tools import BaseToolset, Tool, Toolset, dynamic_tools, tool

if TYPE_CHECKING:
    from .generate import generate_text, generate_text_sync
    from .generate.agents import agent_tool
    from .generate.hashing import request_hash
    from .generate.reactive import Cell, GenerateTextState, reactive_generate_text
    from .generate.result import GenerateStep, GenerateTextResult, find_tool_result
    from .store import ConversationInfo, ConversationSummary, MessagePage, Store, open_store
    from .tracing import instrument, uninstrument

__version__ = "0.1.0"

__all__ = [
    "ApprovalMessage",
    "ApprovalRequired",
    "AssistantMessage",
    "Attachment",
    "AwaitingCall",
    "AwaitingDecision",
    "BaseToolset",
    "BuiltContext",
    "CapabilityError",
    "Cell",
    "ContextBuilder",
    "ContextReport",
    "ContextSettings",
    "Conversation",
    "ConversationBusy",
    "ConversationConfig",
    "ConversationInfo",
    "ConversationSummary",
    "Cost",
    "GenerateStep",
    "GenerateTextResult",
    "GenerateTextState",
    "LLMError",
    "MCPConnectionError",
    "MCPToolset",
    "Message",
    "MessageList",
    "MessageListDeserializationError",
    "MessageMeta",
    "MessagePage",
    "ModePrompts",
    "Model",
    "ModelCapabilities",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputValidationError",
    "PromptBuilder",
    "ProtocolError",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningSettings",
    "RunBrief",
    "Store",
    "StoreError",
    "SystemMessage",
    "TextDelta",
    "TextStream",
    "ThreadlineError",
    "Tool",
    "ToolCall",
    "ToolCatalog",
    "ToolMessage",
    "ToolSpec",
    "Toolset",
    "TurnResult",
    "Usage",
    "UserError",
    "UserMessage",
    "__version__",
    "agent_tool",
    "assistant",
    "dynamic_tools",
    "find_tool_result",
    "generate_text",
    "generate_text_sync",
    "get_model",
    "instrument",
    "llm",
    "open_store",
    "reactive_generate_text",
    "request_hash",
    "system",
    "tool",
    "uninstrument",
    "user",
]

_LAZY = {
    "agent_tool": "generate.agents",
    "generate_text": "generate",
    "generate_text_sync": "generate",
    "GenerateStep": "generate.result",
    "GenerateTextResult": "generate.result",
    "find_tool_result": "generate.result",
    "Cell": "generate.reactive",
    "GenerateTextState": "generate.reactive",
    "reactive_generate_text": "generate.reactive",
    "request_hash": "generate.hashing",
    "open_store": "store",
    "Store": "store",
    "ConversationInfo": "store",
    "ConversationSummary": "store",
    "MessagePage": "store",
    "instrument": "tracing",
    "uninstrument": "tracing",
    "MCPToolset": "tools.mcp.toolset",
    "MCPConnectionError": "tools.mcp.connection",
}


_RENAMED = {"RunContext": "RunBrief"}
"""Deprecated names kept for one release (issue 32, one word per idea): old name → new name."""


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        from .errors import warn_renamed

        warn_renamed(f"threadline.{name}", f"threadline.{_RENAMED[name]}")
        return globals()[_RENAMED[name]]
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'threadline' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
