//! The own loop's `shell` sandbox against the real kernel: in `auto` a command runs unasked in
//! a box that writes only its working directory and has no network unless `[sandbox] network
//! = true`; `panewise sandbox check` names the mechanism. bubblewrap must be installed (CI's
//! `.ci/run` installs Debian's `bubblewrap`): without it these tests fail, saying so.

use std::path::Path;

use crate::run_own_loop::{stderr, Machine};

const NOTE: &str = "[sandbox: writes outside the working directory are refused in mode auto]";

pub(crate) fn require_bwrap() {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()));
    assert!(
        found,
        "bubblewrap (`bwrap`) is not on PATH: the sandbox tests need it (apt-get install bubblewrap)"
    );
}

/// Every file under `dir` whose bytes contain `needle`.
pub(crate) fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path).is_ok_and(|bytes| {
                bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
            }) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Runs the `sandbox-probe` scenario in `auto` with `network` set in the user file; returns
/// the machine and whether the loopback connection printed `CONNECTED`.
fn probe_in_auto(network: bool) -> (Machine, bool) {
    require_bwrap();
    let machine = Machine::new();
    let work = machine.path("project/work");
    std::fs::create_dir_all(&work).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(work.join("port.txt"), port.to_string()).unwrap();
    std::fs::create_dir_all(machine.path("config/panewise")).unwrap();
    std::fs::write(
        machine.path("config/panewise/panewise.toml"),
        format!("[sandbox]\nnetwork = {network}\n"),
    )
    .unwrap();
    let output = machine.run(&[
        "run",
        "--approval",
        "auto",
        "--mock-scenario",
        "sandbox-probe",
        "--cwd",
        work.to_str().unwrap(),
        "probe the box",
    ]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    // Unasked: with no terminal an asked call would be denied, and it ran.
    assert!(err.contains("ran shell"), "{err}");
    assert_eq!(
        std::fs::read_to_string(work.join("ok.txt")).unwrap_or_default(),
        "inside\n",
        "{err}"
    );
    assert!(!machine.path("project/outside").exists(), "{err}");
    let connected = !files_containing(&machine.path("data"), "\\nCONNECTED").is_empty()
        || !files_containing(&machine.path("data"), "\nCONNECTED").is_empty();
    (machine, connected)
}

#[test]
fn in_auto_shell_runs_unasked_writes_inside_only_and_the_refusal_is_the_sandbox_s() {
    let (machine, connected) = probe_in_auto(false);
    let logs = files_containing(&machine.path("data"), NOTE);
    assert!(
        !logs.is_empty(),
        "no session file names the sandbox's refusal"
    );
    assert!(
        !files_containing(&machine.path("data"), "NOT-CONNECTED").is_empty(),
        "the connection's outcome is not in the log"
    );
    assert!(
        !connected,
        "a loopback connection got through a box without network"
    );
}

#[test]
fn a_loopback_connection_gets_through_only_with_sandbox_network_true() {
    let (_machine, connected) = probe_in_auto(true);
    assert!(
        connected,
        "`[sandbox] network = true` did not let the connection through"
    );
}

#[test]
fn sandbox_check_names_bubblewrap_on_this_machine() {
    require_bwrap();
    let machine = Machine::new();
    let output = machine.run(&["sandbox", "check"]);
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}{}", stderr(&output));
    assert!(out.contains("mechanism: bubblewrap"), "{out}");
    assert!(out.contains("landlock: ABI"), "{out}");
}

#[test]
fn sandbox_run_in_read_only_refuses_every_write() {
    require_bwrap();
    let machine = Machine::new();
    let output = machine.run(&[
        "sandbox",
        "run",
        "--mode",
        "read-only",
        "--",
        "sh",
        "-c",
        "echo x > f",
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("Read-only file system"),
        "{}",
        stderr(&output)
    );
    assert!(!machine.path("project/f").exists());
    let output = machine.run(&[
        "sandbox",
        "run",
        "--mode",
        "auto",
        "--",
        "sh",
        "-c",
        "echo x > f",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(machine.path("project/f").exists());
}

/// Accepts one connection on `listener` within 30 s, reads a line and answers `pong`;
/// returns the line, or `None` when nothing connected.
fn answer_one(listener: std::net::TcpListener) -> Option<String> {
    use std::io::{BufRead, Write};
    listener.set_nonblocking(true).ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let stream = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                if std::time::Instant::now() > deadline {
                    return None;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(_) => return None,
        }
    };
    stream.set_nonblocking(false).ok()?;
    let mut reader = std::io::BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    (&stream).write_all(b"pong\n").ok()?;
    Some(line.trim().to_owned())
}

/// `[sandbox] network = [PORT]`: under each mechanism the box reaches that port of this
/// machine's loopback both ways (a request and its answer), and no other port.
#[test]
fn a_loopback_port_listed_in_sandbox_network_is_reached_from_the_box_and_no_other_port() {
    require_bwrap();
    for mechanism in ["bubblewrap", "landlock"] {
        let machine = Machine::new();
        let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let allowed_port = allowed.local_addr().unwrap().port();
        let other_port = other.local_addr().unwrap().port();
        std::fs::create_dir_all(machine.path("config/panewise")).unwrap();
        std::fs::write(
            machine.path("config/panewise/panewise.toml"),
            format!("[sandbox]\nnetwork = [{allowed_port}]\nmechanism = \"{mechanism}\"\n"),
        )
        .unwrap();
        let server = std::thread::spawn(move || answer_one(allowed));
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{allowed_port} && echo ping >&3 && read reply <&3 \
             && echo \"got $reply\"; (echo x > /dev/tcp/127.0.0.1/{other_port}) 2>/dev/null \
             && echo OTHER-CONNECTED || echo OTHER-REFUSED"
        );
        let output = machine.run(&[
            "sandbox", "run", "--mode", "auto", "--", "bash", "-c", &script,
        ]);
        let out = String::from_utf8_lossy(&output.stdout);
        let label = format!("{mechanism}: {out}{}", stderr(&output));
        assert!(output.status.success(), "{label}");
        assert!(out.contains("got pong"), "{label}");
        assert!(out.contains("OTHER-REFUSED"), "{label}");
        assert_eq!(server.join().unwrap().as_deref(), Some("ping"), "{label}");
        other.set_nonblocking(true).unwrap();
        assert!(
            other.accept().is_err(),
            "{label}: the unlisted port was reached"
        );
        let check = machine.run(&["sandbox", "check"]);
        let check_out = String::from_utf8_lossy(&check.stdout);
        assert!(
            check_out.contains(&format!(
                "network in the ask/auto box: only 127.0.0.1 port {allowed_port}"
            )),
            "{check_out}"
        );
    }
}
