//! The context meter: readings, window resolution and plausibility (R50–R59).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The largest context window any known model has (R24).
pub const MAX_KNOWN_CONTEXT_WINDOW: u64 = 1_000_000;
/// Known window sizes, smallest first; a too-small window is raised to the next one (R51).
pub const WINDOW_TIERS: [u64; 2] = [200_000, 1_000_000];
/// Tokens kept free below the window before auto-compaction (R24, R59).
pub const AUTO_COMPACT_BUFFER: u64 = 33_000;
/// A reported window outside this range is not believed (R24).
pub const PLAUSIBLE_REPORTED_WINDOW: std::ops::RangeInclusive<u64> = 1_000..=100_000_000;

/// Where a reading's tokens came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadingSource {
    /// A model call in this session.
    Live,
    /// The restored transcript.
    History,
}

/// Where a reading's window came from (R17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// The provider reported it.
    Reported,
    /// The model-name table.
    Model,
    /// An accepted prompt proved it larger than the table said.
    Learned,
}

/// Tokens in context against the model's window (R17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextReading {
    /// Tokens in context.
    pub tokens: u64,
    /// The model measured.
    pub model: Option<String>,
    /// The model's window, when known.
    pub window: Option<u64>,
    /// Where the window came from.
    pub window_source: Option<WindowSource>,
    /// Where the tokens came from.
    pub source: ReadingSource,
    /// When the reading was taken.
    pub at: Option<u64>,
    /// The model the user switched to since, which makes the window unknown (R58).
    pub switched_to: Option<String>,
}

/// Why a reading is not shown (R55).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Implausible {
    /// Zero tokens.
    #[serde(rename = "tokens is not a positive integer")]
    TokensNotPositive,
    /// A zero window.
    #[serde(rename = "window is not a positive integer")]
    WindowNotPositive,
    /// More tokens than the window holds.
    #[serde(rename = "tokens exceed the window")]
    TokensExceedWindow,
    /// No window, and more tokens than any known window holds.
    #[serde(rename = "tokens exceed every known window")]
    TokensExceedEveryWindow,
}

impl Implausible {
    /// The reason string the catalog names (R55).
    pub fn as_str(self) -> &'static str {
        match self {
            Implausible::TokensNotPositive => "tokens is not a positive integer",
            Implausible::WindowNotPositive => "window is not a positive integer",
            Implausible::TokensExceedWindow => "tokens exceed the window",
            Implausible::TokensExceedEveryWindow => "tokens exceed every known window",
        }
    }
}

/// Checks a reading for display (R55).
pub fn plausible_reading(reading: &ContextReading) -> Result<(), Implausible> {
    if reading.tokens == 0 {
        return Err(Implausible::TokensNotPositive);
    }
    match reading.window {
        Some(0) => Err(Implausible::WindowNotPositive),
        Some(window) if reading.tokens > window => Err(Implausible::TokensExceedWindow),
        None if reading.tokens > MAX_KNOWN_CONTEXT_WINDOW => {
            Err(Implausible::TokensExceedEveryWindow)
        }
        _ => Ok(()),
    }
}

/// The window the model-name table gives a model id (R51).
pub fn model_table_window(model: &str) -> Option<u64> {
    if ends_with_ignore_case(model, "[1m]") {
        return Some(1_000_000);
    }
    // Called on every model call, so one pass over the bytes finds every family name, and the
    // table's precedence (haiku, then opus/fable/mythos, then sonnet) is applied afterwards.
    let id = model.as_bytes();
    let at = |i: usize, name: &[u8]| {
        id.len() - i >= name.len()
            && id[i..i + name.len()]
                .iter()
                .zip(name)
                .all(|(b, n)| b.to_ascii_lowercase() == *n)
    };
    let (mut haiku, mut large, mut sonnet) = (false, false, false);
    for (i, byte) in id.iter().enumerate() {
        match byte.to_ascii_lowercase() {
            b'h' => haiku |= at(i, b"haiku"),
            b'o' => large |= at(i, b"opus"),
            b'f' => large |= at(i, b"fable"),
            b'm' => large |= at(i, b"mythos"),
            b's' => sonnet |= at(i, b"sonnet"),
            _ => {}
        }
    }
    if haiku {
        Some(200_000)
    } else if large {
        Some(1_000_000)
    } else if sonnet {
        Some(if sonnet_major_version(model) >= 5 {
            1_000_000
        } else {
            200_000
        })
    } else {
        None
    }
}

