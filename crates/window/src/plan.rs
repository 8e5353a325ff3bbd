//! What a visit returns: an edit of the window described by index ranges (so planning never
//! copies the conversation), plus the record and the side facts the caller may act on.

use std::ops::Range;

use serde::Serialize;

use crate::record::{BudgetPressure, Eviction, FoldedSpan, Spend, WindowRecord};

/// One tool result whose content is replaced in place (masking).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentReplacement {
    /// The message index in the pre-change window.
    pub index: usize,
    /// The new content.
    pub content: String,
}

/// How the window changes. The kept window is `[..removed.start]`, then the inserted note if
/// any, then `[removed.end..]`, with the replacements applied. Removal is one contiguous span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowEdit {
    /// The removed messages, as indices in the pre-change window. May be empty.
    pub removed: Range<usize>,
    /// The content of the user-role note the stage puts where the span was (a drop notice or a
    /// summary frame).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<String>,
    /// The visit's clock value, the birth time of the inserted note.
    pub inserted_at_ms: u64,
    /// Content replacements outside the removed span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<ContentReplacement>,
}

impl WindowEdit {
    /// An edit that only swaps contents (masking): nothing removed, nothing inserted.
    pub fn replacements_only(replaced: Vec<ContentReplacement>, at_ms: u64) -> Self {
        Self {
            removed: 0..0,
            inserted: None,
            inserted_at_ms: at_ms,
            replaced,
        }
    }
}

impl WindowEdit {
    /// An edit that removes `removed` and inserts nothing.
    pub fn remove(removed: Range<usize>, at_ms: u64) -> Self {
        Self {
            removed,
            inserted: None,
            inserted_at_ms: at_ms,
            replaced: Vec::new(),
        }
    }
}

/// The result of an engaged visit (W11).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowPlan<M> {
    /// The change to the window; `None` leaves it as it is.
    pub edit: Option<WindowEdit>,
    /// The record, always present: an engaged visit always explains itself.
    pub record: WindowRecord,
    /// One entry per message that left.
    pub evictions: Vec<Eviction>,
    /// Spans folded into a summary (summarizing strategies only).
    pub folded: Vec<FoldedSpan<M>>,
    /// Budget pressure, from strategies with a token budget.
    pub budget_pressure: Option<BudgetPressure>,
    /// A paid call made for the plan: the summary the caller obtained for the strategy.
    pub spend: Option<Spend>,
    /// A developer warning; the stage passes the first one on once per
    /// [`crate::StageMemory`].
    pub warning: Option<String>,
}

impl<M> WindowPlan<M> {
    /// A plan that changes nothing and files `record`.
    pub fn unchanged(record: WindowRecord) -> Self {
        Self {
            edit: None,
            record,
            evictions: Vec::new(),
            folded: Vec::new(),
            budget_pressure: None,
            spend: None,
            warning: None,
        }
    }

    /// The kept window's message indices (pre-change), in order, not counting an inserted
    /// note.
    pub fn kept_indices(&self, len: usize) -> Vec<usize> {
        match &self.edit {
            None => (0..len).collect(),
            Some(edit) => (0..edit.removed.start.min(len))
                .chain(edit.removed.end.min(len)..len)
                .collect(),
        }
    }
}
