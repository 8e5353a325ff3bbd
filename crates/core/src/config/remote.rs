//! The `[remote]` table: the hosts whose daemons `agents`, `ui` and the session commands reach
//! over SSH, and how. Read from the user file only: a project file comes with its repository,
//! which must not choose the commands panewise runs, nor where it connects.

use super::{describe, string_value, ConfigError};

/// The keys of the `[remote]` table.
pub const REMOTE_KEYS: [&str; 3] = ["hosts", "ssh_command", "remote_command"];

/// The `[remote]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteSettings {
    /// `hosts`: reached by `agents` and `ui` as if each were given with `--remote`.
    pub hosts: Vec<String>,
    /// `ssh_command`: the command that reaches a host, its words split as a shell would
    /// (`PANEWISE_SSH_COMMAND` wins; default `ssh`).
    pub ssh_command: Option<String>,
    /// `remote_command`: the panewise to run there (default `panewise`), followed by
    /// `daemon --stdio`.
    pub remote_command: Option<String>,
}

impl RemoteSettings {
    /// Whether the table says anything.
    pub fn is_set(&self) -> bool {
        !self.hosts.is_empty() || self.ssh_command.is_some() || self.remote_command.is_some()
    }
}

/// Whether `host` can be handed to ssh as a host: not empty, no option (`-o…`), no space or
/// control character, and not `local` (the name of this machine's daemon). The reason
/// otherwise.
pub fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("a host must not be empty".to_owned());
    }
    if host.starts_with('-') {
        return Err(format!(
            "{host:?} starts with `-`, which ssh would read as an option"
        ));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{host:?} holds a space or a control character"));
    }
    if host == LOCAL {
        return Err("`local` names this machine's daemon, not a remote host".to_owned());
    }
    Ok(())
}

/// What this machine's daemon is called among the hosts.
pub const LOCAL: &str = "local";

pub(super) fn remote(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<RemoteSettings, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "remote",
            format!("must be a table, got {}", describe(value)),
        )
    })?;
    let mut settings = RemoteSettings::default();
    for (field, value) in table {
        let key = format!("remote.{field}");
        let command = || {
            let command = string_value(value).map_err(|reason| invalid(&key, reason))?;
            if command.trim().is_empty() {
                return Err(invalid(&key, "must not be empty".to_owned()));
            }
            Ok(command.to_owned())
        };
        match field.as_str() {
            "hosts" => {
                let list = value.as_array().ok_or_else(|| {
                    invalid(
                        &key,
                        format!("must be a list of host names, got {}", describe(value)),
                    )
                })?;
                for (index, host) in list.iter().enumerate() {
                    let key = format!("remote.hosts[{index}]");
                    let host = string_value(host).map_err(|reason| invalid(&key, reason))?;
                    check_host(host).map_err(|reason| invalid(&key, reason))?;
                    settings.hosts.push(host.to_owned());
                }
            }
            "ssh_command" => settings.ssh_command = Some(command()?),
            "remote_command" => settings.remote_command = Some(command()?),
            other => {
                return Err(invalid(
                    &format!("remote.{other}"),
                    format!("unknown key, expected one of {}", REMOTE_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(settings)
}
