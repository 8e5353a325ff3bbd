//! Loopback ports into a bubblewrap box (`[sandbox] network = [PORT, …]`): the box keeps its
//! own network namespace, with nothing but its own loopback, and each listed port of this
//! machine's loopback is carried in by two forwarders joined by a Unix socket in the box's
//! private temporary directory:
//!
//! ```text
//! command ──TCP──▶ 127.0.0.1:PORT (box)  [panewise sandbox forward-inside, the box's first process]
//!                          │ Unix socket  $TMPDIR/.panewise-port-PORT.sock
//!                          ▼
//!                  panewise (outside) ──TCP──▶ 127.0.0.1:PORT (this machine)
//! ```
//!
//! Why not a hole in the namespace: a network namespace is all or nothing, and the kernel
//! cannot filter `connect` by address from seccomp; why not joining the box's namespace from
//! panewise: `setns` into it needs `CAP_SYS_ADMIN` in panewise's own user namespace, which an
//! unprivileged user does not have. The inside forwarder is the panewise binary itself, run
//! with the box's environment (no key) under the box's seccomp filter; it starts the command
//! as its child and ends with its status. What it is given to run is built by [`inside_argv`]
//! and read back by [`parse_link`] (pure, table-tested).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The hidden subcommand of `panewise sandbox` the inside forwarder runs as.
pub const INSIDE_VERB: &str = "forward-inside";

/// The longest path a Unix socket address holds (`sun_path`, with its terminating NUL).
const SUN_PATH_MAX: usize = 107;

/// One forwarded port and the Unix socket that carries it out of the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The TCP port, the same inside the box and outside.
    pub port: u16,
    /// The socket panewise listens on outside, seen at the same path inside.
    pub socket: PathBuf,
}

/// The socket carrying `port` out of a box whose private temporary directory is `tmpdir`.
pub fn socket_path(tmpdir: &Path, port: u16) -> Result<PathBuf, String> {
    let path = tmpdir.join(format!(".panewise-port-{port}.sock"));
    if path.as_os_str().len() > SUN_PATH_MAX {
        return Err(format!(
            "the box's temporary directory {} is too long for a Unix socket ({} bytes at most): \
             set TMPDIR to a shorter directory",
            tmpdir.display(),
            SUN_PATH_MAX
        ));
    }
    Ok(path)
}

/// The command the box runs instead of `command`: the panewise binary `exe` as the inside
/// forwarder of `links`, which then runs `command`.
pub fn inside_argv(exe: &Path, links: &[Link], command: &[OsString]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![exe.as_os_str().to_owned(), "sandbox".into()];
    argv.push(INSIDE_VERB.into());
    for link in links {
        argv.push("--link".into());
        let mut spec = OsString::from(format!("{}=", link.port));
        spec.push(link.socket.as_os_str());
        argv.push(spec);
    }
    argv.push("--".into());
    argv.extend(command.iter().cloned());
    argv
}

/// A `--link PORT=SOCKET` value read back.
pub fn parse_link(value: &OsStr) -> Result<Link, String> {
    let text = value
        .to_str()
        .ok_or_else(|| "--link: not UTF-8".to_owned())?;
    let (port, socket) = text
        .split_once('=')
        .ok_or_else(|| format!("--link `{text}`: expected PORT=SOCKET"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| format!("--link `{text}`: the port must be 1 to 65535"))?;
    if socket.is_empty() {
        return Err(format!("--link `{text}`: no socket path"));
    }
    Ok(Link {
        port,
        socket: PathBuf::from(socket),
    })
}

/// The exit code a shell gives for `status`: its code, or 128 + the signal that ended it.
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

/// The outside half: listens on each link's socket and carries every connection to
/// `127.0.0.1:PORT`. Dropping it stops the listeners and every connection it carries.
#[derive(Debug, Default)]
pub struct Outside {
    tasks: Vec<tokio::task::AbortHandle>,
}

impl Drop for Outside {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Outside {
    /// Binds every link's socket (in the box's private directory) and starts carrying.
    /// Must run inside a tokio runtime: the listeners are its tasks.
    pub fn start(links: &[Link]) -> std::io::Result<Outside> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| std::io::Error::other("forwarding ports into the box needs a runtime"))?;
        let _entered = handle.enter();
        let mut outside = Outside::default();
        for link in links {
            let listener = tokio::net::UnixListener::bind(&link.socket)?;
            let port = link.port;
            let task = handle.spawn(async move {
                let mut carried = tokio::task::JoinSet::new();
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((mut inner, _)) = accepted else { break };
                            carried.spawn(async move {
                                // A port with nothing listening: the inside connection closes,
                                // which the command sees as the connection refused or reset.
                                if let Ok(mut target) =
                                    tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                                {
                                    let _ended =
                                        tokio::io::copy_bidirectional(&mut inner, &mut target)
                                            .await;
                                }
                            });
                        }
                        Some(_done) = carried.join_next(), if !carried.is_empty() => {}
                    }
                }
            });
            outside.tasks.push(task.abort_handle());
        }
        Ok(outside)
    }
}

