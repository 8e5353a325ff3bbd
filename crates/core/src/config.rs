//! `panewise.toml`: the provider, model, approval mode, window strategy and provider endpoints
//! a project or a user configures, layered under the command line's flags.
//!
//! Lookup (`panewise_host::config::load`, which reads the files): the user file `$XDG_CONFIG_HOME/panewise/panewise.toml`
//! (`~/.config/panewise/panewise.toml` when the variable is unset) is the base; the nearest
//! project file overrides it key by key, found by walking from the working directory up
//! through its ancestors, stopping at the first directory that holds a `.git` (the repository
//! root, which is still searched) or at the filesystem root. Flags override both
//! ([`Config::with_overrides`]). A missing file is no error; an invalid one always is, naming
//! the file, the key and the reason. Unknown keys are rejected by name, at every level, and
//! API keys are never read from the file (`api_key_env` names the variable that holds one).
//! `docs/CONFIG.md` documents the format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use panewise_window::config::describe_value;
use panewise_window::{StrategyConfig, WindowError};

use crate::approval_mode::ApprovalMode;
use crate::error::ConfigError;
use crate::sandbox::{BoxNetwork, MechanismChoice, SandboxSettings, SANDBOX_KEYS};

/// The configuration file's name, in a project directory and in the user config directory.
pub const FILE_NAME: &str = "panewise.toml";

/// The top-level keys a file may hold.
pub const TOP_LEVEL_KEYS: [&str; 13] = [
    "provider",
    "model",
    "approval",
    "pass_env",
    "window",
    "providers",
    "deadlines",
    "notify",
    "telemetry",
    "remote",
    "sandbox",
    "limits",
    "mcp",
];

mod limits;
mod remote;
pub use limits::{LimitsSettings, DEFAULT_LOG_CAP_BYTES, LIMITS_KEYS, MAX_READ_BYTES};
pub use remote::{check_host, RemoteSettings, LOCAL, REMOTE_KEYS};

/// The keys of the `[telemetry]` table.
pub const TELEMETRY_KEYS: [&str; 6] = [
    "enabled",
    "endpoint",
    "protocol",
    "service_name",
    "resource_attributes",
    "content",
];

pub use panewise_protocol::TelemetrySettings;

/// The keys of the `[notify]` table.
pub const NOTIFY_KEYS: [&str; 4] = ["delay_secs", "command", "desktop", "bell"];

/// The `[notify]` table: how the daemon tells the person a session needs them or is done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotifySettings {
    /// `delay_secs`: how long a state must last before it is notified (default 0); a session
    /// that moves on before is not notified.
    pub delay_secs: Option<u64>,
    /// `command`: run with `sh -c`, the event as one JSON object on its stdin.
    pub command: Option<String>,
    /// `desktop`: `notify-send`, where it is installed (default true).
    pub desktop: Option<bool>,
    /// `bell`: attached clients ring the terminal bell and set its title (default true).
    pub bell: Option<bool>,
}

/// The keys of the `[deadlines]` table, each a whole number of seconds.
pub const DEADLINE_KEYS: [&str; 3] = ["submit_secs", "stuck_secs", "startup_secs"];

/// The `[deadlines]` table: how long a session waits before it says something is wrong.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeadlineSettings {
    /// `submit_secs`: how long a prompt waits for the agent's first sign of work.
    pub submit_secs: Option<u64>,
    /// `stuck_secs`: how long a working agent may be silent before it is reported stuck.
    pub stuck_secs: Option<u64>,
    /// `startup_secs`: how long a supervised CLI's process may run without a line on its
    /// output channel before the session ends failed ([`DEFAULT_STARTUP_SECS`]).
    pub startup_secs: Option<u64>,
}

/// How long a supervised CLI may take to print its first line when `startup_secs` is not set.
/// The CLIs print theirs within a second or two (an init event, or the answer to the
/// protocol's handshake); a minute leaves room for a slow first start (npm's shim, a cold
/// disk), and ends before the submit deadline (30 s) would only fail the turn and leave a
/// process that never answers running.
pub const DEFAULT_STARTUP_SECS: u64 = 20;

/// The keys of a `[providers.NAME]` table.
pub const PROVIDER_KEYS: [&str; 3] = ["base_url", "api_key_env", "prompt_cache"];

