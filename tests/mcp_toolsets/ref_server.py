"""A small MCP server (the SDK's low-level server API) whose tool schemas ``$ref`` an address given on the command
line: ``python ref_server.py URL``. It imports nothing from threadline or the tests.

``remote`` refers to the URL for its one argument; ``mixed`` also has a local ``$defs`` reference (an integer
``count``) before the remote one, so a check can still report what it found before the remote reference.
"""

from __future__ import annotations

import json
import sys

import anyio
import mcp.server.stdio
import mcp.types as types
from mcp.server.lowlevel import Server

URL = sys.argv[1]

TOOLS = [
    types.Tool(
        name="remote",
        description="A tool whose argument's schema is at a remote address.",
        input_schema={"type": "object", "properties": {"x": {"$ref": URL}}, "required": ["x"]},
    ),
    types.Tool(
        name="mixed",
        description="A local reference and a remote one.",
        input_schema={
            "type": "object",
            "properties": {"count": {"$ref": "#/$defs/count"}, "x": {"$ref": URL}},
            "$defs": {"count": {"type": "integer"}},
        },
    ),
]


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = f"{params.name} got {json.dumps(params.arguments, sort_keys=True)}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("Refs", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
