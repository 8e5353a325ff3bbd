//! # panewise-pane-state
//!
//! The pane reducer (being built; see issue 2).
#![deny(missing_docs)]
