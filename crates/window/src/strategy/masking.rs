//! `observation-masking`: replace tool results older than the last M with a short placeholder
//! that names the tool. Nothing leaves the window, so no call loses its result, and the model
//! still sees which tool ran and can call it again.
//!
//! It is the local twin of Anthropic's `clear_tool_uses` (W86): it takes the same settings
//! under the same names where they mean the same thing — `keepToolUses` (an alias of
//! `keepRecentObservations`), `clearAtLeastTokens`, `triggerTokens`, and `excludeTools`
//! (every local strategy's, [`crate::PinSettings::exclude_tools`]).
//!
//! This is the strategy the published comparison of observation masking and LLM summarisation
//! for software-engineering agents measured as cheapest at an equal solve rate.

use super::{fresh_reading, Planned, WindowStrategy, DEFAULT_KEEP_RECENT_OBSERVATIONS};
use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::notice::masked_placeholder;
use crate::plan::{ContentReplacement, WindowEdit, WindowPlan};
use crate::record::{MaskingRecord, RecordDetail};
use crate::span_cache::Placeholder;
use crate::visit::Visit;

/// Masks every tool result older than the newest `keep_recent_observations`, except the
/// results of excluded tools; optionally only once a reading reaches `trigger_tokens`, and
/// only when the masks save at least `clear_at_least_tokens`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservationMasking {
    keep_recent_observations: usize,
    clear_at_least_tokens: Option<u64>,
    trigger_tokens: Option<u64>,
}

impl Default for ObservationMasking {
    fn default() -> Self {
        Self::new(DEFAULT_KEEP_RECENT_OBSERVATIONS)
    }
}

impl ObservationMasking {
    /// The strategy's name in records.
    pub const NAME: &'static str = "observation-masking";

    /// Keeps the newest `keep_recent_observations` tool results as they are.
    pub fn new(keep_recent_observations: usize) -> Self {
        Self {
            keep_recent_observations,
            clear_at_least_tokens: None,
            trigger_tokens: None,
        }
    }

    /// The same strategy masking nothing on a visit whose masks would save fewer than
    /// `tokens` tokens, counted locally (`clearAtLeastTokens`, W88).
    pub fn with_clear_at_least_tokens(mut self, tokens: Option<u64>) -> Self {
        self.clear_at_least_tokens = tokens;
        self
    }

    /// The same strategy engaging only once a fresh reading, plus the tokens counted since,
    /// reaches `tokens` (`triggerTokens`, W88); `None` engages on every visit.
    pub fn with_trigger_tokens(mut self, tokens: Option<u64>) -> Self {
        self.trigger_tokens = tokens;
        self
    }
}

/// Whether `tool`'s results are excluded from masking (W87); a newly excluded tool is noted
/// once in `excluded_tools`.
fn excluded<M: WindowMessage>(
    visit: &Visit<'_, M>,
    tool: Option<&str>,
    excluded_tools: &mut Vec<String>,
) -> bool {
    if !visit.pins().excludes(tool) {
        return false;
    }
    if let Some(name) = tool {
        if !excluded_tools.iter().any(|known| known == name) {
            excluded_tools.push(name.to_string());
        }
    }
    true
}

/// The masking half shared with `hybrid`.
pub(crate) struct Masks {
    pub(crate) replacements: Vec<ContentReplacement>,
    pub(crate) record: MaskingRecord,
    pub(crate) saved_chars: u64,
    pub(crate) saved_tokens: u64,
}