fn ends_with_ignore_case(haystack: &str, suffix: &str) -> bool {
    haystack.len() >= suffix.len()
        && haystack.as_bytes()[haystack.len() - suffix.len()..]
            .eq_ignore_ascii_case(suffix.as_bytes())
}

/// The major version of a Sonnet id: the number after `sonnet-` (`claude-sonnet-4-5`), else the
/// first number before it (`claude-3-5-sonnet`), else 0 for a bare `sonnet`.
fn sonnet_major_version(model: &str) -> u64 {
    let is_version =
        |p: &str| !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit());
    let mut before = None;
    let mut seen_sonnet = false;
    for part in model.split(['-', '.', '_', ' ']) {
        if seen_sonnet {
            if is_version(part) {
                return part.parse().unwrap_or(0);
            }
        } else if part.len() >= 6 && part.as_bytes()[..6].eq_ignore_ascii_case(b"sonnet") {
            seen_sonnet = true;
        } else if before.is_none() && is_version(part) {
            before = Some(part);
        }
    }
    before.and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// Looks a model up in a per-model map: exact key, then ignoring case, then without `[1m]` (R51).
pub fn lookup_window(map: &BTreeMap<String, u64>, model: &str) -> Option<u64> {
    if let Some(window) = map.get(model) {
        return Some(*window);
    }
    if let Some((_, window)) = map.iter().find(|(k, _)| k.eq_ignore_ascii_case(model)) {
        return Some(*window);
    }
    if !ends_with_ignore_case(model, "[1m]") {
        return None;
    }
    let stripped = &model[..model.len() - 4];
    map.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(stripped))
        .map(|(_, window)| *window)
}

/// The resolved window of a reading, and whether it overrode a smaller reported one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The window, when known.
    pub window: Option<u64>,
    /// Where it came from.
    pub source: Option<WindowSource>,
    /// The reported window that this resolution proved too small.
    pub refuted_report: Option<u64>,
}

/// Resolves the window for `tokens` on `model` (R51): reported unless a learned one is larger,
/// else learned, else the table; a table model whose prompt exceeds the window is raised to the
/// next tier above the prompt. A per-provider constant is never used.
pub fn resolve_window(
    model: Option<&str>,
    tokens: u64,
    reported: &BTreeMap<String, u64>,
    learned: &BTreeMap<String, u64>,
) -> Resolved {
    let unknown = Resolved {
        window: None,
        source: None,
        refuted_report: None,
    };
    let Some(model) = model else {
        return unknown;
    };
    // A report outside the plausible range is not a context window (R24).
    let reported_window =
        lookup_window(reported, model).filter(|w| PLAUSIBLE_REPORTED_WINDOW.contains(w));
    let learned_window = lookup_window(learned, model);
    let table_window = model_table_window(model);
    let (window, source) = match (reported_window, learned_window) {
        (Some(r), Some(l)) if l > r => (l, WindowSource::Learned),
        (Some(r), _) => (r, WindowSource::Reported),
        (None, Some(l)) => (l, WindowSource::Learned),
        (None, None) => match table_window {
            Some(t) => (t, WindowSource::Model),
            None => return unknown,
        },
    };
    if table_window.is_some() && tokens > window {
        if let Some(tier) = WINDOW_TIERS.iter().copied().find(|tier| *tier >= tokens) {
            return Resolved {
                window: Some(tier),
                source: Some(WindowSource::Learned),
                refuted_report: reported_window.filter(|r| *r < tier),
            };
        }
    }
    Resolved {
        window: Some(window),
        source: Some(source),
        refuted_report: match source {
            WindowSource::Learned => reported_window.filter(|r| *r < window),
            _ => None,
        },
    }
}

