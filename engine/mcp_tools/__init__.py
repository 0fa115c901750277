"""MCP servers' tools for the chat: the `mcp.json` they are configured in and a client that runs their calls."""
