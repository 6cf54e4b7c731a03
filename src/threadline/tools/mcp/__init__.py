"""MCP servers as toolsets (the ``mcp`` extra): `toolset.MCPToolset`, made by `Toolset.from_mcp`, over
`connection.MCPConnection`, one server kept on a thread and event loop of its own (`_session` holds what lives on
that loop). Nothing here is imported until a toolset is made: ``threadline.MCPToolset`` is a lazy name."""

__all__: list[str] = []
