//! Provider-side context management, applied as the APIs apply it: on the server, to the prompt
//! the model reads, before it is counted and cached. Which answer is sent never depends on it;
//! only the prompt counted, the edits reported and the extra compaction block or item do.
//!
//! - Anthropic (`context_management: {"edits": [..]}`, beta header required): `clear_tool_uses`
//!   replaces the content of the oldest tool results with [`CLEARED_TOOL_RESULT`] once the prompt
//!   passes its trigger; `clear_thinking` drops the thinking of earlier assistant messages;
//!   `compact` folds the conversation into a `compaction` block once the prompt passes its
//!   trigger, and the answer is billed from that block on. A request carrying a `compaction`
//!   block is counted from its last one onward (tools and system stay).
//! - OpenAI (`context_management: [{"type": "compaction", "compact_threshold": N}]`): a prompt
//!   over the threshold gets a `compaction` output item before the answer; a request whose input
//!   holds a `compaction` item is counted from its last one onward.
//!
//! Tokens are the mock's formula ([`crate::Usage::derive`]) over the edited prompt: what an edit
//! clears is the difference of the formula before and after it, so usage plus cleared tokens is
//! the prompt as sent. Edits apply in the order the request lists them.

use serde_json::{json, Value};

use crate::frames::hex_id;
use crate::script::Reply;
use crate::usage::{input_tokens, output_tokens};

/// The `anthropic-beta` value that enables the clearing edits.
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";
/// The `anthropic-beta` value that enables server-side compaction.
pub const COMPACT_BETA: &str = "compact-2026-01-12";
/// What a cleared tool result's content is replaced with.
pub const CLEARED_TOOL_RESULT: &str = "[tool result cleared by context management]";
/// The lowest trigger `compact_20260112` accepts.
pub const MIN_COMPACT_TRIGGER: u64 = 50_000;

const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";
const CLEAR_THINKING: &str = "clear_thinking_20251015";
const COMPACT: &str = "compact_20260112";

// The APIs' defaults for what a request leaves out.
const CLEAR_TRIGGER_DEFAULT: u64 = 100_000;
const KEEP_TOOL_USES_DEFAULT: u64 = 3;
const KEEP_THINKING_DEFAULT: u64 = 1;
const COMPACT_TRIGGER_DEFAULT: u64 = 150_000;

/// Why a request's `context_management` is refused (the API's 400 `invalid_request_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// An Anthropic edit without the beta header that enables it.
    #[error("context_management: the `{edit}` edit is a beta feature: send the header `anthropic-beta: {beta}`")]
    BetaMissing {
        /// The edit's type.
        edit: String,
        /// The beta it needs.
        beta: &'static str,
    },
    /// An Anthropic edit of a type the API does not know.
    #[error("context_management.edits.{index}.type: Input tag '{found}' found using 'type' does not match any of the expected tags: '{CLEAR_TOOL_USES}', '{CLEAR_THINKING}', '{COMPACT}'")]
    UnknownEdit {
        /// The edit's place in `edits`.
        index: usize,
        /// Its type.
        found: String,
    },
    /// A compaction trigger under [`MIN_COMPACT_TRIGGER`].
    #[error("context_management.edits.{index}.trigger.value: Input should be greater than or equal to {MIN_COMPACT_TRIGGER} (found {value})")]
    TriggerTooLow {
        /// The edit's place in `edits`.
        index: usize,
        /// The trigger sent.
        value: u64,
    },
    /// An OpenAI entry of a type the API does not know.
    #[error("Invalid value: '{found}'. Supported values are: 'compaction'.")]
    UnknownEntry {
        /// The entry's place in `context_management`.
        index: usize,
        /// Its type.
        found: String,
    },
    /// A field of the wrong shape.
    #[error("{path}: Input should be {expected}")]
    Malformed {
        /// Where, as the API spells it (`context_management.edits.0.keep`).
        path: String,
        /// What it should be.
        expected: &'static str,
    },
}

impl Invalid {
    /// The `param` of OpenAI's error body.
    pub fn openai_param(&self) -> String {
        match self {
            Invalid::UnknownEntry { index, .. } => format!("context_management[{index}].type"),
            Invalid::Malformed { path, .. } => path.clone(),
            _ => "context_management".to_owned(),
        }
    }
}

