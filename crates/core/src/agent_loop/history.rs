//! The own loop's request path with each message rendered once: a [`LoopHistory`] holds the
//! window's [`Conversation`] and a [`RenderedHistory`] beside it, one entry per conversation
//! message, and keeps the two in step: a message appended to one is appended to the other,
//! and a window plan applied to the conversation is replayed onto the rendered history
//! (replacements, the removed span, the note in its place), re-rendering only what the plan
//! changed. The body of an iteration is then assembled from the fragments.
//!
//! The own loop (the host's `panewise_host::backend::model`) keeps one instead of building every request from
//! the whole conversation ([`api_messages`](super::request::api_messages), then
//! `ApiKind::body`); [`api_entry`] maps one message exactly as `api_messages` does, and a
//! property test (`benches/tests/rendered_history.rs`) holds the assembled body byte for byte
//! equal to that path over random histories and every strategy's edits, in all three APIs.

use std::borrow::Cow;
use std::collections::BTreeSet;

use panewise_providers::api::context::request_headers;
use panewise_providers::RenderedRequest;
use panewise_providers::{ApiKind, ApiMessage, RenderedHistory, RequestError, RequestHead};
use panewise_window::cache::{anthropic_breakpoints_after_edit, block_hash, first_changed_block};
use panewise_window::{Conversation, Message, Role, WindowError, WindowPlan};

use super::ledger::PrefixBreak;
use crate::error::LoopError;

/// A window edit that the conversation or the rendered history refused.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The conversation refused the plan's edit.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// The rendered history refused the replayed edit (it was out of step).
    #[error(transparent)]
    Request(#[from] RequestError),
}

pub use super::request::PROVIDER_COMPACTION;

/// The API messages of one conversation message, as the loop's request builder maps it: a
/// person's or the stage's text (or a system message) as user text; the model's text, when it
/// has any or calls nothing, then each call; a tool result with its tool's name (the message's
/// own, else its call's, which `history` knows) and whether it failed.
pub fn api_entry<'a>(
    message: &'a Message,
    history: &RenderedHistory,
    errored: &BTreeSet<String>,
) -> Vec<ApiMessage<'a>> {
    match message.role {
        Role::User | Role::System => vec![ApiMessage::User {
            text: Cow::Borrowed(&message.content),
        }],
        // A provider's compaction goes back verbatim, as the API requires.
        Role::Assistant if message.injected_by.as_deref() == Some(PROVIDER_COMPACTION) => {
            vec![ApiMessage::Compaction {
                content: Cow::Borrowed(&message.content),
            }]
        }
        Role::Assistant => {
            let mut out = Vec::with_capacity(1 + message.tool_calls.len());
            if !message.content.is_empty() || message.tool_calls.is_empty() {
                out.push(ApiMessage::Assistant {
                    text: Cow::Borrowed(&message.content),
                });
            }
            out.extend(message.tool_calls.iter().map(|call| ApiMessage::ToolCall {
                call_id: Cow::Borrowed(&call.id),
                name: Cow::Borrowed(&call.name),
                arguments: Cow::Borrowed(&call.args),
            }));
            out
        }
        Role::Tool => {
            let call_id = message.tool_call_id.as_deref().unwrap_or_default();
            let name = match message.tool_name.as_deref() {
                Some(name) => Cow::Borrowed(name),
                None => Cow::Owned(history.call_name(call_id).unwrap_or_default().to_owned()),
            };
            vec![ApiMessage::ToolResult {
                call_id: Cow::Borrowed(call_id),
                name,
                output: Cow::Borrowed(&message.content),
                is_error: errored.contains(call_id),
            }]
        }
    }
}

/// The window's conversation and its messages rendered for one API, kept in step.
#[derive(Debug)]
pub struct LoopHistory {
    conversation: Conversation<Message>,
    rendered: RenderedHistory,
    /// The blocks of the last request [`request_placed`](Self::request_placed) built, as
    /// hashes: the head's, then each content block's. The next request is compared with them.
    sent: Vec<u64>,
}

/// One hash of a request's head: the system prompt and every tool definition. The tools
/// change within a session (`recall` joins them once something is archived), and a changed
/// head leaves no cached prefix to read.
fn head_hash(head: &RequestHead<'_>) -> u64 {
    let mut parts: Vec<Cow<'_, str>> = Vec::with_capacity(1 + 3 * head.tools.len());
    parts.push(Cow::Borrowed(head.system.unwrap_or("\u{0}no system")));
    for tool in head.tools {
        parts.push(Cow::Borrowed(&tool.name));
        parts.push(Cow::Borrowed(&tool.description));
        parts.push(Cow::Owned(tool.parameters.to_string()));
    }
    let parts: Vec<&str> = parts.iter().map(|part| &**part).collect();
    block_hash(&parts)
}

/// Where a request's prefix broke against the previous request, and the breakpoints placed:
/// a pure decision over the two requests' block hashes (`blocks[0]` the head's, then one per
/// content block) and the block of each content block's message (`message_of`).
///
/// Returns the content blocks to mark (Anthropic's message breakpoints, the head's own being
/// the frame's) and the ledger's [`PrefixBreak`], `None` when the request only appended.
/// `marking` says whether the breakpoints reach the body (Anthropic with caching on).
pub fn place_breakpoints(
    sent: &[u64],
    blocks: &[u64],
    marking: bool,
    message_of: impl Fn(usize) -> usize,
) -> (Vec<usize>, Option<PrefixBreak>) {
    let changed = first_changed_block(sent, blocks);
    let placed = anthropic_breakpoints_after_edit(blocks.len(), 1, changed);
    // Block 0 is the head, which the frame marks; the others are content blocks, one off.
    let marks: Vec<usize> = placed.iter().filter_map(|b| b.checked_sub(1)).collect();
    let prefix_break = changed.map(|at| {
        let block = at.checked_sub(1);
        let before = at.checked_sub(2);
        PrefixBreak {
            message: block.map(&message_of),
            block,
            breakpoint_block: before.filter(|b| marking && marks.contains(b)),
        }
    });
    (marks, prefix_break)
}

