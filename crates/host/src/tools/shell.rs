//! `shell`: runs `sh -c COMMAND` in the working directory, in a process group of its own.
//!
//! stdout and stderr are read into one buffer in the order they arrive (as a terminal would
//! show them), up to the output cap; past it they are still read, so the command never blocks
//! on a full pipe, but only counted. When the command's `sh` exits, or the timeout passes, the
//! whole group is killed, and with it every process that left the group but carries the call's
//! mark or descends from it ([`crate::process`]). What left the group, and what could not be
//! killed, is said in the result; a process that both cleared its environment and lost its
//! parent cannot be found, and if one still holds the output pipe open the result says that.
//!
//! Where the session's mode boxes commands ([`crate::sandbox`]), `sh` runs in that box, and a
//! write or connection the box refused is named as the sandbox's in the result.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::output::CappedText;
use super::{ToolContext, ToolOutcome};

pub use panewise_core::tools::shell::*;

/// How long the output pipe may stay open after the command's `sh` exited and everything found
/// was killed: past it, something not found holds it, and the call ends saying so.
const PIPE_GRACE_AFTER_EXIT: Duration = Duration::from_secs(2);

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buffer: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buffer).await,
        None => Ok(0),
    }
}

/// Runs the command.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    if args.command.trim().is_empty() {
        return ToolOutcome::error(format!("{NAME}: `command` is empty"));
    }
    if args.timeout_ms == Some(0) {
        return ToolOutcome::error(format!("{NAME}: `timeout_ms` must be at least 1"));
    }
    let limits = context.limits;
    let timeout = args
        .timeout_ms
        .map_or(limits.shell_timeout, Duration::from_millis)
        .min(limits.max_shell_timeout);
    // One pipe for both streams, so their order is the order they were written: two pipes read
    // side by side would interleave by scheduling luck. `exec 2>&1` runs before the command is
    // parsed, so even its syntax errors come through stdout.
    let script = format!("exec 2>&1\n{}", args.command);
    // process: a process group of its own, marked, killed (with what left it) when dropped.
    // In a box (`context.shell_box`): the box's own environment (an allow-list, never a key)
    // and its temporary directory, held until the command is done (`_box_guard`); unboxed:
    // panewise's environment without the API keys (`context.env_remove`).
    let pipes = |command: &mut Command| {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    };
    let (mut child, group, boxed, _box_guard) = match &context.shell_box {
        Some(shell_box) => {
            let command = ["sh", "-c", script.as_str()].map(std::ffi::OsString::from);
            match crate::sandbox::run::spawn(shell_box.boxed.clone(), &context.cwd, &command, pipes)
            {
                Ok(spawned) => (
                    spawned.child,
                    spawned.group,
                    Some((spawned.spec, shell_box.mode)),
                    Some(spawned.guard),
                ),
                Err(error) => {
                    return ToolOutcome::error(format!(
                        "cannot start the sandbox ({}) for `sh` in {}: {error}; the command \
                         did not run (`panewise sandbox check` says what this machine offers)",
                        shell_box.boxed.mechanism.name(),
                        context.cwd.display()
                    ));
                }
            }
        }
        None => {
            let mut command = Command::new("sh");
            command
                .arg("-c")
                .arg(&script)
                .current_dir(&context.cwd)
                .env_clear()
                .envs(std::env::vars_os().filter(|(name, _)| {
                    !context
                        .env_remove
                        .iter()
                        .any(|removed| name.as_os_str() == removed.as_str())
                }));
            pipes(&mut command);
            match crate::process::spawn(&mut command) {
                Ok((child, group)) => (child, group, None, None),
                Err(error) => {
                    return ToolOutcome::error(format!(
                        "cannot run `sh` in {}: {error}",
                        context.cwd.display()
                    ));
                }
            }
        }
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut captured = CappedText::new(limits.output_bytes);
    let mut status = None;
    let mut killed = crate::process::KillReport::default();
    let mut pipe_held = false;
    let collect = async {
        let mut out_buffer = vec![0u8; 8192];
        let mut err_buffer = vec![0u8; 8192];
        let mut pipe_deadline: Option<tokio::time::Instant> = None;
        while stdout.is_some() || stderr.is_some() || status.is_none() {
            tokio::select! {
                read = read_some(&mut stdout, &mut out_buffer), if stdout.is_some() => match read {
                    Ok(0) | Err(_) => stdout = None,
                    Ok(count) => captured.push(out_buffer.get(..count).unwrap_or_default()),
                },
                read = read_some(&mut stderr, &mut err_buffer), if stderr.is_some() => match read {
                    Ok(0) | Err(_) => stderr = None,
                    Ok(count) => captured.push(err_buffer.get(..count).unwrap_or_default()),
                },
                exited = child.wait(), if status.is_none() => {
                    status = Some(exited);
                    // What the command left running in the background would hold the pipes
                    // open; it ends with the command.
                    killed.merge(group.kill());
                    pipe_deadline = Some(tokio::time::Instant::now() + PIPE_GRACE_AFTER_EXIT);
                }
                _ = tokio::time::sleep_until(pipe_deadline.unwrap_or_else(tokio::time::Instant::now)), if pipe_deadline.is_some() => {
                    // Everything found is dead, yet the pipe is open: a process not found holds it.
                    pipe_held = true;
                    break;
                }
                // Unreachable (each condition above keeps its branch enabled), but a select
                // with every branch disabled would panic.
                else => break,
            }
        }
    };
    let finished = tokio::time::timeout(timeout, collect).await.is_ok();
    if !finished {
        killed.merge(group.kill());
        let _reaped = child.wait().await;
    }
    let mut content = captured.finish();
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    // A refusal by the box reads as any failed write or connection: say whose it was.
    if let Some(note) = boxed
        .as_ref()
        .and_then(|(spec, mode)| spec.refusal_note(*mode, &content))
    {
        content.push_str(&note);
        content.push('\n');
    }
    let (footer, exit_code) = match (finished, status) {
        (false, _) => (
            format!(
                "[timed out after {} ms; the command's process group was killed]",
                timeout.as_millis()
            ),
            None,
        ),
        (true, Some(Ok(status))) => match status.code() {
            Some(code) => (format!("[exit code {code}]"), Some(code)),
            None => {
                let signal = status.signal().unwrap_or_default();
                (format!("[killed by signal {signal}]"), None)
            }
        },
        (true, Some(Err(error))) => (
            format!("[cannot read how the command ended: {error}]"),
            None,
        ),
        // The loop ends only once the exit status is read.
        (true, None) => ("[the command's end was not seen]".to_owned(), None),
    };
    content.push_str(&footer);
    for line in killed.lines() {
        content.push('\n');
        content.push_str(&line);
    }
    if pipe_held {
        content.push_str(
            "\n[something it started, which could not be found to be killed, still holds its \
             output open; output after this point is not shown]",
        );
    }
    ToolOutcome {
        content,
        is_error: exit_code != Some(0),
        exit_code,
        timed_out: !finished,
        path: None,
    }
}