/// Which tool uses `clear_tool_uses` also clears the input of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputsCleared {
    /// None (`false`, the default).
    None,
    /// Every cleared tool use's (`true`).
    All,
    /// Those of the named tools.
    Of(Vec<String>),
}

/// One Anthropic edit, with the API's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// `clear_tool_uses_20250919`.
    ClearToolUses {
        /// Clear once the prompt has more input tokens than this.
        trigger: u64,
        /// The most recent tool uses left as they are.
        keep: u64,
        /// Clear only when at least this many tokens would go (0: any).
        clear_at_least: u64,
        /// Tools whose uses are never cleared.
        exclude_tools: Vec<String>,
        /// Whose inputs are cleared with the results.
        clear_inputs: InputsCleared,
    },
    /// `clear_thinking_20251015`: the thinking turns kept (`None`: all).
    ClearThinking {
        /// The most recent assistant messages whose thinking stays.
        keep: Option<u64>,
    },
    /// `compact_20260112`.
    Compact {
        /// Compact once the prompt has more input tokens than this.
        trigger: u64,
    },
}

/// A compaction the answer carries first: Anthropic's `compaction` block, OpenAI's item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// The summary (Anthropic) or the opaque `encrypted_content` (OpenAI).
    pub content: String,
    /// The prompt the compaction read.
    pub input_tokens: u64,
    /// What writing the summary cost.
    pub output_tokens: u64,
}

/// What context management made of one request, for rendering its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    /// The body bytes the answer's input is counted from.
    pub prompt_bytes: usize,
    /// Whether `huge-input`'s scripted figure still stands (no edit changed the prompt).
    pub scripted_input: bool,
    /// Whether the request asked for context management (Anthropic then reports its edits,
    /// none or some).
    pub requested: bool,
    /// Anthropic's `applied_edits` entries.
    pub applied_edits: Vec<Value>,
    /// The compaction to send before the answer.
    pub compaction: Option<Compaction>,
}

impl Managed {
    /// A request without context management: counted as sent.
    pub fn plain(raw_len: usize) -> Managed {
        Managed {
            prompt_bytes: raw_len,
            scripted_input: true,
            requested: false,
            applied_edits: Vec::new(),
            compaction: None,
        }
    }
}

/// The request as the model reads it, and the body bytes it is counted from.
#[derive(Debug, Clone)]
struct Counted {
    body: Value,
    bytes: usize,
    huge: bool,
}

impl Counted {
    fn tokens(&self) -> u64 {
        input_tokens(self.bytes, self.huge)
    }

    fn list(&self, key: &str) -> &[Value] {
        self.body
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// Puts `items` at `key`, counting the bytes it adds or removes. A changed prompt is no
    /// longer the scripted huge one.
    fn replace(&mut self, key: &str, items: Vec<Value>) {
        let Some(object) = self.body.as_object_mut() else {
            return;
        };
        let new = Value::Array(items);
        let old_len = object.get(key).map_or(0, |old| old.to_string().len());
        self.bytes = self
            .bytes
            .saturating_sub(old_len)
            .saturating_add(new.to_string().len());
        self.huge = false;
        object.insert(key.to_owned(), new);
    }
}

/// Whether the reply's answer reports `huge-input`'s scripted figure.
pub fn scripted_huge(reply: &Reply) -> bool {
    match reply {
        Reply::Answer(answer) | Reply::MidStreamError(answer) | Reply::StreamCut(answer) => {
            answer.huge_input
        }
        Reply::Error(_) => false,
    }
}

fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

fn has_beta(betas: &str, beta: &str) -> bool {
    betas.split(',').any(|sent| sent.trim() == beta)
}

/// `{"type": kind, "value": N}` at `field` of `edit`, or `default` when absent.
fn amount(
    edit: &Value,
    index: usize,
    field: &str,
    kind: &'static str,
    default: u64,
) -> Result<u64, Invalid> {
    let malformed = || Invalid::Malformed {
        path: format!("context_management.edits.{index}.{field}"),
        expected: kind,
    };
    match edit.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(value) if type_of(value) == Some(kind) => value
            .get("value")
            .and_then(Value::as_u64)
            .ok_or_else(malformed),
        Some(_) => Err(malformed()),
    }
}

