//! The crate's error: what the shell reports when a notification from the daemon cannot be
//! read as an [`crate::Event`].

/// A notification that is not one the dashboard reads.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// Its params do not fit its method.
    #[error("the daemon's {method} notification does not read: {why}")]
    Notice {
        /// The notification's name.
        method: String,
        /// Why.
        why: String,
    },
}
