"""The MCP server of ``bench_tools.py``: one trivial tool over stdio, so a call costs the protocol and nothing else."""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("Echo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


if __name__ == "__main__":
    server.run()
