//! The approval modes, strictest first: a leaf the policy ([`crate::approval`]), the sandbox's
//! plan and the configuration all name.

use panewise_providers::oneshot::Access;

/// How panewise answers an agent's permission requests and its own tools' calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Deny every request.
    ReadOnly,
    /// Ask the person on a terminal; without one, deny and say why.
    Ask,
    /// Allow file edits inside the working directory; ask for the rest.
    Auto,
    /// Allow every request.
    FullAccess,
}

impl ApprovalMode {
    /// Every mode, strictest first.
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::ReadOnly,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::FullAccess,
    ];

    /// The mode named `name` exactly as [`ApprovalMode::name`] spells it.
    pub fn from_name(name: &str) -> Option<ApprovalMode> {
        ApprovalMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
    }

    /// The mode's name as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::FullAccess => "full-access",
        }
    }

    /// What a channel that cannot ask (Codex `exec`, Gemini `-p`) lets the agent do in this
    /// mode: `ask` cannot ask there, so it is as strict as `read-only`.
    pub fn one_shot_access(self) -> Access {
        match self {
            ApprovalMode::ReadOnly | ApprovalMode::Ask => Access::ReadOnly,
            ApprovalMode::Auto => Access::EditWorkspace,
            ApprovalMode::FullAccess => Access::Full,
        }
    }
}