/// The approval mode when neither a file nor a flag sets one (as `panewise run`'s default).
pub const DEFAULT_APPROVAL: ApprovalMode = ApprovalMode::Ask;

pub use crate::agent::ProviderName;

/// A `[providers.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderSettings {
    /// Where the provider's API is served (a proxy, a gateway, the mock server).
    pub base_url: Option<String>,
    /// The environment variable that holds the provider's API key. The key itself is never
    /// in the file.
    pub api_key_env: Option<String>,
    /// `prompt_cache`: whether the own loop's requests ask for the provider's prompt cache
    /// (on when absent).
    pub prompt_cache: Option<bool>,
}

/// What the configuration files say; `None` where they say nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// `provider`.
    pub provider: Option<ProviderName>,
    /// `model`.
    pub model: Option<String>,
    /// `approval`.
    pub approval: Option<ApprovalMode>,
    /// `pass_env`: API key variables to pass to tools and agents anyway (see
    /// the `secrets` policy). Read from the user file only: a project file comes with its
    /// repository, which must not be able to hand the keys to its tools.
    pub pass_env: Option<Vec<String>>,
    /// `[window]`: the context-window strategy, read as [`StrategyConfig`] reads it.
    pub window: Option<StrategyConfig>,
    /// `[providers.NAME]` tables. A file's table for a provider replaces a lower layer's
    /// table for it whole.
    pub providers: BTreeMap<ProviderName, ProviderSettings>,
    /// `[deadlines]`.
    pub deadlines: DeadlineSettings,
    /// `[notify]`: the daemon's notifications (read from the user file by the daemon).
    pub notify: NotifySettings,
    /// `[telemetry]`: OpenTelemetry export.
    pub telemetry: TelemetrySettings,
    /// `[remote]`: the hosts reached over SSH (user file only).
    pub remote: RemoteSettings,
    /// `[sandbox]`: the own loop's `shell` sandbox (`network = true` from the user file only).
    pub sandbox: SandboxSettings,
    /// `[limits]`: how far one session may grow.
    pub limits: LimitsSettings,
    /// `[mcp]`: the MCP servers the own loop's sessions use (`project_servers` from the user
    /// file only).
    pub mcp: crate::mcp::config::McpSettings,
    /// The files read, the lowest layer first.
    pub sources: Vec<PathBuf>,
}

/// The command line's values, each overriding the files' when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigOverrides {
    /// `--provider`.
    pub provider: Option<ProviderName>,
    /// `--model`.
    pub model: Option<String>,
    /// `--approval`.
    pub approval: Option<ApprovalMode>,
    /// A strategy given on the command line.
    pub window: Option<StrategyConfig>,
}

