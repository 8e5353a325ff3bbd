//! The environment variables that hold the providers' API keys, and whose each is: the one
//! list that keeps keys from tools and other providers' agents (`panewise-host`'s `secrets`)
//! and out of telemetry exports (`panewise-telemetry`).

/// Whose key a variable holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOwner {
    /// Anthropic: its API and Claude Code.
    Anthropic,
    /// OpenAI: its API and Codex.
    OpenAi,
    /// Google: the Gemini API and Gemini CLI.
    Google,
    /// No provider's in particular (a key variable configured for the mock): kept from
    /// every process.
    Nobody,
}

/// The key variables panewise and the CLIs it supervises read, with their owner.
pub const KEY_VARIABLES: [(&str, KeyOwner); 7] = [
    ("ANTHROPIC_API_KEY", KeyOwner::Anthropic),
    ("ANTHROPIC_AUTH_TOKEN", KeyOwner::Anthropic),
    ("CLAUDE_CODE_OAUTH_TOKEN", KeyOwner::Anthropic),
    ("OPENAI_API_KEY", KeyOwner::OpenAi),
    ("CODEX_API_KEY", KeyOwner::OpenAi),
    ("GEMINI_API_KEY", KeyOwner::Google),
    ("GOOGLE_API_KEY", KeyOwner::Google),
];
