//! # panewise-window
//!
//! The context-window stage (being built; see issue 3).
#![deny(missing_docs)]
