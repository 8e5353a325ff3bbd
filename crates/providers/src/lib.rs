//! # panewise-providers
//!
//! Provider stream decoders (being built; see issue 4).
#![deny(missing_docs)]