fn names(value: Option<&Value>, path: String) -> Result<Vec<String>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or(Invalid::Malformed {
                path,
                expected: "a list of tool names",
            }),
        Some(_) => Err(Invalid::Malformed {
            path,
            expected: "a list of tool names",
        }),
    }
}

fn edit(value: &Value, index: usize, betas: &str) -> Result<Edit, Invalid> {
    let kind = type_of(value).unwrap_or_default();
    let beta = match kind {
        CLEAR_TOOL_USES | CLEAR_THINKING => CONTEXT_MANAGEMENT_BETA,
        COMPACT => COMPACT_BETA,
        _ => {
            return Err(Invalid::UnknownEdit {
                index,
                found: kind.to_owned(),
            })
        }
    };
    if !has_beta(betas, beta) {
        return Err(Invalid::BetaMissing {
            edit: kind.to_owned(),
            beta,
        });
    }
    let path = |field: &str| format!("context_management.edits.{index}.{field}");
    Ok(match kind {
        CLEAR_TOOL_USES => Edit::ClearToolUses {
            trigger: amount(
                value,
                index,
                "trigger",
                "input_tokens",
                CLEAR_TRIGGER_DEFAULT,
            )?,
            keep: amount(value, index, "keep", "tool_uses", KEEP_TOOL_USES_DEFAULT)?,
            clear_at_least: amount(value, index, "clear_at_least", "input_tokens", 0)?,
            exclude_tools: names(value.get("exclude_tools"), path("exclude_tools"))?,
            clear_inputs: match value.get("clear_tool_inputs") {
                None | Some(Value::Null | Value::Bool(false)) => InputsCleared::None,
                Some(Value::Bool(true)) => InputsCleared::All,
                other => InputsCleared::Of(names(other, path("clear_tool_inputs"))?),
            },
        },
        CLEAR_THINKING => Edit::ClearThinking {
            keep: match value.get("keep") {
                Some(Value::String(all)) if all == "all" => None,
                Some(Value::String(_)) => {
                    return Err(Invalid::Malformed {
                        path: path("keep"),
                        expected: "'all' or a thinking_turns amount",
                    })
                }
                _ => Some(amount(
                    value,
                    index,
                    "keep",
                    "thinking_turns",
                    KEEP_THINKING_DEFAULT,
                )?),
            },
        },
        _ => {
            let trigger = amount(
                value,
                index,
                "trigger",
                "input_tokens",
                COMPACT_TRIGGER_DEFAULT,
            )?;
            if trigger < MIN_COMPACT_TRIGGER {
                return Err(Invalid::TriggerTooLow {
                    index,
                    value: trigger,
                });
            }
            Edit::Compact { trigger }
        }
    })
}

/// The edits of an Anthropic request's `context_management`, refused as the API refuses them;
/// `betas` is its `anthropic-beta` header (comma-separated).
pub fn anthropic_edits(body: &Value, betas: &str) -> Result<Vec<Edit>, Invalid> {
    let field = match body.get("context_management") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(field) => field,
    };
    let edits = field
        .get("edits")
        .and_then(Value::as_array)
        .ok_or(Invalid::Malformed {
            path: "context_management.edits".to_owned(),
            expected: "a list of edits",
        })?;
    if edits.is_empty() && !has_beta(betas, CONTEXT_MANAGEMENT_BETA) {
        return Err(Invalid::BetaMissing {
            edit: "context_management".to_owned(),
            beta: CONTEXT_MANAGEMENT_BETA,
        });
    }
    edits
        .iter()
        .enumerate()
        .map(|(index, value)| edit(value, index, betas))
        .collect()
}

/// The `compact_threshold` of an OpenAI request's `context_management` (the lowest, should it
/// carry more than one entry), refused as the API refuses it.
pub fn openai_threshold(body: &Value) -> Result<Option<u64>, Invalid> {
    let entries = match body.get("context_management") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            return Err(Invalid::Malformed {
                path: "context_management".to_owned(),
                expected: "an array",
            })
        }
    };
    let mut threshold: Option<u64> = None;
    for (index, entry) in entries.iter().enumerate() {
        let kind = type_of(entry).unwrap_or_default();
        if kind != "compaction" {
            return Err(Invalid::UnknownEntry {
                index,
                found: kind.to_owned(),
            });
        }
        let value = entry
            .get("compact_threshold")
            .and_then(Value::as_u64)
            .ok_or(Invalid::Malformed {
                path: format!("context_management[{index}].compact_threshold"),
                expected: "a positive integer",
            })?;
        threshold = Some(threshold.map_or(value, |lower| lower.min(value)));
    }
    Ok(threshold)
}

fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn blocks_mut(message: &mut Value) -> impl Iterator<Item = &mut Value> {
    message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Sets `field` of `block` to `value`; whether that changed it.
fn set(block: &mut Value, field: &str, value: Value) -> bool {
    match block.as_object_mut() {
        Some(object) if object.get(field) != Some(&value) => {
            object.insert(field.to_owned(), value);
            true
        }
        _ => false,
    }
}

/// `messages` with the oldest tool uses cleared (all but the last `keep`, never one of
/// `exclude_tools`), and how many were cleared.
fn clear_tool_uses(
    messages: &[Value],
    keep: u64,
    exclude_tools: &[String],
    clear_inputs: &InputsCleared,
) -> (Vec<Value>, u64) {
    // Every tool use in order: where it is, its id and its tool.
    let mut uses: Vec<(usize, usize, &str, &str)> = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        for (block_at, block) in blocks(message).iter().enumerate() {
            if type_of(block) == Some("tool_use") {
                let field = |name| block.get(name).and_then(Value::as_str).unwrap_or_default();
                uses.push((at, block_at, field("id"), field("name")));
            }
        }
    }
    let kept = usize::try_from(keep).unwrap_or(usize::MAX);
    let oldest = uses.len().saturating_sub(kept);
    let mut out = messages.to_vec();
    let mut cleared = 0u64;
    for &(at, block_at, id, name) in uses.iter().take(oldest) {
        if exclude_tools.iter().any(|excluded| excluded == name) {
            continue;
        }
        let mut changed = false;
        for block in out.iter_mut().flat_map(blocks_mut) {
            let its_result = type_of(block) == Some("tool_result")
                && block.get("tool_use_id").and_then(Value::as_str) == Some(id);
            if its_result {
                changed |= set(block, "content", json!(CLEARED_TOOL_RESULT));
            }
        }
        let clears_input = match clear_inputs {
            InputsCleared::None => false,
            InputsCleared::All => true,
            InputsCleared::Of(tools) => tools.iter().any(|tool| tool == name),
        };
        if clears_input {
            if let Some(block) = out.get_mut(at).and_then(|m| blocks_mut(m).nth(block_at)) {
                changed |= set(block, "input", json!({}));
            }
        }
        if changed {
            cleared = cleared.saturating_add(1);
        }
    }
    (out, cleared)
}

/// `messages` without the thinking of assistant messages before the last `keep` that have
/// some (each such message is one thinking turn), and how many turns lost theirs.
fn clear_thinking(messages: &[Value], keep: u64) -> (Vec<Value>, u64) {
    let is_thinking =
        |block: &Value| matches!(type_of(block), Some("thinking" | "redacted_thinking"));
    let turns: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter(|(_, m)| blocks(m).iter().any(is_thinking))
        .map(|(at, _)| at)
        .collect();
    let cleared = turns
        .len()
        .saturating_sub(usize::try_from(keep).unwrap_or(usize::MAX));
    let mut out = messages.to_vec();
    for &at in turns.iter().take(cleared) {
        if let Some(content) = out
            .get_mut(at)
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
        {
            content.retain(|block| !is_thinking(block));
        }
    }
    (out, u64::try_from(cleared).unwrap_or(u64::MAX))
}

/// `messages` from the last `compaction` block on (the message holding it keeps the blocks from
/// it on), when one is carried after the first block.
fn from_last_compaction(messages: &[Value]) -> Option<Vec<Value>> {
    let (at, block_at) = messages.iter().enumerate().rev().find_map(|(at, m)| {
        blocks(m)
            .iter()
            .rposition(|b| type_of(b) == Some("compaction"))
            .map(|block_at| (at, block_at))
    })?;
    if at == 0 && block_at == 0 {
        return None;
    }
    let mut first = messages.get(at)?.clone();
    if let Some(content) = first.get_mut("content").and_then(Value::as_array_mut) {
        content.drain(..block_at);
    }
    Some(
        std::iter::once(first)
            .chain(messages.iter().skip(at.saturating_add(1)).cloned())
            .collect(),
    )
}

