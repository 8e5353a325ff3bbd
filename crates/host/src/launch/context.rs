//! The shell of [`super::resolve()`]: the asking client's context read from this process (its
//! directory, its environment), and a request's [`LaunchContext`] gathered (the files read).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use panewise_api::{ClientContext, ClientEnv};

use super::plan::{LaunchContext, LaunchRequest};
use super::resolve::config_dir;
use crate::config::Config;
use crate::error::ConfigError;
use crate::secrets::KEY_VARIABLES;

/// The variables a client sends besides the key variables ([`KEY_VARIABLES`]) and any
/// `api_key_env` its configuration names: the APIs' endpoints, the agent executables, the
/// `PATH` they are found on, and each supervised CLI's own configuration directory
/// ([`CLI_CONFIG_VARIABLES`]). A supervised agent gets them from the client that asked for
/// it, not from the daemon, which may have been started from another shell.
pub const CLIENT_VARIABLES: [&str; 10] = [
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "PANEWISE_CLAUDE",
    "PANEWISE_CODEX",
    "PANEWISE_GEMINI",
    "PATH",
    CLI_CONFIG_VARIABLES[0],
    CLI_CONFIG_VARIABLES[1],
    CLI_CONFIG_VARIABLES[2],
];

/// The configuration variables of the supervised CLIs that travel with a client's request:
/// Codex's home (`config.toml`, its model providers, its sessions), Claude Code's
/// configuration directory, Gemini CLI's home (where it looks for `.gemini/`).
pub const CLI_CONFIG_VARIABLES: [&str; 3] = ["CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"];

/// This process's values of the variables a session may need: the key variables, those
/// `config` names as holding a key (`api_key_env`), the endpoints and the executables.
pub fn client_env(config: &Config) -> ClientEnv {
    let configured = config
        .providers
        .values()
        .filter_map(|settings| settings.api_key_env.as_deref());
    let names = KEY_VARIABLES
        .iter()
        .map(|(name, _)| *name)
        .chain(CLIENT_VARIABLES)
        .chain(configured);
    let mut variables = BTreeMap::new();
    for name in names {
        if let Some(value) = std::env::var_os(name).and_then(|value| value.into_string().ok()) {
            if !value.trim().is_empty() {
                variables.insert(name.to_owned(), value);
            }
        }
    }
    ClientEnv::new(variables)
}

/// The context this process sends when it asks the daemon for a session: its working
/// directory and its variables ([`client_env`], with the `api_key_env` names of the
/// configuration found from `session_dir`, else from here).
pub fn client_context(session_dir: Option<&Path>) -> std::io::Result<ClientContext> {
    let cwd = std::env::current_dir()?;
    let from = session_dir.unwrap_or(&cwd);
    // A file that cannot be read is the daemon's to report; here it only names variables.
    let config = crate::config::load(from).unwrap_or_default();
    Ok(ClientContext {
        cwd: cwd.display().to_string(),
        env: client_env(&config),
    })
}

/// The context `request` is resolved in: `client`'s directory and variables (none sent:
/// this process's), this process's own as the fallback, and the configuration read now from
/// the session's directory (so an edited file applies to the next request). `mock_scenarios`
/// are the built-in mock's, the default first.
pub fn launch_context(
    request: &LaunchRequest,
    client: Option<&ClientContext>,
    mock_scenarios: &[&str],
) -> Result<LaunchContext, ConfigError> {
    let own_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut context = LaunchContext {
        client_cwd: client.map(|client| PathBuf::from(&client.cwd)),
        client_env: client.map(|client| client.env.clone()).unwrap_or_default(),
        own_cwd,
        own_env: ClientEnv::default(),
        config: Config::default(),
        mock_scenarios: mock_scenarios
            .iter()
            .map(|name| (*name).to_owned())
            .collect(),
    };
    // A directory that cannot be resolved is reported by `resolve` itself.
    let dir = config_dir(request, &context).unwrap_or_else(|_| context.own_cwd.clone());
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    context.config = crate::config::load(&dir)?;
    context.own_env = client_env(&context.config);
    Ok(context)
}
