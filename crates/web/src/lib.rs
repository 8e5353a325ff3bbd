//! # panewise-web
//!
//! `panewise web`: a client of the daemon, like the dashboard, that serves one page and a
//! small HTTP API to a browser — the inbox of every approval and question waiting across
//! sessions, the sessions, a live transcript — on 127.0.0.1 or a 0600 Unix socket. The daemon
//! itself keeps no network listener.
//!
//! ## Invariants
//! - Authentication is never optional, loopback included: every `/api` route but the pairing
//!   exchange needs a paired device's bearer token ([`guard`]).
//! - Every request's Host is on an allow-list (DNS rebinding); every request that is not a GET
//!   needs an allowed Origin (absent is refused) and a JSON body ([`guard::check`]).
//! - No cookie is set and no token is ever in a URL; tokens are stored hashed ([`pairing`]).
//! - Agent output reaches the page as JSON and is shown with `textContent` only, under a CSP
//!   without inline script.
//!
//! ## API boundary
//! The decisions are pure modules with table tests: [`routes`] (the route table), [`guard`]
//! (Host, Origin, method, credential), [`pairing`] (codes and device tokens, randomness and
//! clock passed in), [`inbox`] (the inbox, staleness, the transcript fold), [`push`] (Web
//! Push: subscriptions, the `[notify]` edges, what a push says, the push service's verdict).
//! The shell
//! ([`server`]) is axum; it reaches the daemon through the [`server::Daemon`] trait, so the
//! router is tested against a fake daemon (`tests/route_matrix.rs`).
//!
//! ## Where to start reading
//! [`guard::check`], then [`server::router`].

#![deny(missing_docs)]

pub mod guard;
pub mod inbox;
pub mod pairing;
pub mod push;
pub mod routes;
pub mod server;
