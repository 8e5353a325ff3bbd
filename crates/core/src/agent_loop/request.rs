//! The request of one iteration, built from the window's kept messages, and the pairing
//! check: no request carries a tool result without its call, or a call without its result.
//!
//! The messages are borrowed, not copied: every text of the request points into the
//! conversation the window kept.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use panewise_providers::ApiMessage;
use panewise_window::{Message, Role};

use crate::error::PairingError;

/// The `injected_by` of the message that holds a provider's compaction (an Anthropic
/// `compaction` block's summary, an OpenAI compaction item's opaque content): the next
/// request sends it back in its place.
pub const PROVIDER_COMPACTION: &str = "provider-compaction";

/// The API messages for `messages` (the kept window, oldest first): a person's or the
/// stage's text as user text, the model's text and calls as they came, each tool result
/// with the tool's name and whether it failed (`errored` holds the call ids that did).
/// Checked with [`check_pairing`] before it is returned.
pub fn api_messages<'a>(
    messages: &'a [Message],
    errored: &BTreeSet<String>,
) -> Result<Vec<ApiMessage<'a>>, PairingError> {
    let mut out = Vec::with_capacity(messages.len().saturating_add(messages.len() / 2));
    // Gemini matches a result to its call by the tool's name: a result that does not carry
    // it takes its call's.
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    for message in messages {
        match message.role {
            // The loop keeps the system prompt out of the conversation; a system message that
            // is in it still reaches the model, as text.
            Role::User | Role::System => out.push(ApiMessage::User {
                text: Cow::Borrowed(&message.content),
            }),
            // A provider's compaction goes back verbatim in its place.
            Role::Assistant if message.injected_by.as_deref() == Some(PROVIDER_COMPACTION) => out
                .push(ApiMessage::Compaction {
                    content: Cow::Borrowed(&message.content),
                }),
            Role::Assistant => {
                if !message.content.is_empty() || message.tool_calls.is_empty() {
                    out.push(ApiMessage::Assistant {
                        text: Cow::Borrowed(&message.content),
                    });
                }
                for call in &message.tool_calls {
                    names.insert(&call.id, &call.name);
                    out.push(ApiMessage::ToolCall {
                        call_id: Cow::Borrowed(&call.id),
                        name: Cow::Borrowed(&call.name),
                        arguments: Cow::Borrowed(&call.args),
                    });
                }
            }
            Role::Tool => {
                let call_id = message.tool_call_id.as_deref().unwrap_or_default();
                let name = message
                    .tool_name
                    .as_deref()
                    .or_else(|| names.get(call_id).copied())
                    .unwrap_or_default();
                out.push(ApiMessage::ToolResult {
                    call_id: Cow::Borrowed(call_id),
                    name: Cow::Borrowed(name),
                    output: Cow::Borrowed(&message.content),
                    is_error: errored.contains(call_id),
                });
            }
        }
    }
    check_pairing(&out)?;
    Ok(out)
}

/// Every tool result answers a call made before it, every call is answered after it, and no
/// call id is used twice.
pub fn check_pairing(messages: &[ApiMessage<'_>]) -> Result<(), PairingError> {
    // Call id → (position of the call, answered yet).
    let mut calls: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            ApiMessage::ToolCall { call_id, .. } => {
                if calls.insert(call_id, (index, false)).is_some() {
                    return Err(PairingError::DuplicateCall {
                        call_id: call_id.to_string(),
                        index,
                    });
                }
            }
            ApiMessage::ToolResult { call_id, .. } => match calls.get_mut(call_id.as_ref()) {
                Some((_, answered)) => *answered = true,
                None => {
                    return Err(PairingError::ResultWithoutCall {
                        call_id: call_id.to_string(),
                        index,
                    })
                }
            },
            ApiMessage::User { .. }
            | ApiMessage::Assistant { .. }
            | ApiMessage::Compaction { .. } => {}
        }
    }
    match calls
        .iter()
        .filter(|(_, (_, answered))| !answered)
        .min_by_key(|(_, (index, _))| *index)
    {
        Some((call_id, (index, _))) => Err(PairingError::CallWithoutResult {
            call_id: (*call_id).to_owned(),
            index: *index,
        }),
        None => Ok(()),
    }
}
