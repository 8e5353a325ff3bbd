//! Tests of `panewise replay`.
