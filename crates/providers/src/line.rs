//! What every per-CLI decoder shares, and nothing that dispatches: the [`Provider`] names, the
//! `LineDecoder` trait each format implements, the [`Decoded`] output and the
//! [`DecodeCounts`]. A leaf of the crate: the per-CLI decoders import it, never the dispatcher
//! in [`crate::decoder`], so the two do not import each other.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::DecodeError;
use crate::event::ProviderEvent;

/// One decoder output: an event, or a line that could not be decoded.
pub type Decoded = Result<ProviderEvent, DecodeError>;

/// The coding-agent CLIs whose streams this crate decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Claude Code, `--output-format stream-json` (with or without `--include-partial-messages`).
    ClaudeCode,
    /// OpenAI Codex, `exec --json`.
    Codex,
    /// Gemini CLI, `--output-format stream-json`.
    GeminiCli,
    /// OpenAI Codex, `app-server`: JSON-RPC 2.0 lines without the `jsonrpc` field.
    CodexAppServer,
    /// Any agent speaking the Agent Client Protocol over stdio (Gemini CLI `--acp` first).
    Acp,
}

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; 5] = [
        Provider::ClaudeCode,
        Provider::Codex,
        Provider::GeminiCli,
        Provider::CodexAppServer,
        Provider::Acp,
    ];

    /// The name used on the command line and in JSON: `claude-code`, `codex`, `gemini-cli`,
    /// `codex-app-server`, `acp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::ClaudeCode => "claude-code",
            Provider::Codex => "codex",
            Provider::GeminiCli => "gemini-cli",
            Provider::CodexAppServer => "codex-app-server",
            Provider::Acp => "acp",
        }
    }
}

impl Provider {
    /// Which CLI wrote `line`, told by the line's `type` (and, for a `result`, by its fields):
    /// each CLI opens its stream with a line only it writes. A JSON-RPC message without a
    /// `type` is ACP when it carries `"jsonrpc":"2.0"` and Codex app-server when it does not.
    /// `None` for a line that could be any of them or none (not JSON, no `type`, an `error`
    /// notice).
    pub fn detect(line: &[u8]) -> Option<Provider> {
        #[derive(Deserialize)]
        struct Probe<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow)]
            subtype: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            stats: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            jsonrpc: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            method: Option<&'a serde_json::value::RawValue>,
        }
        let probe: Probe<'_> = serde_json::from_slice(line).ok()?;
        let Some(kind) = probe.kind.as_deref() else {
            return match (probe.jsonrpc, probe.id.or(probe.method)) {
                (Some(_), _) => Some(Provider::Acp),
                (None, Some(_)) => Some(Provider::CodexAppServer),
                (None, None) => None,
            };
        };
        match kind {
            "system" | "assistant" | "user" | "stream_event" | "control_request"
            | "control_response" => Some(Provider::ClaudeCode),
            "thread.started" | "turn.started" | "turn.completed" | "turn.failed" => {
                Some(Provider::Codex)
            }
            kind if kind.starts_with("item.") => Some(Provider::Codex),
            "init" | "message" | "tool_use" | "tool_result" => Some(Provider::GeminiCli),
            "result" if probe.stats.is_some() => Some(Provider::GeminiCli),
            "result" if probe.subtype.is_some() => Some(Provider::ClaudeCode),
            _ => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// The text was not one of the provider names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown provider `{0}` (expected claude-code, codex, gemini-cli, codex-app-server or acp)"
)]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str() == text)
            .ok_or_else(|| UnknownProvider(text.to_owned()))
    }
}

/// How many lines, events, unknown events and errors a decoder has produced so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeCounts {
    /// Complete lines seen, blank ones included.
    pub lines: u64,
    /// Events produced, unknown ones included.
    pub events: u64,
    /// [`ProviderEvent::Unknown`] events produced.
    pub unknown_events: u64,
    /// Lines that could not be decoded.
    pub decode_errors: u64,
    /// Well-formed lines of a known kind that carry nothing for the pane (an answer to the
    /// host's own request, a list of slash commands), counted so that nothing vanishes unseen.
    #[serde(default)]
    pub silent_lines: u64,
}

/// The per-provider part: turns one complete line into events. `Err` carries the reason the
/// line is malformed; events pushed before an `Err` are discarded by the caller.
pub(crate) trait LineDecoder {
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<ProviderEvent>) -> Result<(), String>;
}