impl LoopHistory {
    /// An empty history for `api`.
    pub fn new(api: ApiKind) -> Self {
        Self {
            conversation: Conversation::new(),
            rendered: RenderedHistory::new(api),
            sent: Vec::new(),
        }
    }

    /// The conversation the window stage visits.
    pub fn conversation(&self) -> &Conversation<Message> {
        &self.conversation
    }

    /// The rendered messages.
    pub fn rendered(&self) -> &RenderedHistory {
        &self.rendered
    }

    /// Appends one message to both: counted by the conversation, rendered once. A tool result
    /// is rendered with `errored` as it stands now (record a failed call there first).
    pub fn push(&mut self, message: Message, errored: &BTreeSet<String>) {
        let entry = api_entry(&message, &self.rendered, errored);
        self.rendered.push(&entry);
        drop(entry);
        self.conversation.push(message);
    }

    /// Applies a window plan to the conversation and replays its edit onto the rendered
    /// history: each replaced message rendered again, the removed span's entries dropped, the
    /// note in their place rendered. Nothing else is rendered again.
    pub fn apply(
        &mut self,
        plan: &mut WindowPlan<Message>,
        errored: &BTreeSet<String>,
    ) -> Result<(), SyncError> {
        let Some(edit) = plan.edit.clone() else {
            return Ok(());
        };
        self.conversation.apply(plan)?;
        let removed = edit.removed;
        let inserted = edit.inserted.is_some() && !removed.is_empty();
        let messages = self.conversation.messages();
        // Replacements address the window before the removal, as the rendered history still is.
        for replacement in &edit.replaced {
            let now_at = if replacement.index < removed.start {
                replacement.index
            } else {
                replacement.index - removed.len() + usize::from(inserted)
            };
            let Some(message) = messages.get(now_at) else {
                return Err(RequestError::HistoryEdit(format!(
                    "replaced message {} is not in the conversation",
                    replacement.index
                ))
                .into());
            };
            let entry = api_entry(message, &self.rendered, errored);
            self.rendered.replace(replacement.index, &entry)?;
        }
        let note = match (inserted, messages.get(removed.start)) {
            (true, Some(message)) => Some(api_entry(message, &self.rendered, errored)),
            _ => None,
        };
        self.rendered.splice(removed, note.as_deref())?;
        Ok(())
    }

    /// The request of one call: the kept messages' fragments, rendered when each was appended
    /// (or edited), assembled into one body in a buffer of its own (the client keeps it while
    /// it retries), framed by `head`. Byte for byte what `ApiKind::body` renders for
    /// [`api_messages`](super::request::api_messages) of the kept messages, or its error (a
    /// pairing error first).
    pub fn request(&self, head: &RequestHead<'_>) -> Result<RenderedRequest, RequestError> {
        let mut body = Vec::new();
        self.rendered.write_body(head, &mut body)?;
        Ok(RenderedRequest {
            model: head.model.to_owned(),
            body,
            messages: self.rendered.message_count(),
            headers: request_headers(self.rendered.api(), head.context_management),
        })
    }

    /// [`request`](Self::request), with Anthropic's breakpoints placed for what changed since
    /// the last request this built ([`place_breakpoints`]): after a window edit, one more on
    /// the content block before the first changed one, so the provider reads the prefix up to
    /// there from its cache and writes only what follows. Also returns where the prefix broke,
    /// for the ledger. The blocks are remembered only when the request could be built.
    pub fn request_placed(
        &mut self,
        head: &RequestHead<'_>,
    ) -> Result<(RenderedRequest, Option<PrefixBreak>), RequestError> {
        let mut blocks = Vec::with_capacity(1 + self.rendered.message_count());
        blocks.push(head_hash(head));
        blocks.extend(self.rendered.block_hashes());
        let marking = self.rendered.api() == ApiKind::Anthropic && head.prompt_cache;
        let rendered = &self.rendered;
        let (marks, prefix_break) = place_breakpoints(&self.sent, &blocks, marking, |block| {
            rendered.entry_of_block(block)
        });
        let mut body = Vec::new();
        self.rendered.write_body_marked(head, &marks, &mut body)?;
        self.sent = blocks;
        Ok((
            RenderedRequest {
                model: head.model.to_owned(),
                body,
                messages: self.rendered.message_count(),
                headers: request_headers(self.rendered.api(), head.context_management),
            },
            prefix_break,
        ))
    }

    /// The request body for `head` and the kept messages, assembled into `out`.
    pub fn write_body(
        &self,
        head: &RequestHead<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(), RequestError> {
        self.rendered.write_body(head, out)
    }
}
impl From<SyncError> for LoopError {
    fn from(error: SyncError) -> Self {
        match error {
            SyncError::Window(window) => LoopError::Window(window),
            SyncError::Request(request) => request.into(),
        }
    }
}