impl Config {
    /// The user file's text (the base) and the project file's over it, each with its path
    /// (named in errors); `None` for a file there is not. The keys a project file may not set
    /// are refused here, naming the file.
    pub fn layered(
        user: Option<(&str, &Path)>,
        project: Option<(&str, &Path)>,
    ) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        if let Some((text, path)) = user {
            config = Self::parse(text, path)?;
        }
        if let Some((text, project)) = project {
            let mut layer = Self::parse(text, project)?;
            // A server the project file defines is the repository's choice (see
            // `crate::mcp::config::merge`).
            for server in layer.mcp.servers.values_mut() {
                server.source = crate::mcp::config::Source::Project;
            }
            if layer.telemetry.content.is_some() {
                return Err(ConfigError::Invalid {
                    path: project.to_path_buf(),
                    key: "telemetry.content".to_owned(),
                    reason: "is read from the user file only: a project file comes with its \
                             repository, which could send your prompts and your tools' output \
                             to its collector; set it in your user file instead"
                        .to_owned(),
                });
            }
            if layer.pass_env.is_some() {
                return Err(ConfigError::Invalid {
                    path: project.to_path_buf(),
                    key: "pass_env".to_owned(),
                    reason: "is read from the user file only: a project file comes with its \
                             repository, which could hand your API keys to the model's tools; \
                             set it in your user file instead"
                        .to_owned(),
                });
            }
            if layer.remote.is_set() {
                return Err(ConfigError::Invalid {
                    path: project.to_path_buf(),
                    key: "remote".to_owned(),
                    reason: "is read from the user file only: a project file comes with its \
                             repository, which must not choose the commands panewise runs or \
                             the hosts it connects to; set it in your user file instead"
                        .to_owned(),
                });
            }
            if layer
                .sandbox
                .network
                .as_ref()
                .is_some_and(|network| *network != BoxNetwork::None)
            {
                return Err(ConfigError::Invalid {
                    path: project.to_path_buf(),
                    key: "sandbox.network".to_owned(),
                    reason: "`true` or a list of ports is read from the user file only: a \
                             project file comes with its repository, which must not open the \
                             network to the commands the model runs; set it in your user file \
                             instead"
                        .to_owned(),
                });
            }
            if layer.mcp.project_servers.is_some() {
                return Err(ConfigError::Invalid {
                    path: project.to_path_buf(),
                    key: "mcp.project_servers".to_owned(),
                    reason: "is read from the user file only: a project cannot let its own \
                             servers start; set it in your user file instead"
                        .to_owned(),
                });
            }
            config = layer.over(config);
        }
        Ok(config)
    }

    /// Parses one file's text; `path` is named in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|error| ConfigError::Syntax {
            path: path.to_path_buf(),
            line: error.span().map_or(1, |span| {
                text.get(..span.start)
                    .map_or(1, |before| before.matches('\n').count().saturating_add(1))
            }),
            reason: error.message().to_owned(),
        })?;
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: key.to_owned(),
            reason,
        };
        let mut config = Config {
            sources: vec![path.to_path_buf()],
            ..Config::default()
        };
        for (key, value) in &table {
            match key.as_str() {
                "provider" => {
                    let name = string_value(value).map_err(|reason| invalid(key, reason))?;
                    config.provider = Some(
                        ProviderName::from_name(name)
                            .ok_or_else(|| invalid(key, unknown_provider(name)))?,
                    );
                }
                "model" => {
                    let model = string_value(value).map_err(|reason| invalid(key, reason))?;
                    if model.trim().is_empty() {
                        return Err(invalid(key, "must not be empty".to_owned()));
                    }
                    config.model = Some(model.to_owned());
                }
                "approval" => {
                    let name = string_value(value).map_err(|reason| invalid(key, reason))?;
                    config.approval = Some(ApprovalMode::from_name(name).ok_or_else(|| {
                        invalid(
                            key,
                            format!(
                                "unknown mode `{name}`, expected one of {}",
                                approval_names()
                            ),
                        )
                    })?);
                }
                "window" => {
                    let json = serde_json::to_value(value)
                        .map_err(|error| invalid(key, format!("cannot be read: {error}")))?;
                    config.window =
                        Some(StrategyConfig::try_from(json).map_err(|error| match error {
                            WindowError::InvalidConfig { field, reason } if field.is_empty() => {
                                invalid("window", reason)
                            }
                            WindowError::InvalidConfig { field, reason } => {
                                invalid(&format!("window.{field}"), reason)
                            }
                            other => invalid("window", other.to_string()),
                        })?);
                }
                "pass_env" => config.pass_env = Some(pass_env(value, &invalid)?),
                "providers" => config.providers = providers(value, &invalid)?,
                "deadlines" => config.deadlines = deadlines(value, &invalid)?,
                "notify" => config.notify = notify(value, &invalid)?,
                "telemetry" => config.telemetry = telemetry(value, &invalid)?,
                "remote" => config.remote = remote::remote(value, &invalid)?,
                "sandbox" => config.sandbox = sandbox(value, &invalid)?,
                "limits" => config.limits = limits::limits(value, &invalid)?,
                "mcp" => {
                    let json = serde_json::to_value(value)
                        .map_err(|error| invalid(key, format!("cannot be read: {error}")))?;
                    config.mcp =
                        crate::mcp::config::parse_table(&json, crate::mcp::config::Source::User)
                            .map_err(|problem| invalid(&problem.key, problem.reason))?;
                }
                other => {
                    return Err(invalid(
                        other,
                        format!("unknown key, expected one of {}", TOP_LEVEL_KEYS.join(", ")),
                    ));
                }
            }
        }
        Ok(config)
    }

    /// `self` laid over `base`: every value `self` sets wins, the rest come from `base`.
    pub fn over(self, base: Config) -> Config {
        let mut providers = base.providers;
        providers.extend(self.providers);
        let mut sources = base.sources;
        sources.extend(self.sources);
        Config {
            provider: self.provider.or(base.provider),
            model: self.model.or(base.model),
            approval: self.approval.or(base.approval),
            pass_env: self.pass_env.or(base.pass_env),
            window: self.window.or(base.window),
            providers,
            deadlines: DeadlineSettings {
                submit_secs: self.deadlines.submit_secs.or(base.deadlines.submit_secs),
                stuck_secs: self.deadlines.stuck_secs.or(base.deadlines.stuck_secs),
                startup_secs: self.deadlines.startup_secs.or(base.deadlines.startup_secs),
            },
            notify: NotifySettings {
                delay_secs: self.notify.delay_secs.or(base.notify.delay_secs),
                command: self.notify.command.or(base.notify.command),
                desktop: self.notify.desktop.or(base.notify.desktop),
                bell: self.notify.bell.or(base.notify.bell),
            },
            telemetry: TelemetrySettings {
                enabled: self.telemetry.enabled.or(base.telemetry.enabled),
                endpoint: self.telemetry.endpoint.or(base.telemetry.endpoint),
                protocol: self.telemetry.protocol.or(base.telemetry.protocol),
                service_name: self.telemetry.service_name.or(base.telemetry.service_name),
                resource_attributes: {
                    let mut attributes = base.telemetry.resource_attributes;
                    attributes.extend(self.telemetry.resource_attributes);
                    attributes
                },
                content: self.telemetry.content.or(base.telemetry.content),
            },
            // The project file never sets it (refused in `load_files`).
            remote: base.remote,
            sandbox: self.sandbox.over(base.sandbox),
            limits: self.limits.over(base.limits),
            mcp: self.mcp.over(base.mcp),
            sources,
        }
    }

    /// The configuration with the command line's values laid over it.
    pub fn with_overrides(self, overrides: ConfigOverrides) -> Config {
        Config {
            provider: overrides.provider.or(self.provider),
            model: overrides.model.or(self.model),
            approval: overrides.approval.or(self.approval),
            window: overrides.window.or(self.window),
            ..self
        }
    }

    /// The approval mode, [`DEFAULT_APPROVAL`] when nothing set one.
    pub fn approval_or_default(&self) -> ApprovalMode {
        self.approval.unwrap_or(DEFAULT_APPROVAL)
    }
}

