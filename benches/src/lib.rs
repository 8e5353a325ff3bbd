//! Generators of realistic workloads shared by the criterion benches in `benches/benches/`.
//!
//! Each stage gets its own module so a team can benchmark its stage alone:
//! `cargo bench -p panewise-benches --bench <name>`.
#![deny(missing_docs)]

pub mod decode;
pub mod reducer;
pub mod window;
