//! bubblewrap's command line for a box, and the environment a boxed command gets: pure
//! functions of the box, table-tested.

use std::ffi::OsString;

use super::{BoxKind, BoxNetwork, BoxSpec};

/// The variables a boxed command gets from panewise's environment, when set; everything
/// else (every API key among it) stays out. `TMPDIR` is set to the box's own directory.
pub const ENV_ALLOW: [&str; 13] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
];

/// The environment of a boxed command: the allowed variables of `vars` (panewise's own
/// environment) and `TMPDIR`, the box's temporary directory.
pub fn box_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    spec: &BoxSpec,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| ENV_ALLOW.iter().any(|allowed| name.as_os_str() == *allowed))
        .collect();
    env.push((
        OsString::from("TMPDIR"),
        spec.tmpdir.clone().into_os_string(),
    ));
    env
}

/// bubblewrap's arguments (after `bwrap`) running `command` in the box of `spec`:
/// everything read-only, then the writable roots bound over it, a fresh `/dev` and, in its
/// own PID namespace, a fresh `/proc`; a network namespace of its own (its own loopback only)
/// unless the box has the whole network (loopback ports come through [`super::forward`]); its own IPC namespace; killed with panewise; a session of its own (no
/// `TIOCSTI` into panewise's terminal); the seccomp program read from `seccomp_fd`.
pub fn argv(spec: &BoxSpec, seccomp_fd: Option<i32>, command: &[OsString]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--ro-bind", "/", "/", "--dev", "/dev"]
        .into_iter()
        .map(OsString::from)
        .collect();
    if spec.boxed.kind == BoxKind::Workspace {
        for root in spec.writable() {
            args.push("--bind".into());
            args.push(root.clone().into_os_string());
            args.push(root.into_os_string());
        }
    }
    args.extend(
        ["--unshare-pid", "--proc", "/proc", "--unshare-ipc"]
            .into_iter()
            .map(OsString::from),
    );
    if spec.boxed.network != BoxNetwork::Full {
        args.push("--unshare-net".into());
    }
    args.extend(
        ["--die-with-parent", "--new-session"]
            .into_iter()
            .map(OsString::from),
    );
    if let Some(fd) = seccomp_fd {
        args.push("--seccomp".into());
        args.push(fd.to_string().into());
    }
    args.push("--chdir".into());
    args.push(spec.cwd.clone().into_os_string());
    args.push("--".into());
    args.extend(command.iter().cloned());
    args
}
