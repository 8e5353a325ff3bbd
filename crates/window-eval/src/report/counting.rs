//! How each session's token counts were made, and the lines that say so: anchored on the
//! provider's readings (how close the raw replay came to them) or estimated (with the
//! calibration's error).

use std::fmt::Write as _;

use serde::Serialize;

use super::{thousands, Report, SessionResult};
use crate::anchor::Lesson;
use crate::replay::Figures;

/// How one session's token counts were made ([`crate::anchor`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counting {
    /// The relative error of an estimated session's counts (the calibration's leave-one-out
    /// error); `None` when anchored on readings, or when it could not be checked.
    pub estimate_error: Option<f64>,
    /// Tool results the recording lacks, carried as sized placeholders.
    pub missing_spans: usize,
    /// Their tokens, sized from the readings.
    pub missing_tokens: u64,
    /// The bytes per token in force at the session's end.
    pub bytes_per_token: f64,
    /// Whether every call has a recorded time, so that cache expiry is modelled.
    pub timed: bool,
    /// What this session teaches the calibration of sessions without readings (anchored only).
    #[serde(skip)]
    pub lesson: Option<Lesson>,
}

impl Report {
    /// How the sessions' tokens were counted: how many anchored on provider readings (and
    /// the worst raw replay against them), how many estimated (and the calibration's error).
    pub fn counting_line(&self) -> String {
        let anchored: Vec<&SessionResult> = self.sessions.iter().filter(|s| !s.estimated).collect();
        let estimated: Vec<&SessionResult> = self.sessions.iter().filter(|s| s.estimated).collect();
        let mut out = String::new();
        // Per anchored session, how far its raw replay is from what the provider recorded.
        let off = |of: &dyn Fn(&Figures) -> Option<(f64, f64)>| -> Vec<(f64, &str)> {
            anchored
                .iter()
                .filter_map(|s| {
                    let (replayed, recorded) = s.figures.first().and_then(|(_, f)| of(f))?;
                    // The file's own name: the table reads the same wherever the files lie.
                    let name = s.name.rsplit('/').next().unwrap_or(&s.name);
                    (recorded > 0.0).then(|| (((replayed - recorded) / recorded).abs(), name))
                })
                .collect()
        };
        fn worst<'a>(offs: &[(f64, &'a str)]) -> Option<(f64, &'a str)> {
            offs.iter()
                .copied()
                .fold(None, |worst: Option<(f64, &str)>, e| match worst {
                    Some(w) if w.0 >= e.0 => Some(w),
                    _ => Some(e),
                })
        }
        let token_offs = off(&|f| {
            (f.recorded_prompt_tokens > 0).then_some((
                f.counted_prompt_tokens as f64,
                f.recorded_prompt_tokens as f64,
            ))
        });
        let cost_offs = off(&|f| f.cost_on_recorded_usd.zip(f.recorded_cost_usd));
        let tokens = worst(&token_offs).map(|(e, _)| e);
        let missing: u64 = anchored.iter().map(|s| s.counting.missing_tokens).sum();
        let spans: usize = anchored.iter().map(|s| s.counting.missing_spans).sum();
        let _ = write!(
            out,
            "counts: {} session(s) anchored on the provider's readings",
            anchored.len()
        );
        if let Some(tokens) = tokens {
            let _ = write!(
                out,
                " (raw replay within {:.1} % of the recorded prompt tokens",
                100.0 * tokens
            );
            if let Some((cost, name)) = worst(&cost_offs) {
                let within = cost_offs.iter().filter(|(e, _)| *e <= 0.05).count();
                let _ = write!(
                    out,
                    "; cost within 5 % of the recorded on {within} of {}, the furthest {:.1} % off: {name}",
                    cost_offs.len(),
                    100.0 * cost
                );
            }
            out.push(')');
        }
        if spans > 0 {
            let _ = write!(
                out,
                "; {spans} tool result(s) the recordings lack, sized from the readings at {} tokens",
                thousands(missing)
            );
        }
        let _ = writeln!(out);
        if !estimated.is_empty() {
            let errors: Vec<f64> = estimated
                .iter()
                .filter_map(|s| s.counting.estimate_error)
                .collect();
            let error = errors
                .iter()
                .copied()
                .fold(None, |w: Option<f64>, e| Some(w.map_or(e, |w| w.max(e))));
            let calibrated_on = estimated
                .iter()
                .map(|s| s.billing.calibration.sessions)
                .max()
                .unwrap_or(0);
            let _ = writeln!(
                out,
                "        {} session(s) estimated (no reading: a ratio and head calibrated on {calibrated_on} anchored session(s)); {}",
                estimated.len(),
                match error {
                    Some(error) => format!(
                        "their tokens and dollars may be off by up to ±{:.0} % (the calibration's worst error on an anchored session left out of it)",
                        100.0 * error
                    ),
                    None => "their error is unknown (fewer than two anchored sessions to check the calibration on)".to_string(),
                }
            );
        }
        let untimed = self.sessions.iter().filter(|s| !s.counting.timed).count();
        if untimed > 0 {
            let _ = writeln!(
                out,
                "        {untimed} session(s) record no call times: the cache's 5-minute lifetime is not modelled for them"
            );
        }
        out
    }
}

/// The line under a session's heading: its counts against the provider's readings, or how
/// they were estimated.
pub(super) fn session_counting(session: &SessionResult) -> String {
    let counting = &session.counting;
    let mut out = String::new();
    let raw = session.figures.first().map(|(_, figures)| figures);
    if session.estimated {
        let calibration = &session.billing.calibration;
        let _ = write!(
            out,
            "  estimated: no provider reading; {:.2} bytes a token and a {}-token head from {} anchored session(s)",
            calibration.bytes_per_token,
            thousands(session.head_tokens),
            calibration.sessions
        );
        match counting.estimate_error {
            Some(error) => {
                let _ = write!(out, ", error up to ±{:.0} %", 100.0 * error);
            }
            None => out.push_str(", error unknown"),
        }
    } else if let Some(raw) = raw {
        let recorded = raw.recorded_prompt_tokens;
        let _ = write!(
            out,
            "  anchored: raw replay {} prompt tokens against {} recorded ({:+.1} %)",
            thousands(raw.counted_prompt_tokens),
            thousands(recorded),
            if recorded > 0 {
                (raw.counted_prompt_tokens as f64 - recorded as f64) / recorded as f64 * 100.0
            } else {
                0.0
            }
        );
        if let (Some(cost), Some(recorded_cost)) = (raw.cost_on_recorded_usd, raw.recorded_cost_usd)
        {
            if recorded_cost > 0.0 {
                let _ = write!(
                    out,
                    ", ${cost:.4} against ${recorded_cost:.4} from the recorded usage ({:+.1} %)",
                    (cost - recorded_cost) / recorded_cost * 100.0
                );
            }
        }
        if counting.missing_spans > 0 {
            let _ = write!(
                out,
                "; {} tool result(s) missing from the recording, {} tokens",
                counting.missing_spans,
                thousands(counting.missing_tokens)
            );
        }
    }
    if !counting.timed {
        out.push_str("; no call times (cache expiry not modelled)");
    } else if let Some(raw) = raw {
        if raw.cache_expiries > 0 {
            let _ = write!(out, "; the cache lapsed {} time(s)", raw.cache_expiries);
        }
    }
    out.push('\n');
    out
}
