//! The host's clock: the one place panewise reads the time. Every input the runner folds is
//! stamped with it; the pure crates only ever see the stamped value.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the system clock is before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// A session's clock: the wall clock read once at the start, advanced by tokio's monotonic
/// clock. Stamps never go backwards when the system clock is set back, and a test with paused
/// tokio time moves the stamps the reducer sees along with the timers that fire.
#[derive(Debug, Clone, Copy)]
pub struct SessionClock {
    wall_at_start_ms: u64,
    start: tokio::time::Instant,
}

impl SessionClock {
    /// Starts the clock now.
    pub fn start() -> Self {
        SessionClock {
            wall_at_start_ms: now_ms(),
            start: tokio::time::Instant::now(),
        }
    }

    /// Milliseconds since the Unix epoch, on this session's clock.
    pub fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.wall_at_start_ms.saturating_add(elapsed)
    }
}
