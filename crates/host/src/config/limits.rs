//! The `[limits]` table: how far one session may grow.

use super::{describe, ConfigError};
use crate::journal::session_log::DEFAULT_LOG_CAP_BYTES;
use crate::regular_file::MAX_READ_BYTES;

/// The keys of the `[limits]` table.
pub const LIMITS_KEYS: [&str; 1] = ["log_max_mib"];

/// One MiB, the unit of `log_max_mib`.
const MIB: u64 = 1024 * 1024;

/// The `[limits]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitsSettings {
    /// `log_max_mib`: the session log's cap in MiB; past it the session is stopped and the
    /// log says why.
    pub log_max_mib: Option<u64>,
}

impl LimitsSettings {
    /// This layer's values over `base`'s.
    pub fn over(self, base: LimitsSettings) -> LimitsSettings {
        LimitsSettings {
            log_max_mib: self.log_max_mib.or(base.log_max_mib),
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
