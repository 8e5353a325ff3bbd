//! The deadlines the reducer armed, for every kind of session: one entry per kind and turn,
//! the earliest first.

use std::collections::BTreeMap;

use panewise_pane_state::cmd::DeadlineKind;
use panewise_pane_state::TurnId;
use tokio::time::{Duration, Instant};

/// A deadline that came due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// The turn it belongs to.
    pub turn: Option<TurnId>,
    /// Which deadline.
    pub kind: DeadlineKind,
    /// The reducer's stamp for it.
    pub deadline_ms: u64,
}

/// The armed deadlines.
#[derive(Debug, Default)]
pub struct Deadlines {
    armed: BTreeMap<(DeadlineKind, Option<TurnId>), (Instant, u64)>,
}

impl Deadlines {
    /// Arms (or re-arms) `kind` for `turn` at the reducer's `deadline_ms`, `now_ms` being the
    /// session clock now.
    pub fn schedule(
        &mut self,
        turn: Option<TurnId>,
        kind: DeadlineKind,
        deadline_ms: u64,
        now_ms: u64,
    ) {
        let at = Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_ms));
        self.armed.insert((kind, turn), (at, deadline_ms));
    }

    /// Disarms `kind` for `turn`.
    pub fn cancel(&mut self, turn: Option<TurnId>, kind: DeadlineKind) {
        self.armed.remove(&(kind, turn));
    }

    /// The earliest armed deadline, with its instant.
    pub fn next(&self) -> Option<(Instant, Due)> {
        self.armed
            .iter()
            .map(|((kind, turn), (at, deadline_ms))| {
                (
                    *at,
                    Due {
                        turn: *turn,
                        kind: *kind,
                        deadline_ms: *deadline_ms,
                    },
                )
            })
            .min_by_key(|(at, _)| *at)
    }
}
