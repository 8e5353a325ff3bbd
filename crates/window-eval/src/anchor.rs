//! Token counts anchored on what the provider recorded.
//!
//! A replay bills blocks of tokens. How many tokens a recorded message is worth is not in the
//! recording; what is there, in formats that keep usage, is the provider's count of each whole
//! prompt (its *reading*). This module turns readings into per-message counts, the way the
//! context meter does: a reading first, then a ratio learned from earlier readings, then a
//! table.
//!
//! ## With readings (anchored)
//! - **Head** (system prompt and tool definitions, which most recordings lack): the first
//!   reading minus the messages that call sent, counted at the table's ratio.
//! - **Bytes per token**, learned per session from earlier calls only: after call `k` the
//!   ratio is `(Σ bytes + PRIOR_WEIGHT × table) / (Σ tokens + PRIOR_WEIGHT)` over the
//!   *clean* jumps so far — a jump between consecutive readings whose new messages are all
//!   recorded in full — where a jump's bytes are its new messages' bytes and its tokens are
//!   the difference of the two readings. A message is counted at the ratio in force when it
//!   entered the history, so no count looks ahead.
//! - **Spans the recording lacks** (a tool result the agent received but the recording did
//!   not keep, marked by the reader as a placeholder): sized from the jump that holds them —
//!   the jump minus what the recorded new messages count at the current ratio, shared evenly
//!   among the jump's placeholders, never below zero. A placeholder is a message like any
//!   other, so a strategy can remove or mask it.
//! - **Output**: the calls' own output counts; where the run's final usage is recorded, they
//!   are scaled so that they add up to it (stream-json's per-call events carry partial
//!   counts).
//!
//! ## Without readings (estimated)
//! The ratio and head come from a [`Calibration`] made on the sessions that have readings
//! (per provider family, pooled when a family has none), and the session is marked estimated
//! with the calibration's error: the largest relative error of the raw prompt total that the
//! calibration made on an anchored session it was not drawn from (leave one out). Without any
//! anchored session, the table's ratio and no head are used, and the error is unknown.
//!
//! Pure: the caller passes the recording; nothing here reads a file or a clock.

use panewise_window::{Message, Role};
use serde::Serialize;

use crate::recording::{Family, Recording};

/// The table's bytes per token, used before any reading has taught a session its own: the
/// middle of what Claude's counts gave on recorded content (2.7–4.0).
pub const TABLE_BYTES_PER_TOKEN: f64 = 3.4;

/// The fewest bytes a token is taken to hold when a jump's share gives a message its ratio.
pub const MIN_BYTES_PER_TOKEN: f64 = 1.0;

/// The most bytes a token is taken to hold, likewise.
pub const MAX_BYTES_PER_TOKEN: f64 = 8.0;

/// The fewest readings a session needs to teach a calibration: a session of one or two calls
/// has no clean jump to learn a ratio from, and its head is whatever its first call carried.
pub const MIN_LESSON_READINGS: u64 = 5;

/// How many tokens' worth of weight the table's ratio keeps against the learned one.
pub const PRIOR_WEIGHT: f64 = 2_000.0;

/// The content of a placeholder the replay fills: a marker line, padded so that the window
/// stage's own counter (bytes over 4) sees the span's size too.
pub fn placeholder_content(tokens: u64) -> String {
    let marker =
        format!("[tool result not in the recording: about {tokens} tokens, sized from the provider's readings]");
    let bytes = usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX / 2);
    let pad = bytes.saturating_sub(marker.len());
    let mut content = String::with_capacity(marker.len() + pad);
    content.push_str(&marker);
    content.extend(std::iter::repeat_n(' ', pad));
    content
}

/// The bytes a message is billed for: its content and its tool calls' names and arguments.
pub fn message_bytes(message: &Message) -> u64 {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| call.name.len() + call.args.len())
        .sum();
    (message.content.len() + calls) as u64
}

/// `bytes` counted at `ratio` bytes a token, rounded up; at least 1 for any byte.
pub fn tokens_at(bytes: u64, ratio: f64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let tokens = (bytes as f64 / ratio).ceil();
    if tokens.is_finite() && tokens >= 1.0 {
        tokens as u64
    } else {
        1
    }
}

/// The ratio and head a session without readings is counted with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// Bytes per token.
    pub bytes_per_token: f64,
    /// Tokens of the head every request carries.
    pub head_tokens: u64,
    /// The largest relative error (0.12 = ±12 %) of a raw prompt total this calibration made
    /// on an anchored session left out of it; `None` when fewer than two sessions could be
    /// checked.
    pub error: Option<f64>,
    /// How many anchored sessions it was made from.
    pub sessions: usize,
}

