//! What a session's log records, decided without writing it: the
//! [`transcript::TranscriptRecorder`] turns a session's events into transcript lines, which
//! the host's log writer appends.

pub mod transcript;
