//! The fuzz targets: each takes untrusted bytes the way the `panewise` commands do, and drives
//! them as far through the pure crates as a real run would.

use std::sync::OnceLock;

use panewise_pane_state::{parse_log_bytes, LogError, SessionLog};
use panewise_providers::codex_appserver::{ClientInfo, ThreadOptions};
use panewise_providers::rpc_client::{RpcClient, RpcProtocol};
use panewise_providers::{
    fold_events, summarize, Decoded, Decoder, Mapper, ModelTable, PriceTable, Provider,
    ProviderEvent,
};
use panewise_window::{openai, Conversation, WindowError};

/// The marker the `planted` target panics on, unless the input also disarms it.
pub const PLANTED_MARKER: &str = "PANEWISE_PLANTED_PANIC";

/// The `planted` target's seed: the marker, disarmed. Any mutation that deletes, retypes or
/// corrupts `"armed":false` (while the marker survives) arms it.
pub const PLANTED_SEED: &str = "{\"kind\":\"PANEWISE_PLANTED_PANIC\",\"armed\":false}\n";

/// A fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// The Claude Code stream decoder, then the mapper, reducer fold and summary.
    ClaudeCode,
    /// The Codex stream decoder, then the mapper, reducer fold and summary.
    Codex,
    /// The Gemini CLI stream decoder, then the mapper, reducer fold and summary.
    GeminiCli,
    /// The Codex app-server decoder and the host's side of the channel (`rpc_client`).
    CodexAppServer,
    /// The ACP decoder and the host's side of the channel (`rpc_client`).
    Acp,
    /// The session-log reader (`panewise replay`), then the reducer fold.
    SessionLog,
    /// The chat-completions conversation reader (`panewise window`) and conversation building.
    Window,
    /// Generated histories through every window strategy, the safety properties checked on
    /// every visit (issue 31); an input is a case line, `<strategy> <seed>`.
    WindowProperties,
    /// Test-only: panics on an armed marker, to show the harness finds and saves a panic.
    Planted,
}

impl Target {
    /// The byte targets: every reader of untrusted bytes (not `planted`), each with seed files.
    pub const REAL: [Target; 7] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::GeminiCli,
        Target::CodexAppServer,
        Target::Acp,
        Target::SessionLog,
        Target::Window,
    ];

    /// The targets a plain `cargo xtask fuzz` and `cargo xtask ci` run: the byte targets, then
    /// the window stage's safety properties.
    pub const DEFAULT: [Target; 8] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::GeminiCli,
        Target::CodexAppServer,
        Target::Acp,
        Target::SessionLog,
        Target::Window,
        Target::WindowProperties,
    ];

    /// The name used on the command line and in `target/fuzz/<name>/`.
    pub fn name(self) -> &'static str {
        match self {
            Target::ClaudeCode => "claude-code",
            Target::Codex => "codex",
            Target::GeminiCli => "gemini-cli",
            Target::CodexAppServer => "codex-app-server",
            Target::Acp => "acp",
            Target::SessionLog => "session-log",
            Target::Window => "window",
            Target::WindowProperties => "window-properties",
            Target::Planted => "planted",
        }
    }

    /// The seed files, as globs relative to the workspace root: (directory, file extensions).
    pub fn seed_dirs(self) -> &'static [(&'static str, &'static [&'static str])] {
        match self {
            Target::ClaudeCode => &[("crates/providers/tests/data/claude-code", &["ndjson"])],
            Target::Codex => &[("crates/providers/tests/data/codex", &["jsonl"])],
            Target::GeminiCli => &[("crates/providers/tests/data/gemini-cli", &["jsonl"])],
            Target::CodexAppServer => {
                &[("crates/providers/tests/data/codex-app-server", &["ndjson"])]
            }
            Target::Acp => &[("crates/providers/tests/data/acp", &["ndjson"])],
            Target::SessionLog => &[("crates/pane-state/tests/data/golden", &["jsonl"])],
            Target::Window => &[("crates/window/tests/data", &["jsonl"])],
            // Its cases are generated, not mutated from files.
            Target::WindowProperties | Target::Planted => &[],
        }
    }

    /// Runs one input. Panics are the finding; everything else (errors included) is a pass.
    pub fn run(self, bytes: &[u8]) {
        match self {
            Target::ClaudeCode => decode(Provider::ClaudeCode, bytes),
            Target::Codex => decode(Provider::Codex, bytes),
            Target::GeminiCli => decode(Provider::GeminiCli, bytes),
            Target::CodexAppServer => {
                decode(Provider::CodexAppServer, bytes);
                rpc_client(RpcProtocol::CodexAppServer, bytes);
            }
            Target::Acp => {
                decode(Provider::Acp, bytes);
                rpc_client(RpcProtocol::Acp, bytes);
            }
            Target::SessionLog => session_log(bytes),
            Target::Window => window(bytes),
            Target::WindowProperties => super::properties::run_line(bytes),
            Target::Planted => planted(bytes),
        }
    }
}