/// The summary a compaction of `messages` messages writes.
pub fn summary_text(messages: usize) -> String {
    format!(
        "Mock compaction summary: the {messages} earlier messages of this conversation are folded into this block."
    )
}

/// The edited request (what the cache sees) and what its answer reports, for an Anthropic
/// request of `raw_len` bytes whose answer reports the huge input when `huge`.
pub fn apply_anthropic(
    body: &Value,
    raw_len: usize,
    huge: bool,
    edits: &[Edit],
) -> (Value, Managed) {
    let mut counted = Counted {
        body: body.clone(),
        bytes: raw_len,
        huge,
    };
    if let Some(messages) = from_last_compaction(counted.list("messages")) {
        counted.replace("messages", messages);
    }
    let mut applied_edits = Vec::new();
    let mut compaction = None;
    for edit in edits {
        let before = counted.tokens();
        match edit {
            Edit::ClearToolUses {
                trigger,
                keep,
                clear_at_least,
                exclude_tools,
                clear_inputs,
            } => {
                if before <= *trigger {
                    continue;
                }
                let (messages, uses) =
                    clear_tool_uses(counted.list("messages"), *keep, exclude_tools, clear_inputs);
                let mut edited = counted.clone();
                edited.replace("messages", messages);
                let tokens = before.saturating_sub(edited.tokens());
                if uses == 0 || tokens < *clear_at_least {
                    continue;
                }
                counted = edited;
                applied_edits.push(json!({"type": CLEAR_TOOL_USES, "cleared_tool_uses": uses, "cleared_input_tokens": tokens}));
            }
            Edit::ClearThinking { keep: None } => {}
            Edit::ClearThinking { keep: Some(keep) } => {
                let (messages, turns) = clear_thinking(counted.list("messages"), *keep);
                if turns == 0 {
                    continue;
                }
                counted.replace("messages", messages);
                let tokens = before.saturating_sub(counted.tokens());
                applied_edits.push(json!({"type": CLEAR_THINKING, "cleared_thinking_turns": turns, "cleared_input_tokens": tokens}));
            }
            Edit::Compact { trigger } => {
                if before <= *trigger {
                    continue;
                }
                let summary = summary_text(counted.list("messages").len());
                let block = json!({"role": "assistant", "content": [{"type": "compaction", "content": summary}]});
                counted.replace("messages", vec![block]);
                compaction = Some(Compaction {
                    input_tokens: before,
                    output_tokens: output_tokens(summary.len()),
                    content: summary,
                });
            }
        }
    }
    let managed = Managed {
        prompt_bytes: counted.bytes,
        scripted_input: counted.huge,
        requested: !edits.is_empty(),
        applied_edits,
        compaction,
    };
    (counted.body, managed)
}

/// The request from its last `compaction` input item on (what the cache sees) and what its
/// answer reports, for an OpenAI request of `raw` bytes with the given `compact_threshold`.
pub fn apply_openai(
    body: &Value,
    raw: &[u8],
    huge: bool,
    threshold: Option<u64>,
) -> (Value, Managed) {
    let mut counted = Counted {
        body: body.clone(),
        bytes: raw.len(),
        huge,
    };
    let input = counted.list("input");
    if let Some(at) = input
        .iter()
        .rposition(|item| type_of(item) == Some("compaction"))
        .filter(|at| *at > 0)
    {
        let kept = input.iter().skip(at).cloned().collect();
        counted.replace("input", kept);
    }
    let before = counted.tokens();
    let compaction = threshold.filter(|t| before > *t).map(|_| Compaction {
        content: format!(
            "gAAAAB-panewise-mock-compaction-{}-items-{}",
            counted.list("input").len(),
            hex_id(raw, 740, 48)
        ),
        input_tokens: before,
        output_tokens: 0,
    });
    let managed = Managed {
        prompt_bytes: counted.bytes,
        scripted_input: counted.huge,
        requested: threshold.is_some(),
        applied_edits: Vec::new(),
        compaction,
    };
    (counted.body, managed)
}

#[cfg(test)]
mod tests;