impl Calibration {
    /// The table's ratio and no head: what is used when no session has readings.
    pub fn table() -> Self {
        Self {
            bytes_per_token: TABLE_BYTES_PER_TOKEN,
            head_tokens: 0,
            error: None,
            sessions: 0,
        }
    }
}

/// What an anchored session teaches a calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lesson {
    /// The provider family.
    pub family: Option<Family>,
    /// Bytes over the clean jumps.
    pub bytes: u64,
    /// Tokens over the same jumps.
    pub tokens: u64,
    /// The head the first reading gave.
    pub head_tokens: u64,
    /// Bytes of every message each call sent, summed over the calls with a reading, and the
    /// number of those calls, for checking a calibration against this session.
    pub sent_bytes: u64,
    /// The calls with a reading.
    pub read_calls: u64,
    /// The recorded prompt tokens over those calls.
    pub recorded_prompt: u64,
}

/// The per-message counts of one recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchoring {
    /// Tokens of each message of the recording, as billed.
    pub message_tokens: Vec<u64>,
    /// The ratio each message was counted at (masked replacements of it are counted at it too).
    pub message_ratio: Vec<f64>,
    /// The head's tokens.
    pub head_tokens: u64,
    /// Output tokens of each call.
    pub output_tokens: Vec<u64>,
    /// The placeholders sized: (message index, tokens).
    pub missing: Vec<(usize, u64)>,
    /// The ratio in force after the last call.
    pub bytes_per_token: f64,
    /// True when no reading anchors the counts.
    pub estimated: bool,
    /// The relative error of the counts when estimated (the calibration's), `None` when
    /// anchored or unknown.
    pub error: Option<f64>,
    /// What an anchored session teaches a calibration; `None` when estimated.
    pub lesson: Option<Lesson>,
}

impl Anchoring {
    /// The tokens of the missing spans, summed.
    pub fn missing_tokens(&self) -> u64 {
        self.missing.iter().map(|(_, tokens)| tokens).sum()
    }
}

