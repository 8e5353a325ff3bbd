//! The daemon's peer-credential check: a client of another uid gets one `invalid_request`
//! error and is disconnected, and the daemon goes on serving its own user.
//!
//! The other uid's client is a few lines of Python run as `nobody` (65534): it needs root to
//! change uid and a `python3` that `nobody` can run. Without either the test says so and checks
//! the rest (the socket's mode, the daemon's own user served).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use panewise_api::{ErrorCode, ListParams, ListResult, Method};

use crate::daemon::{Daemon, DEADLINE};

/// The uid of `nobody`.
const OTHER_UID: u32 = 65534;

/// Connects to the socket, sends `session/list`, and prints whatever the daemon writes until it
/// closes the connection (or a 30 s timeout says it never did).
const CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}\n')
except OSError:
    pass
data = b''
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode())
print('CLOSED')
"#;

/// A `python3` another user can run: a system one (a shim under root's home is not).
fn system_python() -> Option<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| {
            std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o001 != 0)
        })
}

/// Opens `path` and every directory above it up to `top` to other users, as far as needed to
/// reach and connect to the socket (the daemon made them 0700 and the socket 0600).
fn open_to_others(socket: &Path, top: &Path) {
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut dir = socket.parent();
    while let Some(current) = dir {
        std::fs::set_permissions(current, std::fs::Permissions::from_mode(0o711)).unwrap();
        if current == top {
            break;
        }
        dir = current.parent();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_another_uid_is_refused_and_the_daemon_goes_on() {
    let daemon = Daemon::start().await;
    let socket = daemon.socket();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket is the user's alone");
    let is_root = nix::unistd::getuid().is_root();
    match (is_root, system_python()) {
        (true, Some(python)) => {
            open_to_others(&socket, daemon.dir.path());
            let mut command = Command::new(&python);
            command
                .arg("-c")
                .arg(CLIENT)
                .arg(&socket)
                .env_clear()
                .current_dir("/")
                .stdin(Stdio::null())
                .uid(OTHER_UID)
                .gid(OTHER_UID);
            let output = tokio::time::timeout(
                DEADLINE,
                tokio::task::spawn_blocking(move || command.output()),
            )
            .await
            .expect("the other user's client ended in time")
            .unwrap()
            .unwrap();
            assert!(output.status.success(), "{output:?}");
            let stdout = String::from_utf8(output.stdout).unwrap();
            let lines: Vec<&str> = stdout.lines().collect();
            // One error response, then the daemon closed the connection.
            assert_eq!(lines.len(), 2, "{stdout}");
            assert_eq!(lines[1], "CLOSED", "{stdout}");
            let refusal: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(refusal["jsonrpc"], "2.0");
            assert!(refusal["id"].is_null(), "{refusal}");
            assert!(
                refusal["result"].is_null(),
                "no session was listed: {refusal}"
            );
            assert_eq!(
                refusal["error"]["code"],
                ErrorCode::InvalidRequest.code(),
                "{refusal}"
            );
            let message = refusal["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("only the user who started it"),
                "{message}"
            );
        }
        (false, _) => eprintln!(
            "not root: this test cannot run a client as another uid; it checks the socket's \
             mode and that the daemon serves its own user"
        ),
        (true, None) => eprintln!(
            "no system python3 for another uid to run: this test checks the socket's mode and \
             that the daemon serves its own user"
        ),
    }
    // The daemon is unharmed: its own user's client is served, on a fresh connection too.
    let own = daemon.connect("own").await;
    let listed: ListResult = own.call(Method::List, ListParams {}).await.unwrap();
    assert!(listed.sessions.is_empty());
}
