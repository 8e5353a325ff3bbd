//! `observation-masking`: replace tool results older than the last M with a short placeholder
//! that names the tool. Nothing leaves the window, so no call loses its result, and the model
//! still sees which tool ran and can call it again.
//!
//! This is the strategy the published comparison of observation masking and LLM summarisation
//! for software-engineering agents measured as cheapest at an equal solve rate.

use super::{Planned, WindowStrategy, DEFAULT_KEEP_RECENT_OBSERVATIONS};
use crate::archive::{span_of, Removal};
use crate::error::WindowError;
use crate::message::WindowMessage;
use crate::notice::masked_placeholder;
use crate::plan::{ContentReplacement, WindowEdit, WindowPlan};
use crate::record::{MaskingRecord, RecordDetail};
use crate::visit::Visit;

/// Masks every tool result older than the newest `keep_recent_observations`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservationMasking {
    keep_recent_observations: usize,
}

impl Default for ObservationMasking {
    fn default() -> Self {
        Self {
            keep_recent_observations: DEFAULT_KEEP_RECENT_OBSERVATIONS,
        }
    }
}

impl ObservationMasking {
    /// The strategy's name in records.
    pub const NAME: &'static str = "observation-masking";

    /// Keeps the newest `keep_recent_observations` tool results as they are.
    pub fn new(keep_recent_observations: usize) -> Self {
        Self {
            keep_recent_observations,
        }
    }
}

/// The masking half shared with `hybrid`.
pub(crate) struct Masks {
    pub(crate) replacements: Vec<ContentReplacement>,
    pub(crate) record: MaskingRecord,
    pub(crate) saved_chars: u64,
    pub(crate) saved_tokens: u64,
}

/// Plans the placeholders: O(log n) plus the number of results masked.
pub(crate) fn plan_masks<M: WindowMessage>(visit: &Visit<'_, M>, keep_recent: usize) -> Masks {
    let conversation = visit.conversation();
    let mut replacements = Vec::new();
    let mut masked_tools: Vec<String> = Vec::new();
    let (mut saved_chars, mut saved_tokens) = (0u64, 0u64);
    for index in conversation.maskable_older_than(keep_recent) {
        let Some(meta) = conversation.meta(index) else {
            continue;
        };
        let tool = conversation.tool_name(meta.tool);
        let span = span_of(
            conversation,
            index,
            Removal::Masked,
            visit.context().iteration,
        );
        // The ladder: the span's id and description, its bare id, the tool alone; the first
        // that is smaller than the result.
        let Some((placeholder, placeholder_chars)) = [
            masked_placeholder(tool, meta.chars, span.as_ref(), true),
            masked_placeholder(tool, meta.chars, span.as_ref(), false),
            masked_placeholder(tool, meta.chars, None, false),
        ]
        .into_iter()
        .map(|text| {
            let chars = text.chars().count() as u64;
            (text, chars)
        })
        .find(|(_, chars)| *chars < meta.chars) else {
            continue;
        };
        if let Some(name) = tool {
            if !masked_tools.iter().any(|known| known == name) {
                masked_tools.push(name.to_string());
            }
        }
        saved_chars += meta.chars - placeholder_chars;
        saved_tokens += meta
            .tokens
            .saturating_sub(conversation.count_tokens(&placeholder));
        replacements.push(ContentReplacement {
            index,
            content: placeholder,
        });
    }
    Masks {
        record: MaskingRecord {
            keep_recent_observations: keep_recent,
            masked_message_count: replacements.len(),
            masked_tools,
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
        let masks = plan_masks(visit, self.keep_recent_observations);
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
