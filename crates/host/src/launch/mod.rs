//! The launch layer: what to run, decided once for `panewise run`, the daemon's
//! `session/create` and its `session/resume`.
//!
//! [`resolve::resolve`] is pure (it and the plan are `panewise_core::launch`'s): a [`plan::LaunchRequest`] and the
//! [`plan::LaunchContext`] it is asked in become a [`plan::SessionPlan`] naming one
//! [`plan::AgentSpec`], or a [`crate::error::LaunchError`]. The context is gathered by
//! [`context`]: the asking client's working directory and its provider keys and endpoints
//! ([`panewise_api::ClientContext`], sent over the daemon's socket), the launching process's own
//! as the fallback, and `panewise.toml` read afresh for each request (the user file with the
//! project file found from the session's directory over it).

pub mod context;

pub use context::{
    client_context, client_env, launch_context, CLIENT_VARIABLES, CLI_CONFIG_VARIABLES,
};
pub use panewise_core::agent::{provider_of, ChannelName, Drive, ProviderName, Runs};
pub use panewise_core::launch::*;
