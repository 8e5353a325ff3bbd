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

/// The endings of variable names taken to hold a secret wherever they come from: another
/// provider's key (`MISTRAL_API_KEY`), a bearer token (`ANTHROPIC_AUTH_TOKEN`).
pub const SECRET_SUFFIXES: [&str; 3] = ["_API_KEY", "_AUTH_TOKEN", "_OAUTH_TOKEN"];

/// True when the variable `name` holds a key: one of [`KEY_VARIABLES`], or a name ending in
/// one of [`SECRET_SUFFIXES`]. What the daemon is started without: keys come with each
/// client's request instead.
pub fn is_secret_variable(name: &str) -> bool {
    KEY_VARIABLES.iter().any(|(known, _)| *known == name)
        || SECRET_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_variables_and_secret_looking_names_are_secrets_and_nothing_else() {
        let cases = [
            ("ANTHROPIC_API_KEY", true),
            ("CLAUDE_CODE_OAUTH_TOKEN", true),
            ("ANTHROPIC_AUTH_TOKEN", true),
            ("GOOGLE_API_KEY", true),
            ("MISTRAL_API_KEY", true),
            ("ANTHROPIC_BASE_URL", false),
            ("PATH", false),
            ("CODEX_HOME", false),
            ("API_KEYS_DIR", false),
        ];
        for (name, secret) in cases {
            assert_eq!(is_secret_variable(name), secret, "{name}");
        }
    }
}
