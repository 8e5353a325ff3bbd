//! Tests of `panewise window`.
