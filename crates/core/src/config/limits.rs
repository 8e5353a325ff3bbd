//! The `[limits]` table: how far one session may grow, and what it, the daemon's sessions
//! together and their day may spend (R112).

use super::{describe, ConfigError};

/// A session log's cap when `[limits] log_max_mib` does not set one: 256 MiB. A session of
/// hours logs tens of MiB; a flooding agent (26–52 MB/s) reaches this in seconds rather
/// than filling the disk. Every log stays under what `replay` and `resume` read
/// ([`MAX_READ_BYTES`]).
pub const DEFAULT_LOG_CAP_BYTES: u64 = 256 * 1024 * 1024;

/// The most bytes a file read whole may hold (512 MiB): twice the default session-log cap
/// ([`DEFAULT_LOG_CAP_BYTES`]), so a log that reached its cap and went on logging all but
/// its deltas still reads, while a file of a GiB, or one that grows without end, is refused.
pub const MAX_READ_BYTES: u64 = 512 * 1024 * 1024;

/// The keys of the `[limits]` table.
pub const LIMITS_KEYS: [&str; 5] = [
    "log_max_mib",
    "max_cost_usd",
    "max_tokens",
    "daemon_max_cost_usd",
    "daily_max_cost_usd",
];

/// One MiB, the unit of `log_max_mib`.
const MIB: u64 = 1024 * 1024;

/// The `[limits]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitsSettings {
    /// `log_max_mib`: the session log's cap in MiB; past it the session is stopped and the
    /// log says why.
    pub log_max_mib: Option<u64>,
    /// `max_cost_usd`: what one session may cost, in US dollars, before it is held.
    pub max_cost_usd: Option<f64>,
    /// `max_tokens`: how many tokens one session may process before it is held (the cap of
    /// a session whose cost is unknown).
    pub max_tokens: Option<u64>,
    /// `daemon_max_cost_usd`: what the daemon's sessions may cost together.
    pub daemon_max_cost_usd: Option<f64>,
    /// `daily_max_cost_usd`: what the daemon's sessions may cost in one day.
    pub daily_max_cost_usd: Option<f64>,
}

// The dollar figures are read finite and above 0 (never NaN), so equality is an equivalence.
impl Eq for LimitsSettings {}

impl LimitsSettings {
    /// This layer's values over `base`'s.
    pub fn over(self, base: LimitsSettings) -> LimitsSettings {
        LimitsSettings {
            log_max_mib: self.log_max_mib.or(base.log_max_mib),
            max_cost_usd: self.max_cost_usd.or(base.max_cost_usd),
            max_tokens: self.max_tokens.or(base.max_tokens),
            daemon_max_cost_usd: self.daemon_max_cost_usd.or(base.daemon_max_cost_usd),
            daily_max_cost_usd: self.daily_max_cost_usd.or(base.daily_max_cost_usd),
        }
    }

    /// A session's caps, the flags' (`max_cost_usd`, `max_tokens`) over this table's; `None`
    /// when neither sets one.
    pub fn budget(
        &self,
        max_cost_usd: Option<f64>,
        max_tokens: Option<u64>,
    ) -> Option<panewise_pane_state::BudgetCaps> {
        let caps = panewise_pane_state::BudgetCaps {
            max_cost_usd: max_cost_usd.or(self.max_cost_usd),
            max_tokens: max_tokens.or(self.max_tokens),
        };
        (!caps.is_empty()).then_some(caps)
    }

    /// The daemon's caps over all its sessions.
    pub fn daemon_caps(&self) -> panewise_pane_state::budget::DaemonCaps {
        panewise_pane_state::budget::DaemonCaps {
            max_cost_usd: self.daemon_max_cost_usd,
            daily_max_cost_usd: self.daily_max_cost_usd,
        }
    }

    /// The session log's cap in bytes.
    pub fn log_cap_bytes(&self) -> u64 {
        self.log_max_mib
            .map_or(DEFAULT_LOG_CAP_BYTES, |mib| mib.saturating_mul(MIB))
    }
}

/// Reads the `[limits]` table. `log_max_mib` is a whole number from 1 to what `replay` and
/// `resume` read (512), so a capped log can always be read back.
pub(super) fn limits(
    value: &toml::Value,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<LimitsSettings, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        invalid(
            "limits",
            format!("must be a table, got {}", describe(value)),
        )
    })?;
    let mut settings = LimitsSettings::default();
    let most = MAX_READ_BYTES / MIB;
    for (key, value) in table {
        match key.as_str() {
            "log_max_mib" => {
                let mib = value
                    .as_integer()
                    .and_then(|mib| u64::try_from(mib).ok())
                    .filter(|mib| (1..=most).contains(mib));
                settings.log_max_mib = Some(mib.ok_or_else(|| {
                    invalid(
                        "limits.log_max_mib",
                        format!(
                            "must be a whole number of MiB from 1 to {most} (what replay reads), \
                             got {}",
                            describe(value)
                        ),
                    )
                })?);
            }
            "max_cost_usd" | "daemon_max_cost_usd" | "daily_max_cost_usd" => {
                let dollars = value
                    .as_float()
                    .or_else(|| value.as_integer().map(|whole| whole as f64))
                    .filter(|dollars| dollars.is_finite() && *dollars > 0.0);
                let dollars = Some(dollars.ok_or_else(|| {
                    invalid(
                        &format!("limits.{key}"),
                        format!(
                            "must be a number of US dollars above 0, got {}",
                            describe(value)
                        ),
                    )
                })?);
                match key.as_str() {
                    "max_cost_usd" => settings.max_cost_usd = dollars,
                    "daemon_max_cost_usd" => settings.daemon_max_cost_usd = dollars,
                    _ => settings.daily_max_cost_usd = dollars,
                }
            }
            "max_tokens" => {
                let tokens = value
                    .as_integer()
                    .and_then(|tokens| u64::try_from(tokens).ok())
                    .filter(|tokens| *tokens > 0);
                settings.max_tokens = Some(tokens.ok_or_else(|| {
                    invalid(
                        "limits.max_tokens",
                        format!(
                            "must be a whole number of tokens above 0, got {}",
                            describe(value)
                        ),
                    )
                })?);
            }
            other => {
                return Err(invalid(
                    &format!("limits.{other}"),
                    format!("unknown key, expected one of {}", LIMITS_KEYS.join(", ")),
                ))
            }
        }
    }
    Ok(settings)
}