fn approval_names() -> String {
    ApprovalMode::ALL
        .iter()
        .map(|mode| mode.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_provider(name: &str) -> String {
    format!(
        "unknown provider `{name}`, expected one of {}",
        ProviderName::ALL.map(ProviderName::as_str).join(", ")
    )
}

/// A TOML value as a person wrote it, for error messages.
fn describe(value: &toml::Value) -> String {
    match serde_json::to_value(value) {
        Ok(json) => describe_value(&json),
        Err(_) => value.type_str().to_owned(),
    }
}

fn string_value(value: &toml::Value) -> Result<&str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("must be a string, got {}", describe(value)))
}

fn telemetry(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<TelemetrySettings, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "telemetry",
            format!("must be a table, got {}", describe(value)),
        )
    })?;
    let mut settings = TelemetrySettings::default();
    for (field, value) in table {
        let key = format!("telemetry.{field}");
        let text = || {
            string_value(value)
                .map_err(|reason| invalid(&key, reason))
                .map(str::to_owned)
        };
        let flag = || {
            value.as_bool().ok_or_else(|| {
                invalid(
                    &key,
                    format!("must be true or false, got {}", describe(value)),
                )
            })
        };
        match field.as_str() {
            "enabled" => settings.enabled = Some(flag()?),
            "content" => settings.content = Some(flag()?),
            "endpoint" => {
                let endpoint = text()?;
                if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                    return Err(invalid(
                        &key,
                        "must start with http:// or https://".to_owned(),
                    ));
                }
                settings.endpoint = Some(endpoint);
            }
            "protocol" => {
                let protocol = text()?;
                if protocol != "http/protobuf" && protocol != "grpc" {
                    return Err(invalid(
                        &key,
                        format!("unknown protocol `{protocol}`, expected http/protobuf or grpc"),
                    ));
                }
                settings.protocol = Some(protocol);
            }
            "service_name" => settings.service_name = Some(text()?),
            "resource_attributes" => {
                let attributes = value.as_table().ok_or_else(|| {
                    invalid(&key, format!("must be a table, got {}", describe(value)))
                })?;
                for (name, value) in attributes {
                    let value = string_value(value)
                        .map_err(|reason| invalid(&format!("{key}.{name}"), reason))?;
                    settings
                        .resource_attributes
                        .insert(name.clone(), value.to_owned());
                }
            }
            other => {
                return Err(invalid(
                    &format!("telemetry.{other}"),
                    format!("unknown key, expected one of {}", TELEMETRY_KEYS.join(", ")),
                ));
            }
        }
    }
    Ok(settings)
}

