//! Starting a command in a box: the private temporary directory, the seccomp program handed
//! to bubblewrap, or the Landlock-restricted thread the command is started from.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use tokio::process::{Child, Command};

use super::{
    bwrap, forward, landlock_box, probe, seccomp, BoxNetwork, BoxSpec, BoxedBy, Mechanism,
};
use crate::process::ProcessGroup;

static NEXT_BOX: AtomicU64 = AtomicU64::new(0);

/// What a boxed command holds until it is done: its temporary directory (removed on drop),
/// under Landlock the thread it was started from (whose end would kill it, as the
/// parent-death signal is the thread's), and the outside half of its forwarded ports.
#[derive(Debug)]
pub struct BoxGuard {
    tmpdir: PathBuf,
    _keep_thread: Option<mpsc::Sender<()>>,
    _ports: Option<forward::Outside>,
}

impl Drop for BoxGuard {
    fn drop(&mut self) {
        self._ports = None;
        let _gone = std::fs::remove_dir_all(&self.tmpdir);
    }
}

/// A started boxed command.
#[derive(Debug)]
pub struct Spawned {
    /// The process (`bwrap`, or the command itself under Landlock).
    pub child: Child,
    /// Its process group ([`crate::process::spawn`]).
    pub group: ProcessGroup,
    /// The box it runs in.
    pub spec: BoxSpec,
    /// Held until the command is done.
    pub guard: BoxGuard,
}

/// A fresh private directory for the box's `TMPDIR` (mode 0700, under the system's).
fn private_tmpdir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let name = format!(
        "panewise-box-{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT_BOX.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    // Its real path: bubblewrap binds and Landlock rules name it so.
    std::fs::canonicalize(&dir)
}

/// Starts `command` (a program and its arguments) in `boxed`, run in `cwd`; `setup` sets the
/// pipes. The environment is [`bwrap::box_env`] of panewise's own, whatever `setup` does.
pub fn spawn(
    boxed: BoxedBy,
    cwd: &Path,
    command: &[OsString],
    setup: impl FnOnce(&mut Command),
) -> std::io::Result<Spawned> {
    let cwd = std::fs::canonicalize(cwd)?;
    let tmpdir = private_tmpdir()?;
    let spec = BoxSpec {
        boxed,
        cwd: cwd.clone(),
        tmpdir: tmpdir.clone(),
    };
    let mut guard = BoxGuard {
        tmpdir,
        _keep_thread: None,
        _ports: None,
    };
    let env = bwrap::box_env(std::env::vars_os(), &spec);
    let program = seccomp::program(&spec.boxed.network).map_err(std::io::Error::other)?;
    match spec.boxed.mechanism {
        Mechanism::Bubblewrap => {
            let bwrap = probe::find_on_path("bwrap").ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "`bwrap` is not on PATH")
            })?;
            // The program goes through a pipe bubblewrap reads (`--seccomp FD`): made without
            // close-on-exec so bwrap inherits it, closed here once it is started.
            let (read, write) = nix::unistd::pipe().map_err(std::io::Error::from)?;
            std::fs::File::from(write).write_all(&seccomp::program_bytes(&program))?;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&read);
            // Loopback ports: the box runs the inside forwarder, which runs the command.
            let command = match &spec.boxed.network {
                BoxNetwork::LoopbackPorts(ports) => {
                    let links = ports
                        .iter()
                        .map(|&port| {
                            forward::socket_path(&spec.tmpdir, port)
                                .map(|socket| forward::Link { port, socket })
                        })
                        .collect::<Result<Vec<_>, String>>()
                        .map_err(std::io::Error::other)?;
                    guard._ports = Some(forward::Outside::start(&links)?);
                    let exe = std::env::current_exe()?;
                    forward::inside_argv(&exe, &links, command)
                }
                BoxNetwork::None | BoxNetwork::Full => command.to_vec(),
            };
            let mut process = Command::new(bwrap);
            process
                .args(bwrap::argv(&spec, Some(fd), &command))
                .current_dir(&cwd)
                .env_clear()
                .envs(env);
            setup(&mut process);
            let (child, group) = crate::process::spawn(&mut process)?;
            drop(read);
            Ok(Spawned {
                child,
                group,
                spec,
                guard,
            })
        }
        Mechanism::Landlock => {
            let (program_name, args) = command.split_first().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command to run")
            })?;
            let mut process = Command::new(program_name);
            process.args(args).current_dir(&cwd).env_clear().envs(env);
            setup(&mut process);
            let writable = spec.writable();
            let network = spec.boxed.network.clone();
            let handle = tokio::runtime::Handle::current();
            let (started_tx, started_rx) = mpsc::channel();
            let (keep_tx, keep_rx) = mpsc::channel::<()>();
            std::thread::spawn(move || {
                let started = landlock_box::restrict_thread(&writable, &network)
                    .and_then(|()| {
                        seccompiler::apply_filter(&program)
                            .map_err(|error| format!("seccomp: {error}"))
                    })
                    .map_err(std::io::Error::other)
                    .and_then(|()| {
                        let _runtime = handle.enter();
                        crate::process::spawn(&mut process)
                    });
                let ok = started.is_ok();
                let _receiver_gone = started_tx.send(started);
                if ok {
                    // Until the guard is dropped: this thread's end would kill the command.
                    let _done = keep_rx.recv();
                }
            });
            let (child, group) = started_rx.recv().map_err(|_| {
                std::io::Error::other("the sandbox's starting thread ended without a word")
            })??;
            guard._keep_thread = Some(keep_tx);
            Ok(Spawned {
                child,
                group,
                spec,
                guard,
            })
        }
    }
}
