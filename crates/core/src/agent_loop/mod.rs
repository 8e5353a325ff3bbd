//! panewise's own loop, decided: the pure core [`own_loop`] (`OwnLoop::step(input) ->
//! effects`) and its configuration ([`config`]), the conversation kept beside its messages
//! rendered once for the API ([`history`]), the request check that refuses an orphan tool
//! call or result ([`request`]), the conversation rebuilt from a recorded session's transcript
//! to resume it ([`resume`]), the tools a request offers and what they cost
//! ([`tool_catalog`]), and the window ledger's lines ([`ledger`]). The host's model backend is
//! the shell that carries the effects out.

pub mod config;
pub mod history;
pub mod ledger;
pub mod own_loop;
pub mod request;
pub mod resume;
pub mod tool_catalog;
