//! `panewise mcp serve`: the daemon's verbs as MCP tools over stdio.
