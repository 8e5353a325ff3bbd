//! An answered request is never reported withdrawn (issue 28, finding 4): the host's answer,
//! read from the capture's `*.input.ndjson` where the host wrote it, closes the request, so the
//! agent going on with the tool (ACP's `tool_call_update`, the app-server's
//! `serverRequest/resolved`) is not a withdrawal.

use panewise_providers::{Decoder, Provider, ProviderEvent};
use serde_json::Value;

use crate::fixture;

/// Decodes `stream`; with `answers`, each host answer is fed right after the request it
/// answers, as the host wrote it.
fn decode(provider: Provider, stream: &[u8], answers: Option<&[u8]>) -> Vec<ProviderEvent> {
    let host_answers: Vec<(String, &[u8])> = answers
        .map(|input| {
            input
                .split(|byte| *byte == b'\n')
                .filter_map(|line| {
                    let value: Value = serde_json::from_slice(line).ok()?;
                    let is_answer = value.get("method").is_none()
                        && (value.get("result").is_some() || value.get("error").is_some());
                    let id = value.get("id")?.to_string();
                    is_answer.then_some((id, line))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut decoder = Decoder::new(provider);
    let mut events = Vec::new();
    for line in stream.split(|byte| *byte == b'\n') {
        let mut decoded = Vec::new();
        decoder.feed(line, &mut decoded);
        decoder.feed(b"\n", &mut decoded);
        events.extend(decoded.into_iter().filter_map(Result::ok));
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if value.get("method").is_some() {
            if let Some(id) = value.get("id").map(Value::to_string) {
                for (_, answer) in host_answers.iter().filter(|(answered, _)| *answered == id) {
                    decoder.host_line(answer);
                }
            }
        }
    }
    events
}

fn requested(events: &[ProviderEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::ApprovalRequested { request_id, .. } => Some(request_id.as_str()),
            _ => None,
        })
        .collect()
}

fn withdrawn(events: &[ProviderEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            ProviderEvent::ApprovalWithdrawn { request_id } => Some(request_id.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_answered_request_is_not_reported_withdrawn_in_either_direction() {
    let rows = [
        (
            "Codex app-server: serverRequest/resolved after the host's accept",
            Provider::CodexAppServer,
            "codex-app-server/appserver-accept",
        ),
        (
            "Gemini CLI over ACP: the tool call going on after the host's proceed_once",
            Provider::Acp,
            "acp/gemini-acp-allow",
        ),
    ];
    for (rule, provider, name) in rows {
        let stream = fixture(&format!("{name}.ndjson"));
        let input = fixture(&format!("{name}.input.ndjson"));
        let answered = decode(provider, &stream, Some(&input));
        assert_eq!(requested(&answered), vec!["0"], "{rule}");
        assert_eq!(withdrawn(&answered), Vec::<&str>::new(), "{rule}");
        // The output alone cannot tell an answer from a withdrawal: the request was open when
        // the agent went on, so the decoder reports it withdrawn (the request the host never
        // answered, as a second client answering it or a turn ending leaves it).
        let unanswered = decode(provider, &stream, None);
        assert_eq!(withdrawn(&unanswered), vec!["0"], "{rule}: output alone");
    }
}
