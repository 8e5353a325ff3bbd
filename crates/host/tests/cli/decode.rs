//! Tests of `panewise decode`.
