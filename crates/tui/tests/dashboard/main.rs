//! The dashboard's pure core tested on events alone: `update`'s effects compared whole,
//! `view` snapshot-tested on ratatui's `TestBackend`, and `update` fed random event sequences.

mod answers;
mod fixtures;
mod hosts;
mod props;
mod updates;
mod views;
