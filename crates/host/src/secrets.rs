//! Which API key variables each process panewise starts goes without: the policy is
//! `panewise_core::secrets`'s, re-exported here.

pub use panewise_core::secrets::*;
