//! The floor of the daemon bench: the least a process can do to carry the fake agents' lines to
//! a subscriber, so the daemon's figures can be read beside it, measured in the same run.
//!
//! `floor_relay SOCKET FAKE CWD…` starts `FAKE` (the bench's `fake_claude`) once in each `CWD`,
//! as the daemon starts its agents (stdin and stdout piped), gives each the control line it
//! reads first, then connects to the Unix socket `SOCKET`, which the bench listens on: the
//! connection says every agent is started. It then reads one prompt line per agent from its own
//! stdin and hands line `i` to agent `i`, as `session/prompt` would. A thread per agent reads
//! its stdout pipe line by line and writes each line, prefixed with the agent's index and a
//! space (`3 {…}`), to the socket: no parsing, no log, no copy kept — one `read` wake-up and
//! one `write` per line, the socket's writer shared under a lock so lines never interleave.
//!
//! When its stdin ends it closes the agents' stdin (each fake agent then exits), waits for them
//! and their readers, and exits.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, fake, cwds @ ..] = args.as_slice() else {
        eprintln!("usage: floor_relay SOCKET FAKE CWD…");
        return ExitCode::FAILURE;
    };
    let mut agents: Vec<(Child, ChildStdin)> = Vec::with_capacity(cwds.len());
    for cwd in cwds {
        let spawned = Command::new(fake)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = spawned else {
            eprintln!("floor_relay: cannot start {fake} in {cwd}");
            return ExitCode::FAILURE;
        };
        let Some(mut stdin) = child.stdin.take() else {
            return ExitCode::FAILURE;
        };
        // The control session's `initialize`, which the fake agent reads and ignores.
        if stdin.write_all(b"{}\n").is_err() {
            return ExitCode::FAILURE;
        }
        agents.push((child, stdin));
    }
    let Ok(socket) = UnixStream::connect(socket) else {
        eprintln!("floor_relay: cannot connect to {socket}");
        return ExitCode::FAILURE;
    };
    let socket = Arc::new(Mutex::new(socket));
    let mut readers = Vec::with_capacity(agents.len());
    for (index, (child, _)) in agents.iter_mut().enumerate() {
        let Some(stdout) = child.stdout.take() else {
            return ExitCode::FAILURE;
        };
        let socket = Arc::clone(&socket);
        readers.push(std::thread::spawn(move || relay(index, stdout, &socket)));
    }
    // One prompt per agent, in order; then the end of stdin ends the run.
    let mut prompts = std::io::stdin().lock().lines();
    for (_, stdin) in &mut agents {
        let Some(Ok(prompt)) = prompts.next() else {
            break;
        };
        if writeln!(stdin, "{prompt}").is_err() {
            eprintln!("floor_relay: an agent ended before its prompt");
        }
    }
    for line in prompts {
        if line.is_err() {
            break;
        }
    }
    for (mut child, stdin) in agents {
        drop(stdin);
        let _ = child.wait();
    }
    for reader in readers {
        let _ = reader.join();
    }
    ExitCode::SUCCESS
}

/// Agent `index`'s stdout to the socket, line by line, each prefixed with `index`.
fn relay(index: usize, stdout: impl std::io::Read, socket: &Mutex<UnixStream>) {
    let mut stdout = BufReader::new(stdout);
    let prefix = format!("{index} ");
    let mut line = Vec::with_capacity(512);
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match stdout.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(mut socket) = socket.lock() else {
            return;
        };
        if socket.write_all(&line).is_err() {
            return;
        }
    }
}
