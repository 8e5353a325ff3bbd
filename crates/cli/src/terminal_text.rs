//! The terminal sanitiser lives in `panewise-tui` (the dashboard needs it too); the commands
//! use it from there.

pub use panewise_tui::text::{cell, escape_controls, one_line};
