//! The engine driven by scripted backends under paused time.
