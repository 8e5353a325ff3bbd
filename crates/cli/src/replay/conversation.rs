//! The conversation a session log recorded, as `panewise replay` prints it: one labelled
//! block per transcript line, every piece of session text with its control characters
//! escaped (the wording is `panewise_tui::wording`, shared with `attach` and the web page).

use panewise_pane_state::log::{LogHeader, TranscriptEntry, TranscriptLine};
use panewise_pane_state::State;
use panewise_providers::PriceTable;
use panewise_tui::wording::{entry_line, labelled};

use super::usage::{call_text, session_totals_text, totals_text, LoggedCall};

/// The header's facts, then the transcript, one block per line, each model call's usage under
/// the lines logged up to it, the calls' totals, then what the checkpoints said of the fold
/// (`checked`). A call's cost is priced with the built-in table; the calls' total is what the
/// agent reported when it reported one (the folded `state`'s), as every view shows it. The
/// model is the one the agent last reported, else the one asked for
/// ([`panewise_api::view::model_of`]).
pub fn conversation(
    header: Option<&LogHeader>,
    state: &State,
    transcript: &[TranscriptLine],
    calls: &[LoggedCall],
    checked: &str,
) -> String {
    let mut out = Block::default();
    if let Some(header) = header {
        // The provider as every view names it; the stream it was read from when that says
        // more (`codex, model gpt-5.5, channel codex-app-server`).
        let provider = panewise_host::launch::provider_of(header);
        let mut agent = provider.clone();
        if let Some(model) = panewise_api::view::model_of(state, header.model.as_deref()) {
            agent.push_str(&format!(", model {model}"));
        }
        if header.agent_id != provider {
            agent.push_str(&format!(", channel {}", header.agent_id));
        }
        out.line("session", &agent);
        if let Some(cwd) = &header.cwd {
            out.line("cwd", cwd);
        }
        out.line(
            "started",
            &crate::sessions_cmd::started_text(header.started_at_ms)
                .unwrap_or_else(|| "unknown".to_owned()),
        );
    }
    if transcript.is_empty() {
        out.line(
            "transcript",
            "none recorded (a log written before schema v3, or by `decode` without one); \
             --state shows the final state",
        );
    }
    let prices = PriceTable::built_in();
    // A call's usage goes where the log has it: under the transcript lines logged before it
    // (the own loop logs it when the call ends, after what it answered; Claude Code when the
    // answer starts, above it). An approval of the call's tool request may be logged just
    // before or just after the call's end, as the policy answers it, so it never splits the
    // call from its usage: the line stays in the same place whichever came first.
    let mut pending = calls.iter().peekable();
    for (index, line) in transcript.iter().enumerate() {
        if !is_approval(&line.entry) {
            while let Some(call) = pending.next_if(|call| call.after_lines <= index) {
                out.line("usage", &call_text(call, &prices));
            }
        }
        entry(&mut out, &line.entry);
    }
    for call in pending {
        out.line("usage", &call_text(call, &prices));
    }
    if !calls.is_empty() {
        let session = state
            .session_totals
            .as_ref()
            .and_then(|totals| totals.cost_usd.zip(totals.cost_source));
        out.line("calls", &totals_text(calls, &prices, session));
    } else if let Some(totals) = state
        .session_totals
        .as_ref()
        .filter(|totals| totals.input_tokens.is_some() || totals.output_tokens.is_some())
    {
        // No call of its own reported: the session's totals still say what every view shows.
        out.line("totals", &session_totals_text(totals));
    }
    out.line("checkpoint", checked);
    out.text
}

/// One transcript entry as `replay` prints it (`attach` prints each as it comes); the wording
/// is shared with the web page (`panewise_tui::wording`).
pub use panewise_tui::wording::entry_text;

fn entry(out: &mut Block, entry: &TranscriptEntry) {
    let (label, text) = entry_line(entry);
    out.line(label, &text);
}

/// Whether the entry is a tool request's approval or its answer.
fn is_approval(entry: &TranscriptEntry) -> bool {
    matches!(
        entry,
        TranscriptEntry::ApprovalRequested { .. }
            | TranscriptEntry::ApprovalAnswered { .. }
            | TranscriptEntry::ApprovalWithdrawn { .. }
    )
}

/// Text being built, one labelled block at a time.
#[derive(Default)]
struct Block {
    text: String,
}

impl Block {
    /// `label`, padded, then `text` with its controls escaped and its later lines indented
    /// under the first.
    fn line(&mut self, label: &str, text: &str) {
        self.text.push_str(&labelled(label, text));
    }
}
