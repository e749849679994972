"""A bare MCP server on the official SDK with one tool: the baseline `bench/mcp_bench.py` measures
`lore mcp`'s start-up against (the SDK's own import and handshake cost, nothing of Lore's)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    server.run()
