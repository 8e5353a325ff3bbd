//! A realistic session log for the reducer: turns of streamed output, model calls, tool starts
//! and ends, and turn results, in the proportions a coding agent produces them.

use panewise_pane_state::log::LogEntry;
use panewise_pane_state::msg::Msg;
use panewise_pane_state::SessionStats;

/// The clock the generated log starts at.
pub const START_MS: u64 = 1_764_500_000_000;

/// Generates `count` log entries of a realistic session.
///
/// The log opens with init and subscribe, then repeats turns: a user message, a few model calls
/// each with a burst of streamed output, a tool call between calls, and the turn's result.
pub fn realistic_log(count: usize) -> Vec<LogEntry> {
    let mut log = Recorder {
        now: START_MS,
        entries: Vec::with_capacity(count),
    };
    log.push(0, |at| Msg::InitReady { at });
    log.push(1, |at| Msg::StreamSubscribe { at });
    let tools = ["Bash", "Read", "Edit", "Grep"];
    let mut turn = 0u64;
    let mut context = 12_000u64;
    while log.entries.len() < count {
        turn += 1;
        log.push(2_000, |at| Msg::TurnStart {
            at,
            content: Some(format!("request {turn}")),
        });
        for call in 0..4u64 {
            context += 900;
            log.push(300, |_| Msg::TokensIn {
                input: context,
                model: Some("claude-sonnet-4-5".to_owned()),
                cache_read: None,
                cache_write: None,
                cache_write_1h: None,
                turn: None,
            });
            log.push(5, |at| Msg::StreamFlushObserved { added_count: 1, at });
            for _ in 0..12 {
                log.push(20, |_| Msg::OutputStreamed {
                    chars: 40,
                    turn: None,
                });
            }
            log.push(5, |_| Msg::TokensOut {
                output: 120,
                turn: None,
            });
            if call < 3 {
                let tool = tools[(turn + call) as usize % tools.len()];
                log.push(5, |_| Msg::ToolStart {
                    name: tool.to_owned(),
                    arg: Some("src/lib.rs".to_owned()),
                    turn: None,
                });
                log.push(400, |_| Msg::ToolEnd { turn: None });
                log.push(5, |_| Msg::RequestStarted { turn: None });
            }
        }
        log.push(50, |_| Msg::TurnEnd {
            stats: Some(SessionStats {
                cost_usd: Some(0.02),
                duration_ms: Some(9_000),
                input_tokens: Some(context * 4),
                output_tokens: Some(480),
                num_turns: Some(4),
                ..SessionStats::default()
            }),
            turn: None,
            interrupted: false,
        });
    }
    log.entries.truncate(count);
    log.entries
}

/// Appends entries with a clock that moves forward by the given step.
struct Recorder {
    now: u64,
    entries: Vec<LogEntry>,
}

impl Recorder {
    fn push(&mut self, advance_ms: u64, make: impl FnOnce(u64) -> Msg) {
        self.now += advance_ms;
        self.entries.push(LogEntry {
            ts: self.now,
            msg: make(self.now),
        });
    }
}
