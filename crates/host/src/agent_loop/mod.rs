//! What panewise's own loop keeps beside the session engine: the window ledger of every visit
//! ([`ledger`]), the request check that refuses an orphan tool call or result ([`request`]),
//! the conversation kept beside its messages rendered once for the API ([`history`]), and
//! that conversation rebuilt from a recorded session's transcript to resume it ([`resume`]).
//! The loop itself is a session backend, [`crate::backend::model`].

pub mod history;
pub mod ledger;
pub mod own_loop;
pub mod request;
pub mod resume;