/// Plans the placeholders: O(log n) plus the number of results older than the kept ones.
/// A result of an excluded tool is left as it is (W87); when the placeholders would save
/// fewer than `clear_at_least` tokens, none is planned (W88).
pub(crate) fn plan_masks<M: WindowMessage>(
    visit: &Visit<'_, M>,
    keep_recent: usize,
    clear_at_least: Option<u64>,
) -> Masks {
    let conversation = visit.conversation();
    let mut replacements = Vec::new();
    let mut masked_tools: Vec<String> = Vec::new();
    let mut excluded_tools: Vec<String> = Vec::new();
    let (mut saved_chars, mut saved_tokens) = (0u64, 0u64);
    if let Some(minimum) = clear_at_least {
        // No placeholder saves more than the whole result: when even that falls short of the
        // minimum, none is planned, and no span is described or hashed to find it out (a
        // batched strategy would otherwise hash every pending result on every visit).
        let mut at_most = 0u64;
        for index in conversation.maskable_older_than(keep_recent) {
            let Some(meta) = conversation.meta(index) else {
                continue;
            };
            let tool = conversation.tool_name(meta.tool);
            if excluded(visit, tool, &mut excluded_tools) {
                continue;
            }
            at_most = at_most.saturating_add(meta.tokens);
        }
        if at_most < minimum {
            return Masks {
                record: MaskingRecord {
                    keep_recent_observations: keep_recent,
                    masked_message_count: 0,
                    masked_tools,
                    excluded_tools,
                    clear_at_least_tokens: Some(minimum),
                },
                replacements,
                saved_chars,
                saved_tokens,
            };
        }
        excluded_tools.clear();
    }
    for index in conversation.maskable_older_than(keep_recent) {
        let Some(meta) = conversation.meta(index) else {
            continue;
        };
        let tool = conversation.tool_name(meta.tool);
        if excluded(visit, tool, &mut excluded_tools) {
            continue;
        }
        // The ladder: the span's id and description, its bare id, the tool alone; the first
        // that is smaller than the result. Written the first time the result is masked, from
        // its archive facts, and kept by the run's memory: a later visit reads it rather than
        // hashing, describing and formatting again.
        let fitting = visit.placeholder(index, |span| {
            [(span, true), (span, false), (None, false)]
                .into_iter()
                .map(|(span, described)| masked_placeholder(tool, meta.chars, span, described))
                .map(|text| {
                    let chars = text.chars().count() as u64;
                    let tokens = conversation.count_tokens(&text);
                    Placeholder {
                        text,
                        chars,
                        tokens,
                    }
                })
                .find(|placeholder| placeholder.chars < meta.chars)
        });
        let Some(Placeholder {
            text: placeholder,
            chars: placeholder_chars,
            tokens: placeholder_tokens,
        }) = fitting
        else {
            continue;
        };
        if let Some(name) = tool {
            if !masked_tools.iter().any(|known| known == name) {
                masked_tools.push(name.to_string());
            }
        }
        saved_chars += meta.chars - placeholder_chars;
        saved_tokens += meta.tokens.saturating_sub(placeholder_tokens);
        replacements.push(ContentReplacement {
            index,
            content: placeholder,
        });
    }
    let short_of_minimum = clear_at_least.filter(|minimum| saved_tokens < *minimum);
    if short_of_minimum.is_some() {
        replacements.clear();
        masked_tools.clear();
        (saved_chars, saved_tokens) = (0, 0);
    }
    Masks {
        record: MaskingRecord {
            keep_recent_observations: keep_recent,
            masked_message_count: replacements.len(),
            masked_tools,
            excluded_tools,
            clear_at_least_tokens: short_of_minimum,
        },
        replacements,
        saved_chars,
        saved_tokens,
    }
}

impl<M: WindowMessage> WindowStrategy<M> for ObservationMasking {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn plan(&self, visit: &mut Visit<'_, M>) -> Result<Option<Planned<M>>, WindowError> {
        if let Some(trigger) = self.trigger_tokens {
            let Some((measured, since)) = fresh_reading(visit)? else {
                return Ok(None);
            };
            if measured.saturating_add(since) < trigger {
                return Ok(None);
            }
        }
        let masks = plan_masks(
            visit,
            self.keep_recent_observations,
            self.clear_at_least_tokens,
        );
        if masks.replacements.is_empty() {
            return Ok(None);
        }
        let mut record = visit.empty_record(Self::NAME);
        record.window_chars_after = record.window_chars_before - masks.saved_chars;
        record.detail = RecordDetail::Masking(masks.record);
        let mut plan = WindowPlan::unchanged(record);
        plan.edit = Some(WindowEdit::replacements_only(
            masks.replacements,
            visit.context().now_ms,
        ));
        Ok(Some(Planned::Ready(plan)))
    }
}
