//! The edits on message lists, without HTTP.
