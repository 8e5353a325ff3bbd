//! The own loop's client of configured MCP servers.
