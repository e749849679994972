"""The MCP interface: `lore mcp` serves the core API as MCP tools over stdio."""
