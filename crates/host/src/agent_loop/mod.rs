//! What panewise's own loop keeps beside the session engine: the window ledger of every visit
//! ([`ledger`]), the archive of every span the window let go of ([`archive`]), the request check that refuses an orphan tool call or result ([`request`]),
//! the conversation kept beside its messages rendered once for the API ([`history`]), and
//! that conversation rebuilt from a recorded session's transcript to resume it ([`resume`]).
//! The loop's decisions are the pure core [`own_loop`] (`OwnLoop::step(input) -> effects`, in
//! `panewise-core` with the history, request, resume and catalog modules re-exported here); the
//! session backend [`crate::backend::model`] is the shell that carries its effects out, and
//! this module writes what it records ([`ledger`]'s writer, [`archive`]).

pub mod archive;
pub mod ledger;
pub use panewise_core::agent_loop::{history, own_loop, request, resume, tool_catalog};

/// True for a file the own loop writes beside a session log (its window ledger, its archive):
/// it is not a session, and a listing of sessions leaves it out.
pub fn is_beside_log(path: &std::path::Path) -> bool {
    ledger::is_ledger(path) || archive::is_archive(path)
}
