"""Tools served by MCP servers, and the pins that keep validate offline."""
