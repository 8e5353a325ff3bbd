//! # panewise-telemetry
//!
//! OpenTelemetry export of panewise sessions (docs/TELEMETRY.md). Two halves. [`tracker`] is
//! pure: it follows one session's [`Update`]s, stamped by the caller, and says which spans,
//! events and metric measurements they make ([`record`]), with every name in [`names`].
//! [`export`] is the shell: one OTLP exporter per process, fed those records through the
//! SDK's batch processors, flushed with a deadline on exit.
//!
//! ## Invariants
//! - Export is off unless configured ([`settings`]); it never blocks a session: spans go to a
//!   bounded queue on the batch processor's thread, and a down endpoint costs one warning.
//! - Content (prompts, answers, tool input and output) is exported only when the settings opt
//!   in ([`tracker::Content`]), and then with every API key value the shell found redacted;
//!   headers (API keys) never reach a log, an attribute or a `Debug` output.
//! - Every name emitted is a constant of [`names`], and docs/TELEMETRY.md lists exactly those.
//!
//! ## API boundary
//! Reads the session protocol's [`Update`] and `panewise-protocol`'s `TelemetrySettings` (it
//! does not depend on the engine, `panewise-host`); the binary starts a [`Telemetry`],
//! attaches a [`export::SessionExport`] to each session with `Session::observe`, and shuts it
//! down at exit. Errors are [`TelemetryError`] and [`SettingsError`].
//!
//! ## Where to start reading
//! `tracker.rs` (the mapping, with its tests), then `names.rs`, then `export.rs`.
//!
//! [`Update`]: panewise_session_protocol::Update

pub mod contract;
pub mod export;
mod grpc;
pub mod names;
#[cfg(feature = "receiver")]
pub mod receiver;
pub mod record;
pub mod settings;
pub mod tracker;

pub use export::{Telemetry, TelemetryError};
pub use settings::{Protocol, Settings, SettingsError};
pub use tracker::{Content, SessionInfo, Tracker};