/// Anchors `recording`: on its readings when it has any, else on `calibration`.
/// `missing` lists the placeholders the reader inserted (message indices), `total_output`
/// the run's final output count when recorded.
pub fn anchor(
    recording: &Recording,
    missing: &[usize],
    total_output: Option<u64>,
    calibration: &Calibration,
) -> Anchoring {
    let messages = &recording.messages;
    let bytes: Vec<u64> = messages.iter().map(message_bytes).collect();
    let is_missing = |index: usize| missing.binary_search(&index).is_ok();
    let has_readings = recording.calls.iter().any(|call| call.usage.is_some());
    let mut message_tokens = vec![0u64; messages.len()];
    let mut message_ratio = vec![TABLE_BYTES_PER_TOKEN; messages.len()];
    let mut sized = Vec::new();

    if !has_readings {
        let ratio = calibration.bytes_per_token;
        for (index, size) in bytes.iter().enumerate() {
            message_tokens[index] = tokens_at(*size, ratio);
            message_ratio[index] = ratio;
        }
        let output_tokens = answer_outputs(recording, &message_tokens);
        return Anchoring {
            message_tokens,
            message_ratio,
            head_tokens: calibration.head_tokens,
            output_tokens,
            missing: missing.iter().map(|&index| (index, 0)).collect(),
            bytes_per_token: ratio,
            estimated: true,
            error: calibration.error,
            lesson: None,
        };
    }

    let (mut learned_bytes, mut learned_tokens) = (0u64, 0u64);
    let ratio_now = |learned_bytes: u64, learned_tokens: u64| {
        (learned_bytes as f64 + PRIOR_WEIGHT * TABLE_BYTES_PER_TOKEN)
            / (learned_tokens as f64 + PRIOR_WEIGHT)
    };
    let mut counted_upto = 0usize;
    let mut previous: Option<(usize, u64)> = None; // (sent, reading) of the last call with one
    let mut head_tokens = None;
    for call in &recording.calls {
        let sent = call.sent.min(messages.len());
        let ratio = ratio_now(learned_bytes, learned_tokens);
        let new = counted_upto..sent.max(counted_upto);
        for index in new.clone() {
            message_ratio[index] = ratio;
            message_tokens[index] = if is_missing(index) {
                0
            } else {
                tokens_at(bytes[index], ratio)
            };
        }
        counted_upto = counted_upto.max(sent);
        let Some(usage) = call.usage else {
            continue;
        };
        let reading = usage.prompt();
        match (head_tokens, previous) {
            (None, _) => {
                let sent_tokens: u64 = message_tokens[..sent].iter().sum();
                head_tokens = Some(reading.saturating_sub(sent_tokens));
            }
            (Some(_), Some((previous_sent, previous_reading))) if sent >= previous_sent => {
                let span = previous_sent..sent;
                let jump = reading.saturating_sub(previous_reading);
                let holes: Vec<usize> = span.clone().filter(|&i| is_missing(i)).collect();
                let known: u64 = span.clone().map(|i| message_tokens[i]).sum();
                if holes.is_empty() {
                    // A clean jump: the reading says what the new messages weigh, so they
                    // share it by their bytes, and it teaches the ratio. Only when it grew:
                    // a prompt that shrank was edited by the agent, not extended.
                    if reading > previous_reading {
                        let span_bytes: u64 = span.clone().map(|i| bytes[i]).sum();
                        share_by_bytes(&mut message_tokens, &bytes, span.clone(), jump);
                        for index in span.clone() {
                            if message_tokens[index] > 0 && bytes[index] > 0 {
                                message_ratio[index] = (bytes[index] as f64
                                    / message_tokens[index] as f64)
                                    .clamp(MIN_BYTES_PER_TOKEN, MAX_BYTES_PER_TOKEN);
                            }
                        }
                        learned_bytes = learned_bytes.saturating_add(span_bytes);
                        learned_tokens = learned_tokens.saturating_add(jump);
                    }
                } else {
                    let gap = jump.saturating_sub(known);
                    let share = gap / holes.len() as u64;
                    let mut rest = gap - share * holes.len() as u64;
                    for hole in holes {
                        let extra = u64::from(rest > 0);
                        rest = rest.saturating_sub(extra);
                        message_tokens[hole] = share + extra;
                        sized.push((hole, share + extra));
                    }
                }
            }
            _ => {}
        }
        previous = Some((sent, reading));
    }
    // Messages after the last call (the final answer) are counted at the last ratio.
    let ratio = ratio_now(learned_bytes, learned_tokens);
    for index in counted_upto..messages.len() {
        message_ratio[index] = ratio;
        message_tokens[index] = if is_missing(index) {
            0
        } else {
            tokens_at(bytes[index], ratio)
        };
    }
    for &index in missing {
        if !sized.iter().any(|(hole, _)| *hole == index) {
            sized.push((index, message_tokens.get(index).copied().unwrap_or(0)));
        }
    }
    sized.sort_unstable();

    let mut output_tokens: Vec<u64> = recording
        .calls
        .iter()
        .map(|call| call.usage.map_or(0, |usage| usage.output))
        .collect();
    let answered = answer_outputs(recording, &message_tokens);
    for (output, counted) in output_tokens.iter_mut().zip(&answered) {
        if *output == 0 {
            *output = *counted;
        }
    }
    if let Some(total) = total_output {
        scale_to(&mut output_tokens, total);
    }

    let head = head_tokens.unwrap_or(0);
    let (mut sent_bytes, mut read_calls, mut recorded_prompt) = (0u64, 0u64, 0u64);
    for call in &recording.calls {
        if let Some(usage) = call.usage {
            let sent = call.sent.min(messages.len());
            sent_bytes = sent_bytes.saturating_add(
                (0..sent)
                    .filter(|&i| !is_missing(i))
                    .map(|i| bytes[i])
                    .sum::<u64>(),
            );
            read_calls += 1;
            recorded_prompt = recorded_prompt.saturating_add(usage.prompt());
        }
    }
    Anchoring {
        message_tokens,
        message_ratio,
        head_tokens: head,
        output_tokens,
        missing: sized,
        bytes_per_token: ratio,
        estimated: false,
        error: None,
        lesson: Some(Lesson {
            family: recording.family,
            bytes: learned_bytes,
            tokens: learned_tokens,
            head_tokens: head,
            sent_bytes,
            read_calls,
            recorded_prompt,
        }),
    }
}

