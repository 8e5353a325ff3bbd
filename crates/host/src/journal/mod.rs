//! What a session writes and how it is found again: the session log
//! ([`session_log::SessionLogFile`]: the reducer's messages, checkpoints, notes and the
//! conversation's transcript lines, which `panewise_core`'s [`transcript::TranscriptRecorder`]
//! makes from a session's events), and [`files`]: collision-free session ids, files created
//! new with mode 0600, the lock a running session holds on its log, and opening a file to read
//! without blocking on one that is not regular.

pub mod files;
pub mod session_log;
pub use panewise_core::journal::transcript;
