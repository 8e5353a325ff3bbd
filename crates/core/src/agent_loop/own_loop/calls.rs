//! The own loop's free functions over a call: the provider's context edits filed in the
//! ledger, a call id kept unique, a call's error as a failure event, an MCP server's failure
//! said. Pure, as the loop is.

use super::*;

/// The provider's edits to the context of the call under way: each filed in the ledger as the
/// provider's, with the local estimate of what it removed (counted over the history the call
/// was sent), and a compaction kept for the conversation. A compaction's own model call is
/// billed apart from the answer's usage, so it is emitted as a call of its own. The tool
/// results a `clear_tool_uses` edit cleared come back to be archived (W77).
pub(super) fn provider_edits(
    config: &LoopConfig,
    sent: &panewise_window::Conversation<Message>,
    iteration: u32,
    edits: &[AppliedContextEdit],
    call: &mut CallInProgress,
) -> (Vec<Effect>, Vec<ArchivedSpan>) {
    let Some(context) = config.strategy.provider_context() else {
        // A provider reports edits only for a strategy asked of it; any other report is the
        // event's alone, which the engine still logs and shows.
        return (Vec::new(), Vec::new());
    };
    let mut effects = Vec::new();
    let mut cleared = Vec::new();
    for edit in edits {
        cleared.extend(cleared_spans(sent, context, iteration, edit));
        let record = reconcile(sent, context, u64::from(iteration), edit);
        effects.push(Effect::Ledger(LedgerLine::ProviderEdit {
            record: Box::new(record),
        }));
        if let AppliedContextEdit::Compacted {
            content,
            input_tokens,
            output_tokens,
            ..
        } = edit
        {
            call.compaction = Some(content.clone());
            if input_tokens.is_some() || output_tokens.is_some() {
                effects.push(Effect::Emit(ProviderEvent::CallEnded {
                    stats: SessionStats {
                        input_tokens: *input_tokens,
                        output_tokens: *output_tokens,
                        ..SessionStats::default()
                    },
                    model: Some(config.model.clone()),
                    stop_reason: Some("compaction".to_owned()),
                }));
            }
        }
    }
    (effects, cleared)
}

/// The call's id, or, when the session already used it (some APIs number calls per answer,
/// `call_0` every time), the id with a suffix: the request carries both the call and its
/// result, so the renamed pair still matches, and no two calls share an id.
pub(super) fn unique_call_id(used: &mut BTreeSet<String>, given: &str) -> String {
    let mut id = given.to_owned();
    let mut suffix = 1u32;
    while used.contains(&id) {
        suffix = suffix.saturating_add(1);
        id = format!("{given}_{suffix}");
    }
    used.insert(id.clone());
    id
}

/// A call's error as the failure event the reducer folds.
pub fn failure_event(error: &ApiError) -> ProviderEvent {
    ProviderEvent::Failure {
        failure: error.failure().cloned().unwrap_or_else(|| Failure {
            kind: FailureKind::Unknown,
            retryable: false,
            message: error.to_string(),
            http_status: None,
        }),
    }
}

/// [`mcp_notice`] of each of `notices`.
pub fn mcp_notices(notices: Vec<String>, at_ms: u64) -> Vec<Effect> {
    notices
        .iter()
        .flat_map(|notice| mcp_notice(notice, at_ms))
        .collect()
}

/// How an MCP server that failed or stopped is said: in the pane, as a warning, and in the
/// transcript (the log, `replay` and the dashboard's transcript), so it is never just missing.
pub fn mcp_notice(text: &str, at_ms: u64) -> Vec<Effect> {
    vec![
        Effect::Notice(text.to_owned()),
        Effect::Emit(ProviderEvent::Warning {
            message: text.to_owned(),
        }),
        Effect::Transcript {
            at_ms,
            entry: TranscriptEntry::Failure {
                failure: Failure {
                    kind: FailureKind::Unknown,
                    retryable: false,
                    message: text.to_owned(),
                    http_status: None,
                },
            },
        },
    ]
}