/// Shares `tokens` among the messages of `span` by their bytes (largest remainder); a span of
/// no bytes gives them all to its last message.
fn share_by_bytes(
    message_tokens: &mut [u64],
    bytes: &[u64],
    span: std::ops::Range<usize>,
    tokens: u64,
) {
    let Some(slots) = message_tokens.get_mut(span.clone()) else {
        return;
    };
    let Some(weights) = bytes.get(span) else {
        return;
    };
    let mut shares = weights.to_vec();
    if shares.iter().all(|&b| b == 0) {
        if let Some(last) = shares.last_mut() {
            *last = 1;
        }
    }
    scale_to(&mut shares, tokens);
    slots.copy_from_slice(&shares);
}

/// Each call's output counted from its answer's messages.
fn answer_outputs(recording: &Recording, message_tokens: &[u64]) -> Vec<u64> {
    let calls = &recording.calls;
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let end = calls
                .get(index + 1)
                .map_or(recording.messages.len(), |next| next.sent);
            (call.sent..end.max(call.sent))
                .filter(|&i| {
                    recording
                        .messages
                        .get(i)
                        .is_some_and(|m| m.role == Role::Assistant)
                })
                .map(|i| message_tokens.get(i).copied().unwrap_or(0))
                .sum()
        })
        .collect()
}

/// Scales `values` so they add up to `total`, keeping their proportions (largest remainder);
/// all-zero values get the total spread evenly.
fn scale_to(values: &mut [u64], total: u64) {
    if values.is_empty() {
        return;
    }
    let sum: u64 = values.iter().sum();
    if sum == total {
        return;
    }
    let weights: Vec<f64> = if sum == 0 {
        vec![1.0; values.len()]
    } else {
        values.iter().map(|&v| v as f64).collect()
    };
    let weight_sum: f64 = weights.iter().sum();
    let mut assigned = 0u64;
    let mut remainders = Vec::with_capacity(values.len());
    for (index, weight) in weights.iter().enumerate() {
        let exact = total as f64 * weight / weight_sum;
        let floor = exact.floor();
        values[index] = floor as u64;
        assigned = assigned.saturating_add(floor as u64);
        remainders.push((exact - floor, index));
    }
    remainders.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut left = total.saturating_sub(assigned);
    for (_, index) in remainders {
        if left == 0 {
            break;
        }
        values[index] += 1;
        left -= 1;
    }
}

/// What the recordings with provider readings teach: one lesson each, from anchoring it
/// alone (a recording without readings teaches nothing).
pub fn lessons<'r>(recordings: impl IntoIterator<Item = &'r Recording>) -> Vec<Lesson> {
    recordings
        .into_iter()
        .filter(|recording| recording.calls.iter().any(|call| call.usage.is_some()))
        .filter_map(|recording| {
            let total_output = recording.recorded_total.as_ref().map(|t| t.usage.output);
            anchor(
                recording,
                &recording.missing_results,
                total_output,
                &Calibration::table(),
            )
            .lesson
        })
        .collect()
}

/// The calibration for a session of `family` without readings, made from the `lessons` of
/// the anchored sessions of at least [`MIN_LESSON_READINGS`] readings: the family's own when
/// it has any, else all of them.
pub fn calibrate(lessons: &[Lesson], family: Option<Family>) -> Calibration {
    let lessons: Vec<&Lesson> = lessons
        .iter()
        .filter(|lesson| lesson.read_calls >= MIN_LESSON_READINGS)
        .collect();
    let own: Vec<&Lesson> = lessons
        .iter()
        .copied()
        .filter(|lesson| family.is_some() && lesson.family == family)
        .collect();
    let pool: Vec<&Lesson> = if own.is_empty() { lessons } else { own };
    let Some(fitted) = fit(&pool) else {
        return Calibration::table();
    };
    // Leave one out: each session estimated by a calibration that did not see it.
    let mut worst: Option<f64> = None;
    if pool.len() >= 2 {
        for (left_out, lesson) in pool.iter().enumerate() {
            let rest: Vec<&Lesson> = pool
                .iter()
                .enumerate()
                .filter(|(index, _)| *index != left_out)
                .map(|(_, lesson)| *lesson)
                .collect();
            let Some(other) = fit(&rest) else { continue };
            if lesson.recorded_prompt == 0 {
                continue;
            }
            let estimate = lesson.sent_bytes as f64 / other.bytes_per_token
                + (lesson.read_calls * other.head_tokens) as f64;
            let error =
                (estimate - lesson.recorded_prompt as f64).abs() / lesson.recorded_prompt as f64;
            worst = Some(worst.map_or(error, |w: f64| w.max(error)));
        }
    }
    Calibration {
        error: worst,
        ..fitted
    }
}