/// The host's side of a JSON-RPC channel reads whatever the agent wrote, then answers every
/// request it learned of, sends a prompt and interrupts: errors are fine, panics are not.
fn rpc_client(protocol: RpcProtocol, bytes: &[u8]) {
    let mut client = RpcClient::new(
        protocol,
        ClientInfo {
            name: "fuzz".into(),
            title: "fuzz".into(),
            version: "0".into(),
        },
        ThreadOptions::default(),
        Some("resumed".into()),
    );
    client.open();
    let chunk = 1 + bytes.last().map_or(0, |b| usize::from(*b % 37));
    for piece in bytes.chunks(chunk) {
        client.read(piece);
    }
    client.prompt("fuzz");
    let _ignored = client.answer("0", true);
    let _ignored = client.answer("1", false);
    let _ignored = client.interrupt();
}

fn tables() -> &'static (ModelTable, PriceTable) {
    static TABLES: OnceLock<(ModelTable, PriceTable)> = OnceLock::new();
    TABLES.get_or_init(|| (ModelTable::built_in(), PriceTable::built_in()))
}

/// What `panewise decode` does: decode, map, fold, summarize, serialise, record.
fn decode(provider: Provider, bytes: &[u8]) {
    let mut decoder = Decoder::new(provider);
    let mut decoded = Vec::new();
    decoder.feed(bytes, &mut decoded);
    decoder.finish(&mut decoded);
    let counts = decoder.counts();

    // Fed in small pieces, as a pipe delivers them, the decoder must say the same.
    let chunk = 1 + bytes.first().map_or(0, |b| usize::from(*b % 61));
    let mut chunked_decoder = Decoder::new(provider);
    let mut chunked: Vec<Decoded> = Vec::new();
    for piece in bytes.chunks(chunk) {
        chunked_decoder.feed(piece, &mut chunked);
    }
    chunked_decoder.finish(&mut chunked);
    assert_eq!(
        decoded, chunked,
        "feeding {chunk}-byte pieces decoded differently"
    );
    assert_eq!(counts, chunked_decoder.counts());

    let events: Vec<&ProviderEvent> = decoded.iter().filter_map(|d| d.as_ref().ok()).collect();
    let (models, prices) = tables();
    let mut mapper = Mapper::new(provider, models.clone()).with_prices(prices.clone());
    let fold = fold_events(&mut mapper, events.iter().copied());
    let summary = summarize(&mapper, counts, events.iter().copied(), &fold.state);
    // What the host prints: each event and the summary as JSON, and the recorded log.
    for event in &events {
        let _ = serde_json::to_string(event);
    }
    let _ = serde_json::to_string(&summary);
    for (ts, msg) in &fold.messages {
        let entry = panewise_pane_state::log::LogEntry {
            ts: *ts,
            msg: msg.clone(),
        };
        let _ = panewise_pane_state::log::encode_entry(&entry);
    }
}

/// Readers stop at the first bad line, which would leave most mutated inputs unfolded; so a
/// rejected input is retried without the line named in the error, a few times.
const RETRIES_WITHOUT_BAD_LINE: usize = 4;

fn without_line(bytes: &[u8], line: usize) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if line >= 1 && line <= lines.len() {
        lines.remove(line - 1);
    }
    lines.join(&b'\n')
}

/// What `panewise replay` does: parse, fold twice, check checkpoints, serialise the state.
fn session_log(bytes: &[u8]) {
    let mut input = bytes.to_vec();
    for _ in 0..=RETRIES_WITHOUT_BAD_LINE {
        match parse_log_bytes(&input) {
            Ok(log) => return fold_log(&log),
            Err(error) => {
                let line = match error {
                    LogError::Malformed { line, .. }
                    | LogError::MissingVersion { line }
                    | LogError::NewerVersion { line, .. } => line,
                    #[allow(unreachable_patterns)]
                    _ => return,
                };
                input = without_line(&input, line);
            }
        }
    }
}

fn fold_log(log: &SessionLog) {
    let first = log.fold();
    let second = log.fold();
    assert!(first == second, "folding the same log twice differed (R91)");
    let _ = log.fold_checked();
    let _ = serde_json::to_string(&first);
    if let Some(reading) = first.plausible_reading() {
        let _ = reading.window.map(|w| reading.tokens as f64 / w as f64);
    }
}

/// What `panewise window` does up to the strategy visit: read the conversation, build it.
fn window(bytes: &[u8]) {
    let mut input = String::from_utf8_lossy(bytes).into_owned();
    for _ in 0..=RETRIES_WITHOUT_BAD_LINE {
        match openai::read_jsonl(&input) {
            Ok(parsed) => {
                let conversation: Conversation = Conversation::from_messages(parsed.messages);
                let _ = conversation.window_chars();
                let _ = conversation.chars_in(0..conversation.len());
                let _ = conversation.tokens_in(0..conversation.len());
                let _ = conversation.turns().count();
                for message in conversation.messages() {
                    let _ = openai::to_value(message).to_string();
                }
                return;
            }
            Err(WindowError::InvalidMessage { line, .. }) => {
                input = String::from_utf8_lossy(&without_line(input.as_bytes(), line)).into_owned();
            }
            Err(_) => return,
        }
    }
}

fn planted(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if text.contains(PLANTED_MARKER) && !text.contains("\"armed\":false") {
        panic!("planted panic: the harness found the armed marker");
    }
}