fn notify(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<NotifySettings, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "notify",
            format!("must be a table, got {}", describe(value)),
        )
    })?;
    let mut settings = NotifySettings::default();
    for (field, value) in table {
        let key = format!("notify.{field}");
        let boolean = || {
            value.as_bool().ok_or_else(|| {
                invalid(
                    &key,
                    format!("must be true or false, got {}", describe(value)),
                )
            })
        };
        match field.as_str() {
            "delay_secs" => {
                let seconds = value
                    .as_integer()
                    .and_then(|seconds| u64::try_from(seconds).ok())
                    .ok_or_else(|| {
                        invalid(
                            &key,
                            format!(
                                "must be a whole number of seconds, 0 or more, got {}",
                                describe(value)
                            ),
                        )
                    })?;
                settings.delay_secs = Some(seconds);
            }
            "command" => {
                let command = string_value(value).map_err(|reason| invalid(&key, reason))?;
                if command.trim().is_empty() {
                    return Err(invalid(&key, "must not be empty".to_owned()));
                }
                settings.command = Some(command.to_owned());
            }
            "desktop" => settings.desktop = Some(boolean()?),
            "bell" => settings.bell = Some(boolean()?),
            other => {
                return Err(invalid(
                    &format!("notify.{other}"),
                    format!("unknown key, expected one of {}", NOTIFY_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(settings)
}

fn deadlines(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<DeadlineSettings, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "deadlines",
            format!("must be a table, got {}", describe(value)),
        )
    })?;
    let mut settings = DeadlineSettings::default();
    for (field, value) in table {
        let key = format!("deadlines.{field}");
        let seconds = match value.as_integer() {
            Some(seconds) if seconds >= 1 => u64::try_from(seconds).ok(),
            _ => None,
        }
        .ok_or_else(|| {
            invalid(
                &key,
                format!(
                    "must be a whole number of seconds, at least 1, got {}",
                    describe(value)
                ),
            )
        })?;
        match field.as_str() {
            "submit_secs" => settings.submit_secs = Some(seconds),
            "stuck_secs" => settings.stuck_secs = Some(seconds),
            "startup_secs" => settings.startup_secs = Some(seconds),
            other => {
                return Err(invalid(
                    &format!("deadlines.{other}"),
                    format!("unknown key, expected one of {}", DEADLINE_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(settings)
}

fn providers(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<BTreeMap<ProviderName, ProviderSettings>, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "providers",
            format!(
                "must be a table of provider tables, got {}",
                describe(value)
            ),
        )
    })?;
    let mut providers = BTreeMap::new();
    for (name, settings) in table {
        let key = format!("providers.{name}");
        let provider =
            ProviderName::from_name(name).ok_or_else(|| invalid(&key, unknown_provider(name)))?;
        let settings = settings
            .as_table()
            .ok_or_else(|| invalid(&key, format!("must be a table, got {}", describe(settings))))?;
        let mut parsed = ProviderSettings::default();
        for (field, value) in settings {
            let key = format!("{key}.{field}");
            let text = || string_value(value).map_err(|reason| invalid(&key, reason));
            match field.as_str() {
                "base_url" => {
                    let url = text()?;
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(invalid(
                            &key,
                            format!("must start with http:// or https://, got `{url}`"),
                        ));
                    }
                    if let Err(error) = url::Url::parse(url) {
                        return Err(invalid(&key, format!("is not a URL ({error}): `{url}`")));
                    }
                    parsed.base_url = Some(url.to_owned());
                }
                "api_key_env" => {
                    let variable = text()?;
                    if !is_variable_name(variable) {
                        return Err(invalid(
                            &key,
                            format!(
                                "must name an environment variable (letters, digits and `_`, \
                                 not starting with a digit), got `{variable}`"
                            ),
                        ));
                    }
                    parsed.api_key_env = Some(variable.to_owned());
                }
                "prompt_cache" => {
                    let on = value.as_bool().ok_or_else(|| {
                        invalid(
                            &key,
                            format!("must be true or false, got {}", describe(value)),
                        )
                    })?;
                    parsed.prompt_cache = Some(on);
                }
                // Said apart from other unknown keys: a key in a file ends up in a repository.
                "api_key" => {
                    return Err(invalid(
                        &key,
                        "API keys are never read from the file; set `api_key_env` to the name \
                         of the environment variable that holds the key"
                            .to_owned(),
                    ));
                }
                other => {
                    return Err(invalid(
                        &format!("providers.{name}.{other}"),
                        format!("unknown key, expected one of {}", PROVIDER_KEYS.join(", ")),
                    ));
                }
            }
        }
        providers.insert(provider, parsed);
    }
    Ok(providers)
}

fn pass_env(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<String>, ConfigError> {
    let items = value.as_array().ok_or_else(|| {
        invalid(
            "pass_env",
            format!(
                "must be a list of environment variable names, got {}",
                describe(value)
            ),
        )
    })?;
    let mut names = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let key = format!("pass_env[{index}]");
        let name = string_value(item).map_err(|reason| invalid(&key, reason))?;
        if !is_variable_name(name) {
            return Err(invalid(
                &key,
                format!(
                    "must name an environment variable (letters, digits and `_`, not starting \
                     with a digit), got `{name}`"
                ),
            ));
        }
        names.push(name.to_owned());
    }
    Ok(names)
}

fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|rest| rest.is_ascii_alphanumeric() || rest == '_')
}

/// `[sandbox] network`: `true`, `false`, or a list of loopback ports (`[5173, 8080]`).
fn box_network(
    value: &toml::Value,
    name: &str,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<BoxNetwork, ConfigError> {
    let expected = "must be true, false or a list of loopback ports such as [5173, 8080]";
    match value {
        toml::Value::Boolean(network) => Ok(BoxNetwork::from(*network)),
        toml::Value::Array(items) => {
            let mut ports = Vec::with_capacity(items.len());
            for item in items {
                let port = item
                    .as_integer()
                    .and_then(|port| u16::try_from(port).ok())
                    .filter(|port| *port != 0)
                    .ok_or_else(|| {
                        invalid(
                            name,
                            format!("{expected}: `{item}` is no port (1 to 65535)"),
                        )
                    })?;
                if !ports.contains(&port) {
                    ports.push(port);
                }
            }
            Ok(if ports.is_empty() {
                BoxNetwork::None
            } else {
                BoxNetwork::LoopbackPorts(ports)
            })
        }
        _ => Err(invalid(name, expected.to_owned())),
    }
}

/// The `[sandbox]` table.
fn sandbox(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<SandboxSettings, ConfigError> {
    let table = value
        .as_table()
        .ok_or_else(|| invalid("sandbox", "must be a table".to_owned()))?;
    let mut settings = SandboxSettings::default();
    for (key, value) in table {
        let name = format!("sandbox.{key}");
        match key.as_str() {
            "network" => settings.network = Some(box_network(value, &name, invalid)?),
            "mechanism" => {
                let choice = value.as_str().and_then(MechanismChoice::from_name);
                settings.mechanism = Some(choice.ok_or_else(|| {
                    invalid(
                        &name,
                        format!(
                            "must be one of {}",
                            MechanismChoice::ALL.map(MechanismChoice::name).join(", ")
                        ),
                    )
                })?);
            }
            other => {
                return Err(invalid(
                    &format!("sandbox.{other}"),
                    format!("unknown key, expected one of {}", SANDBOX_KEYS.join(", ")),
                ));
            }
        }
    }
    Ok(settings)
}
