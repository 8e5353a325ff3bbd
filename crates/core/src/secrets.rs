//! Which environment variables holding API keys are kept from the processes panewise starts.
//!
//! panewise reads `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` and `GEMINI_API_KEY` (or the variable
//! a `[providers.NAME] api_key_env` names) for its own model calls, and the agent CLIs it
//! supervises read their own (`CODEX_API_KEY`, `GOOGLE_API_KEY`, Claude Code's OAuth token).
//! None of them belongs in a tool's environment: `env` in the `shell` tool would put the key
//! into the model's context, the session log and the window ledger. So:
//!
//! - panewise's own tools get none of [`KEY_VARIABLES`] nor any configured `api_key_env`
//!   ([`EnvPolicy::tool_removals`]);
//! - a supervised agent keeps its own provider's keys, which it needs to run, and gets no
//!   other provider's ([`EnvPolicy::agent_removals`]): a Claude Code session never sees
//!   `OPENAI_API_KEY`;
//! - `pass_env` in `panewise.toml` names variables to keep anyway, in both cases.
//!
//! Pure: lists of names in, lists of names out; the callers remove them when they spawn.

use crate::config::{Config, ProviderName};

pub use panewise_providers::keys::{KeyOwner, KEY_VARIABLES};

/// The key variables to keep from processes, and the ones to pass anyway.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Variables the configuration names as holding a key (`api_key_env`), with their owner.
    pub configured: Vec<(String, KeyOwner)>,
    /// Variables to keep even so (`pass_env`).
    pub pass_env: Vec<String>,
}

impl EnvPolicy {
    /// The policy `config` sets: its `api_key_env` variables and its `pass_env`.
    pub fn from_config(config: &Config) -> Self {
        let configured = config
            .providers
            .iter()
            .filter_map(|(provider, settings)| {
                let variable = settings.api_key_env.clone()?;
                Some((variable, provider.row().keys))
            })
            .collect();
        Self {
            configured,
            pass_env: config.pass_env.clone().unwrap_or_default(),
        }
    }

    /// The variables to remove from the environment of panewise's own tools: every key
    /// variable, known or configured, that `pass_env` does not name.
    pub fn tool_removals(&self) -> Vec<String> {
        self.removals(|_| true)
    }

    /// The variables to remove from a supervised agent's environment: the keys of every
    /// provider but the agent's own ([`crate::agent::ProviderRow::keys`]), unless `pass_env`
    /// names them.
    pub fn agent_removals(&self, provider: ProviderName) -> Vec<String> {
        let own = provider.row().keys;
        self.removals(|owner| owner != own)
    }

    fn removals(&self, withheld: impl Fn(KeyOwner) -> bool) -> Vec<String> {
        let known = KEY_VARIABLES
            .iter()
            .map(|(name, owner)| ((*name).to_owned(), *owner));
        let mut names: Vec<String> = known
            .chain(self.configured.iter().cloned())
            .filter(|(name, owner)| withheld(*owner) && !self.pass_env.contains(name))
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The variables to remove from a supervised `provider` agent's environment, the
/// conventional key variables only (see [`EnvPolicy::agent_removals`]).
pub fn agent_env_removals(provider: ProviderName, pass_env: &[String]) -> Vec<String> {
    EnvPolicy {
        configured: Vec::new(),
        pass_env: pass_env.to_vec(),
    }
    .agent_removals(provider)
}

/// The variables to remove from panewise's own tools' environment, the conventional key
/// variables only (see [`EnvPolicy::tool_removals`]).
pub fn tool_env_removals(pass_env: &[String]) -> Vec<String> {
    EnvPolicy {
        configured: Vec::new(),
        pass_env: pass_env.to_vec(),
    }
    .tool_removals()
}
