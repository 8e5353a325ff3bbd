//! What can go wrong talking MCP.

/// An MCP failure, said to the person as it is.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// A configured server could not be started or reached.
    #[error("MCP server {server}: {why}")]
    Server {
        /// The server's configured name.
        server: String,
        /// Why.
        why: String,
    },
}