/// The pooled ratio and the median head of `lessons`.
fn fit(lessons: &[&Lesson]) -> Option<Calibration> {
    let bytes: u64 = lessons.iter().map(|l| l.bytes).sum();
    let tokens: u64 = lessons.iter().map(|l| l.tokens).sum();
    if lessons.is_empty() || tokens == 0 {
        return None;
    }
    let mut heads: Vec<u64> = lessons.iter().map(|l| l.head_tokens).collect();
    heads.sort_unstable();
    let head = if heads.len() % 2 == 1 {
        heads[heads.len() / 2]
    } else {
        (heads[heads.len() / 2 - 1] + heads[heads.len() / 2]) / 2
    };
    Some(Calibration {
        bytes_per_token: bytes as f64 / tokens as f64,
        head_tokens: head,
        error: None,
        sessions: lessons.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{Format, ModelCall, RecordedUsage};

    fn call(sent: usize, usage: Option<RecordedUsage>) -> ModelCall {
        ModelCall {
            sent,
            usage,
            at_ms: None,
        }
    }

    fn reading(prompt: u64) -> Option<RecordedUsage> {
        Some(RecordedUsage {
            input: prompt,
            cache_read: 0,
            cache_write: 0,
            output: 10,
        })
    }

    /// user(400 B), then three call/result rounds whose results are 3,400 B each (1,000
    /// tokens at 3.4 B/token), readings consistent with 3.4 B/token and a 5,000-token head.
    fn session(missing_second: bool) -> (Recording, Vec<usize>) {
        let mut rec = Recording::new(Format::WindowConversation);
        let body = "x".repeat(3_400);
        rec.messages = vec![
            Message::user("u".repeat(340)),
            Message::assistant_calls("", &[("a", "t", "{}")]),
            Message::tool_result("a", body.clone()),
            Message::assistant_calls("", &[("b", "t", "{}")]),
            Message::tool_result(
                "b",
                if missing_second {
                    String::new()
                } else {
                    body.clone()
                },
            ),
            Message::assistant_calls("", &[("c", "t", "{}")]),
            Message::tool_result("c", body),
            Message::assistant("done"),
        ];
        let call_bytes = 3.0; // "t" + "{}"
        let call_tokens = (call_bytes / 3.4_f64).ceil() as u64;
        let r0 = 5_000 + 100;
        let r1 = r0 + call_tokens + 1_000;
        let r2 = r1 + call_tokens + 1_000;
        let r3 = r2 + call_tokens + 1_000;
        rec.calls = vec![
            call(1, reading(r0)),
            call(3, reading(r1)),
            call(5, reading(r2)),
            call(7, reading(r3)),
        ];
        let missing = if missing_second { vec![4] } else { vec![] };
        (rec, missing)
    }

    #[test]
    fn a_span_missing_from_the_recording_is_sized_from_the_readings() {
        let (rec, missing) = session(true);
        let anchored = anchor(&rec, &missing, None, &Calibration::table());
        assert_eq!(anchored.head_tokens, 5_000);
        assert_eq!(anchored.missing.len(), 1);
        let (index, tokens) = anchored.missing[0];
        assert_eq!(index, 4);
        assert!((990..=1_010).contains(&tokens), "sized {tokens}");
        assert!(!anchored.estimated);
    }

    #[test]
    fn counts_reproduce_consistent_readings() {
        let (rec, missing) = session(false);
        let anchored = anchor(&rec, &missing, None, &Calibration::table());
        for call in &rec.calls {
            let counted: u64 =
                anchored.head_tokens + anchored.message_tokens[..call.sent].iter().sum::<u64>();
            let recorded = call.usage.map(|u| u.prompt()).unwrap_or(0);
            let off = counted.abs_diff(recorded) as f64 / recorded as f64;
            assert!(off < 0.01, "call at {}: {counted} vs {recorded}", call.sent);
        }
    }

    #[test]
    fn clean_jumps_are_shared_by_bytes_and_teach_the_ratio_used_for_later_holes() {
        // Readings at 2 bytes a token; the last round's result is missing from the recording.
        let mut rec = Recording::new(Format::WindowConversation);
        let body = "x".repeat(20_000);
        rec.messages = vec![Message::user("go")];
        let mut reading_now = 1_000u64;
        rec.calls.push(call(1, reading(reading_now)));
        let mut missing = Vec::new();
        for round in 0..4 {
            let id = format!("c{round}");
            rec.messages.push(Message::assistant_calls(
                "a".repeat(1_998),
                &[(&id, "t", "{}")],
            ));
            if round == 3 {
                missing.push(rec.messages.len());
                rec.messages.push(Message::tool_result(id, String::new()));
            } else {
                rec.messages.push(Message::tool_result(id, body.clone()));
            }
            reading_now += 11_000;
            rec.calls
                .push(call(rec.messages.len(), reading(reading_now)));
        }
        let anchored = anchor(&rec, &missing, None, &Calibration::table());
        // A clean round: 11,000 tokens over 2,001 + 20,000 bytes, split by bytes.
        assert_eq!(anchored.message_tokens[1], 1_000);
        assert_eq!(anchored.message_tokens[2], 10_000);
        // The ratio learned before the last round is 2 bytes a token (with the table's weight).
        let learned = (66_003.0 + PRIOR_WEIGHT * TABLE_BYTES_PER_TOKEN) / (33_000.0 + PRIOR_WEIGHT);
        assert!((anchored.message_ratio[7] - learned).abs() < 1e-9);
        // So the hole is the jump less the assistant message at that ratio.
        let known = (2_001.0 / learned).ceil() as u64;
        assert_eq!(anchored.missing, vec![(8, 11_000 - known)]);
    }

    #[test]
    fn the_first_call_counts_at_the_table_ratio() {
        let (rec, missing) = session(false);
        let anchored = anchor(&rec, &missing, None, &Calibration::table());
        assert!((anchored.message_ratio[0] - TABLE_BYTES_PER_TOKEN).abs() < 1e-9);
        assert_eq!(anchored.message_tokens[0], 100);
    }

    #[test]
    fn output_is_scaled_to_the_final_usage() {
        let (rec, missing) = session(false);
        let anchored = anchor(&rec, &missing, Some(400), &Calibration::table());
        assert_eq!(anchored.output_tokens.iter().sum::<u64>(), 400);
        assert_eq!(anchored.output_tokens, vec![100, 100, 100, 100]);
    }

    #[test]
    fn without_readings_the_session_is_estimated_with_the_calibration_error() {
        let (mut rec, missing) = session(false);
        for call in &mut rec.calls {
            call.usage = None;
        }
        let calibration = Calibration {
            bytes_per_token: 2.0,
            head_tokens: 7_000,
            error: Some(0.08),
            sessions: 3,
        };
        let anchored = anchor(&rec, &missing, None, &calibration);
        assert!(anchored.estimated);
        assert_eq!(anchored.error, Some(0.08));
        assert_eq!(anchored.head_tokens, 7_000);
        assert_eq!(anchored.message_tokens[2], 1_700);
    }

    #[test]
    fn calibration_pools_ratios_and_checks_each_session_left_out() {
        let lesson = |bytes, tokens, head, sent_bytes, calls, recorded| Lesson {
            family: Some(Family::Anthropic),
            bytes,
            tokens,
            head_tokens: head,
            sent_bytes,
            read_calls: calls,
            recorded_prompt: recorded,
        };
        let lessons = [
            lesson(30_000, 10_000, 16_000, 300_000, 10, 260_000),
            lesson(30_000, 10_000, 18_000, 300_000, 10, 280_000),
            lesson(30_000, 10_000, 20_000, 300_000, 10, 300_000),
        ];
        let calibration = calibrate(&lessons, Some(Family::Anthropic));
        assert!((calibration.bytes_per_token - 3.0).abs() < 1e-9);
        assert_eq!(calibration.head_tokens, 18_000);
        assert_eq!(calibration.sessions, 3);
        // Left out the first: heads 18k/20k → 19k; 100k + 190k = 290k vs 260k: +11.5 %.
        let error = calibration.error.unwrap_or(0.0);
        assert!((error - 30_000.0 / 260_000.0).abs() < 1e-9, "{error}");
        assert_eq!(calibrate(&[], None), Calibration::table());
        // A session of two readings teaches nothing.
        let short = [lesson(300, 100, 5_000, 3_000, 2, 12_000)];
        assert_eq!(
            calibrate(&short, Some(Family::Anthropic)),
            Calibration::table()
        );
    }

    #[test]
    fn a_placeholder_is_as_large_to_the_stage_as_to_the_bill() {
        let content = placeholder_content(1_000);
        assert_eq!(content.len(), 4_000);
        assert!(content.starts_with("[tool result not in the recording"));
    }
}
