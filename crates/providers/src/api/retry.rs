//! The retry schedule: exponential backoff with jitter, a `retry-after` honoured, bounded by
//! attempts and by total waiting. Pure: the jitter is a number the transport draws and passes
//! in, and elapsed time is the transport's to measure.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When and how often a retryable failure is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The wait before the first retry, doubled for each one after it.
    pub base_delay: Duration,
    /// No single backoff wait is longer than this (a longer `retry-after` still counts
    /// against `max_total_wait`).
    pub max_delay: Duration,
    /// The waits of one call add up to no more than this; a retry that would exceed it is not
    /// made, and the failure is returned.
    pub max_total_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_total_wait: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before the retry that follows failed attempt `attempt` (1-based), or `None`
    /// when no retry is left: attempts spent, or the wait would take the total past its bound.
    ///
    /// `retry_after` (the server's wish) wins over the backoff when given. `jitter` in `[0, 1)`
    /// scales the backoff between half and all of it ("equal jitter"), so that clients that
    /// failed together do not retry together.
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        jitter: f64,
        waited_so_far: Duration,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let delay = match retry_after {
            Some(wait) => wait,
            None => {
                let exponent = attempt.saturating_sub(1).min(30);
                let full = self
                    .base_delay
                    .saturating_mul(1u32 << exponent)
                    .min(self.max_delay);
                let jitter = if jitter.is_finite() {
                    jitter.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                full.mul_f64(0.5 + 0.5 * jitter)
            }
        };
        (waited_so_far.saturating_add(delay) <= self.max_total_wait).then_some(delay)
    }
}
