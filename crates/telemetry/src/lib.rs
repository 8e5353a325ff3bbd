//! OpenTelemetry export of panewise sessions (docs/TELEMETRY.md).
//!
//! Two halves. [`tracker`] is pure: it follows one session's [`Update`]s, stamped by the
//! caller, and says which spans, events and metric measurements they make ([`record`]), with
//! every name in [`names`]. [`export`] is the shell: one OTLP exporter per process, fed those
//! records through the SDK's batch processors (a bounded queue on their own threads, so a
//! session never waits on the network), flushed with a deadline on exit.
//!
//! Export is off unless configured ([`settings`]); content (prompts, answers, tool input and
//! output) is never exported, and headers (API keys) never reach a log, an attribute or a
//! `Debug` output.
//!
//! [`Update`]: panewise_host::session::Update

pub mod contract;
pub mod export;
pub mod names;
#[cfg(feature = "receiver")]
pub mod receiver;
pub mod record;
pub mod settings;
pub mod tracker;

pub use export::{Telemetry, TelemetryError};
pub use settings::{Protocol, Settings, SettingsError};
pub use tracker::{SessionInfo, Tracker};
