"""Tools: from functions, from whole objects, grouped in toolsets, named safely on the wire.

A plain function (sync or async) is a tool: its name, its docstring as the description, a JSON schema from its
type hints (built with pydantic, imported only when a tool is made). ``@tool(...)`` overrides name, description and
timeout. `Tool.from_schema` makes a tool from a JSON schema instead (the tools of an MCP server). `Toolset.from_object`
turns every public method of an object into a tool named ``"<Name>.<method>"``; `Toolset.from_mcp` does the same for
the tools of an MCP server (see `threadline.tools.mcp.toolset`). Both kinds of toolset are `BaseToolset`s, which is what
the rest of the library accepts.

The model's arguments are validated against the schema before the call; invalid JSON, schema violations, unknown
tools, exceptions and timeouts all become a `ToolMessage` with ``is_error=True`` (see `execute_tool_call`), so the
loop goes on and the model can correct itself.

A tool may make its calls wait instead of running: ``@tool(approval=...)`` (a person decides), ``@tool(external=True)``
(the result comes from outside), or `threadline.ApprovalRequired` raised before it acts (`call_approved` says
whether the call running now was approved); see `threadline.engine.waits`.
"""

from __future__ import annotations

from .approvals import approved_call, call_approved
from .base_toolset import BaseToolset, ToolHost
from .execution import CANCEL_GRACE, describe_exception, encode_result, execute_tool_call
from .resolution import DynamicTools, ResolvedTools, ToolLike, dynamic_tools, is_dynamic_provider, resolve_tools
from .tool import Tool, ToolArgumentsError, as_tool, tool
from .toolset import Toolset

__all__ = [
    "CANCEL_GRACE",
    "BaseToolset",
    "DynamicTools",
    "ResolvedTools",
    "Tool",
    "ToolArgumentsError",
    "ToolHost",
    "ToolLike",
    "Toolset",
    "approved_call",
    "as_tool",
    "call_approved",
    "describe_exception",
    "dynamic_tools",
    "encode_result",
    "execute_tool_call",
    "is_dynamic_provider",
    "resolve_tools",
    "tool",
]