/// Compares model ids the way the auto-compact point does (R59): ignoring case, a `[1m]` suffix
/// and a `-YYYYMMDD` date suffix.
pub fn same_model(a: &str, b: &str) -> bool {
    fn normalise(id: &str) -> String {
        let lower = id.to_ascii_lowercase();
        let lower = lower.strip_suffix("[1m]").unwrap_or(&lower).to_string();
        match lower.rsplit_once('-') {
            Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => {
                head.to_string()
            }
            _ => lower,
        }
    }
    normalise(a) == normalise(b)
}

/// Where the view should draw the auto-compact mark (R59).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AutoCompactPoint {
    /// Auto-compaction is off for this model.
    Off,
    /// Compaction happens at `threshold` tokens.
    At {
        /// The token count.
        threshold: u64,
        /// Whether the CLI reported the threshold or it is assumed from the window.
        reported: bool,
    },
}

/// The CLI's own auto-compact report for one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoCompactReport<'a> {
    /// The model the report is about.
    pub model: &'a str,
    /// Whether auto-compaction is enabled.
    pub enabled: bool,
    /// The reported threshold.
    pub threshold: u64,
}

/// The auto-compact point for a reading (R59).
pub fn auto_compact_point(
    reading: Option<&ContextReading>,
    report: Option<&AutoCompactReport<'_>>,
) -> Option<AutoCompactPoint> {
    let reading = reading?;
    if reading.switched_to.is_some() {
        return None;
    }
    if let (Some(report), Some(model)) = (report, reading.model.as_deref()) {
        if same_model(report.model, model) {
            return Some(if report.enabled {
                AutoCompactPoint::At {
                    threshold: report.threshold,
                    reported: true,
                }
            } else {
                AutoCompactPoint::Off
            });
        }
    }
    reading.window.map(|window| AutoCompactPoint::At {
        threshold: window.saturating_sub(AUTO_COMPACT_BUFFER).max(1),
        reported: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r51_model_table_reads_sonnet_versions_in_both_orders() {
        assert_eq!(
            model_table_window("claude-sonnet-4-5-20250929"),
            Some(200_000)
        );
        assert_eq!(model_table_window("claude-sonnet-5"), Some(1_000_000));
        assert_eq!(
            model_table_window("claude-3-5-sonnet-20241022"),
            Some(200_000)
        );
        assert_eq!(model_table_window("sonnet"), Some(200_000));
        assert_eq!(model_table_window("claude-sonnet-4-5[1m]"), Some(1_000_000));
        assert_eq!(model_table_window("claude-haiku-4-5"), Some(200_000));
        assert_eq!(model_table_window("claude-opus-4-1"), Some(1_000_000));
        assert_eq!(model_table_window("gpt-5.5"), None);
    }

    #[test]
    fn r51_lookup_tries_exact_then_case_then_without_1m_suffix() {
        let map = BTreeMap::from([("Claude-Opus".to_string(), 500_000)]);
        assert_eq!(lookup_window(&map, "Claude-Opus"), Some(500_000));
        assert_eq!(lookup_window(&map, "claude-opus"), Some(500_000));
        assert_eq!(lookup_window(&map, "claude-opus[1m]"), Some(500_000));
        assert_eq!(lookup_window(&map, "claude-haiku"), None);
    }

    #[test]
    fn r59_same_model_ignores_case_1m_and_date_suffix() {
        assert!(same_model(
            "claude-sonnet-4-5-20250929",
            "Claude-Sonnet-4-5[1m]"
        ));
        assert!(!same_model("claude-sonnet-4-5", "claude-opus-4-5"));
    }
}
