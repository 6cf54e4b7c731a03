"""A small MCP server written with the SDK's server API, for the failure shapes the public servers do not show.

Run as ``python demo_server.py`` (stdio) or ``python demo_server.py --http PORT`` (streamable HTTP on 127.0.0.1).
It imports nothing from threadline or the tests: it is what a third party would write.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent

# A 1x1 PNG, base64.
DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

server = MCPServer(
    "Demo",
    instructions="Demo tools: add numbers with Demo.add; Demo.fail always fails.",
    log_level="WARNING",
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Fail on purpose with the given reason."""
    raise ToolError(reason)


@server.tool()
def crash() -> str:
    """Kill the server in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang(seconds: float = 3600, note: str = "") -> str:
    """Take a very long time to answer (if cancelled, write "cancelled" to the file ``note``)."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if note:
            with open(note, "w", encoding="utf-8") as file:
                file.write("cancelled")
        raise
    return "woke up"


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a picture."""
    return [TextContent(type="text", text="a red dot"), ImageContent(type="image", data=DOT, mime_type="image/png")]


@server.tool()
def measure() -> CallToolResult:
    """Structured output only, no text."""
    return CallToolResult(content=[], structured_content={"width": 3, "height": 4})


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