/// The inside half, run as the box's command: listens on `127.0.0.1:PORT` for each link,
/// runs `command` (stdio inherited) and carries each connection to the link's socket until
/// the command ends; returns its exit code. Errors say what could not be set up; the
/// command has not run then.
pub fn run_inside(links: &[Link], command: &[OsString]) -> Result<i32, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "no command to run".to_owned())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    runtime.block_on(async {
        let mut listeners = Vec::with_capacity(links.len());
        for link in links {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", link.port))
                .await
                .map_err(|error| format!("cannot listen on 127.0.0.1:{}: {error}", link.port))?;
            listeners.push((listener, link.socket.clone()));
        }
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot run {}: {error}", program.to_string_lossy()))?;
        let mut carried = tokio::task::JoinSet::new();
        for (listener, socket) in listeners {
            carried.spawn(async move {
                let mut connections = tokio::task::JoinSet::new();
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((mut inner, _)) = accepted else { break };
                            let socket = socket.clone();
                            connections.spawn(async move {
                                if let Ok(mut outer) = tokio::net::UnixStream::connect(&socket).await {
                                    let _ended =
                                        tokio::io::copy_bidirectional(&mut inner, &mut outer).await;
                                }
                            });
                        }
                        Some(_done) = connections.join_next(), if !connections.is_empty() => {}
                    }
                }
            });
        }
        let status = child
            .wait()
            .await
            .map_err(|error| format!("cannot wait for {}: {error}", program.to_string_lossy()))?;
        carried.abort_all();
        Ok(exit_code(status))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inside_argv_reads_back_to_its_links_and_command() {
        let links = vec![
            Link {
                port: 5173,
                socket: PathBuf::from("/tmp/box/.panewise-port-5173.sock"),
            },
            Link {
                port: 8080,
                socket: PathBuf::from("/tmp/box/.panewise-port-8080.sock"),
            },
        ];
        let command: Vec<OsString> = ["sh", "-c", "curl 127.0.0.1:5173 -- x"]
            .map(OsString::from)
            .to_vec();
        let argv = inside_argv(Path::new("/usr/bin/panewise"), &links, &command);
        assert_eq!(argv[1..3], [OsString::from("sandbox"), INSIDE_VERB.into()]);
        let separator = argv.iter().position(|arg| arg == "--").unwrap();
        assert_eq!(argv[separator + 1..], command[..]);
        let read: Vec<Link> = argv[3..separator]
            .chunks(2)
            .map(|pair| {
                assert_eq!(pair[0], "--link");
                parse_link(&pair[1]).unwrap()
            })
            .collect();
        assert_eq!(read, links);
    }

    #[test]
    fn a_bad_link_is_refused_with_its_reason() {
        let cases = [
            ("5173", "expected PORT=SOCKET"),
            ("0=/s", "1 to 65535"),
            ("65536=/s", "1 to 65535"),
            ("http=/s", "1 to 65535"),
            ("80=", "no socket path"),
        ];
        for (value, reason) in cases {
            let error = parse_link(OsStr::new(value)).unwrap_err();
            assert!(error.contains(reason), "{value}: {error}");
        }
    }

    #[test]
    fn a_socket_path_too_long_for_sun_path_is_refused() {
        assert!(socket_path(Path::new("/tmp/panewise-box-1-2-3"), 5173).is_ok());
        let long = PathBuf::from(format!("/{}", "d".repeat(100)));
        let error = socket_path(&long, 5173).unwrap_err();
        assert!(error.contains("too long for a Unix socket"), "{error}");
    }

    #[test]
    fn a_signal_ends_with_128_plus_its_number() {
        use std::os::unix::process::ExitStatusExt;
        let cases = [(0, 0), (3 << 8, 3), (9, 137), (15, 143)];
        for (raw, code) in cases {
            assert_eq!(
                exit_code(std::process::ExitStatus::from_raw(raw)),
                code,
                "{raw}"
            );
        }
    }
}
