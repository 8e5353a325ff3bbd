//! Tests of the window stage, one module per rule group of `window-behaviour.md` (W1–W61).
//! Test names cite the rule they check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anchor;
mod anthropic_keys;
mod archive;
mod cache_guard;
mod drop;
mod engine;
mod floor;
mod masking;
mod model;
mod openai_round_trip;
mod pairing;
mod pins;
mod properties;
mod stage;
mod summarize;
mod support;
