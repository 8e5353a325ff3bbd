//! The launch decision: what to run, decided once for `panewise run`, the daemon's
//! `session/create` and its `session/resume`. [`resolve()`] turns a [`plan::LaunchRequest`]
//! and the [`plan::LaunchContext`] it is asked in (gathered by the host: files, environments)
//! into a [`plan::SessionPlan`] naming one [`plan::AgentSpec`], or a
//! [`crate::error::LaunchError`].

pub mod plan;
pub mod resolve;

pub use plan::{
    AgentSpec, KeySource, LaunchContext, LaunchRequest, MockServerSpec, OwnLoopSettings, Programs,
    Recorded, RecordedKind, SessionDir, SessionPlan,
};
pub use resolve::resolve;
