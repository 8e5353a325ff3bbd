//! Rule tests for the pane-state reducer: one module per rule group of the behaviour catalog
//! (Parts A–D, R1–R93). Every test is named after the rule it checks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod budget;
mod compaction;
mod context;
mod interaction;
mod part_a_fields;
mod phases;
mod root;
mod runner_cmds;
mod stats_failures_pending;
mod tokens_ledger;
mod watchdog;

// Golden session logs (insta snapshots) and property tests over random message sequences.
mod golden;
mod log_checkpoints;
mod properties;
mod transcript;
