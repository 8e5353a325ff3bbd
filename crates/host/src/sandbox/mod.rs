//! The OS sandbox every command of the own loop's `shell` tool runs in.
//!
//! Which box a command gets, and whether the person is asked first, is one pure decision
//! ([`plan_shell`]) of the approval mode, the `[sandbox]` settings and what the machine offers
//! (a [`Probe`], gathered once by [`probe::probe`]):
//!
//! | mode          | a mechanism is available                      | none is                                    |
//! |---------------|-----------------------------------------------|--------------------------------------------|
//! | `read-only`   | run, unasked, in the read-only box            | denied (as before the sandbox)             |
//! | `ask`         | ask, then run in the workspace box            | ask, then run unboxed                      |
//! | `auto`        | run, unasked, in the workspace box            | ask, saying once why there is no box       |
//! | `full-access` | run, no box                                   | run, no box                                |
//!
//! The read-only box: the whole file system read-only, no network. The workspace box: the
//! working directory and a private temporary directory (`TMPDIR`) writable, the rest
//! read-only, no network unless `[sandbox] network = true` (all of it) or a list of loopback
//! ports ([`forward`]: only those ports of this machine's loopback, through a forwarder).
//! Both: a PID namespace of their own
//! with their own `/proc` (panewise and the daemon are not visible), their own IPC namespace,
//! an environment built from an allow-list ([`bwrap::box_env`]: never an API key), and a
//! seccomp filter ([`seccomp`]) refusing io_uring, ptrace, process_vm_readv/writev and, without
//! network, sockets of any family but `AF_UNIX`.
//!
//! The mechanisms: bubblewrap (`bwrap` from `PATH`, driven by argv, [`bwrap::argv`]) where
//! unprivileged user namespaces work; else Landlock ([`landlock_box`]: read everything, write
//! only the writable roots, and no TCP without network), which cannot give the command a PID
//! namespace or its own `/proc`, as `panewise sandbox check` says. Never silently none: `auto`
//! then asks, and says why.

pub mod bwrap;
pub mod forward;
pub mod landlock_box;
pub mod probe;
pub mod run;
pub mod seccomp;

pub use panewise_core::sandbox::*;
pub use probe::probe;

/// The sandbox a session's `shell` calls get on this machine, probed now, under `settings`.
pub fn probed(settings: SandboxSettings) -> ShellSandbox {
    ShellSandbox::from_probe(settings, &probe())
}

#[cfg(test)]
mod tests;
