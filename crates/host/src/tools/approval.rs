//! The approval policy of panewise's own tools is the one policy of [`crate::approval`],
//! shared with the supervised agents' permission requests; this module only forwards to it,
//! so that there is one table and one "inside the working directory" check.

pub use crate::approval::{decide, ApprovalMode, Decision, ToolRequest};
