//! What panewise's own loop keeps beside the session engine: the window ledger of every visit
//! ([`ledger`]) and the request check that refuses an orphan tool call or result
//! ([`request`]). The loop itself is a session backend, [`crate::backend::model`].

pub mod ledger;
pub mod request;
