//! The server's turn ledger (R71–R74): the turn as the user sees it, over however many CLI
//! passes. The reducer only stores and reads it; the server owns it.

use serde::{Deserialize, Serialize};

/// Window after a turn ended in which a held message still joins it (R24, R73).
pub const HELD_FLUSH_JOIN_MS: u64 = 10_000;

/// Who started a ledger turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOrigin {
    /// The person.
    User,
    /// An automation.
    Automated,
    /// The system.
    System,
}

/// How a ledger turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// It completed.
    Completed,
    /// Its process exited.
    Exited,
}

/// One snapshot of the ledger (R71). `turn_id`, `started_at_ms` and `active` are required, so a
/// snapshot without them fails to deserialise and is rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnLedger {
    /// The turn's id, increasing.
    pub turn_id: u64,
    /// The snapshot's sequence number within the turn.
    #[serde(default)]
    pub seq: u64,
    /// Who started the turn.
    #[serde(default)]
    pub origin: Option<TurnOrigin>,
    /// When the turn started.
    pub started_at_ms: u64,
    /// CLI passes in the turn.
    #[serde(default = "one")]
    pub passes: u64,
    /// Whether the turn is running.
    pub active: bool,
    /// Inputs sent in the turn.
    #[serde(default)]
    pub inputs: u64,
    /// Passes whose output is already in `output_tokens`.
    #[serde(default)]
    pub counted_passes: u64,
    /// Output tokens of the counted passes.
    #[serde(default)]
    pub output_tokens: u64,
    /// Cost of the counted passes.
    #[serde(default)]
    pub cost_usd: f64,
    /// Steps taken.
    #[serde(default)]
    pub steps: u64,
    /// Time spent in API calls.
    #[serde(default)]
    pub duration_api_ms: u64,
    /// When the last pass ended.
    #[serde(default)]
    pub last_pass_ended_at_ms: Option<u64>,
    /// Until when the turn is settling after a pass.
    #[serde(default)]
    pub settle_until_ms: Option<u64>,
    /// When the turn ended.
    #[serde(default)]
    pub ended_at_ms: Option<u64>,
    /// How it ended.
    #[serde(default)]
    pub end: Option<TurnEnd>,
}

fn one() -> u64 {
    1
}

impl TurnLedger {
    /// Whether `self` replaces `current` (R72): a larger turn id, or the same id with a `seq`
    /// at least as large.
    pub fn supersedes(&self, current: &TurnLedger) -> bool {
        self.turn_id > current.turn_id
            || (self.turn_id == current.turn_id && self.seq >= current.seq)
    }

    /// Not active, not ended, and within its settle deadline (R73).
    pub fn is_settling(&self, now_ms: u64) -> bool {
        !self.active
            && self.ended_at_ms.is_none()
            && self.settle_until_ms.is_some_and(|until| now_ms <= until)
    }

    /// Active or settling (R73).
    pub fn is_open(&self, now_ms: u64) -> bool {
        self.active || self.is_settling(now_ms)
    }

    /// When the turn ended, or `None` while it is open (R73).
    pub fn ended_at(&self, now_ms: u64) -> Option<u64> {
        if self.ended_at_ms.is_some() {
            return self.ended_at_ms;
        }
        if self.is_open(now_ms) {
            return None;
        }
        self.last_pass_ended_at_ms
    }

    /// The turn a held message being flushed joins: the open turn, or one that ended at most
    /// 10 s ago (R73).
    pub fn turn_to_join(&self, now_ms: u64) -> Option<u64> {
        if self.is_open(now_ms) {
            return Some(self.turn_id);
        }
        let ended = self.ended_at(now_ms)?;
        (now_ms.saturating_sub(ended) <= HELD_FLUSH_JOIN_MS).then_some(self.turn_id)
    }
}
