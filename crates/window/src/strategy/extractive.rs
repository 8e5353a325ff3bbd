//! A summary that needs no model: it keeps the label and the opening characters of each
//! transcript line. It is a pure function of the request, so a caller can answer
//! `summarize-oldest` and `hybrid` offline (the `panewise window` command does) and the stage
//! can be exercised without a provider.

use super::{SummaryRequest, SummaryResponse};

/// Keeps, per message, its label and its first line cut to `chars_per_line` characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractiveSummarizer {
    chars_per_line: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        Self { chars_per_line: 80 }
    }
}

impl ExtractiveSummarizer {
    /// The model name to configure with it: the summary frame names its author honestly.
    pub const MODEL: &'static str = "extractive";

    /// Keeps `chars_per_line` characters of each message's first line.
    pub fn new(chars_per_line: usize) -> Self {
        Self { chars_per_line }
    }

    /// The summary of the span in `request`: one `- label: first line` entry per message, with
    /// ` …` where something was cut. It cannot fail and reports no usage.
    pub fn summarize(&self, request: SummaryRequest<'_>) -> SummaryResponse {
        let mut text = String::new();
        for line in request.lines() {
            let first_line = line.content.lines().next().unwrap_or("");
            let kept: String = first_line.chars().take(self.chars_per_line).collect();
            let cut = if kept.len() < first_line.len() || line.content.lines().nth(1).is_some() {
                " …"
            } else {
                ""
            };
            text.push_str(&format!("- {}: {kept}{cut}\n", line.label()));
        }
        SummaryResponse {
            text: text.trim_end().to_string(),
            usage: None,
        }
    }
}
