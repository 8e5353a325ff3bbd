//! `cargo xtask e2e`: `panewise run` against the published CLIs, installed from npm at the
//! versions `e2e/versions.json` pins (into `target/e2e/`), talking to `panewise mock-server` on
//! 127.0.0.1 with HTTP(S) proxies pointed at it, so nothing leaves the machine. Each scenario
//! gets a fresh HOME and working directory under `target/e2e/runs/`.
//!
//! Claude Code runs as one persistent process per session; Codex (`exec --json`) and Gemini CLI
//! (`-p --output-format stream-json`) as one process per turn, a follow-up resuming the session.
//! Each case asserts the exit code, the file the agent was
//! or was not allowed to write, the replay of the session log against its closing checkpoint,
//! and token totals equal to the sum of the usage the mock reported, call by call. The
//! `*-sigterm-*` and `*-sigkill-*` cases signal panewise mid-turn and assert that no process of
//! the case (none carries its `HOME` any more) outlives it. The other cases have modules of
//! their own: the CLIs under the daemon (`e2e_daemon.rs`), restorable eviction and `recall`
//! through `run` and the daemon (`e2e_recall.rs`), the dashboard in tmux
//! (`e2e_dashboard.rs`), the dashboard over ssh (`e2e_ssh.rs`), the telemetry export
//! (`e2e_telemetry.rs`). What this runner and those cases share (the CLIs, the mock, the
//! checks of a session's log) is in `e2e_support.rs`, which names none of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::e2e_npm::install;
use crate::e2e_support::{
    check_header, check_totals, cli_env, processes_with_env, replay, start_mock, Cli, Mock,
    RESUME_PROMPT, SHELL, WRITE,
};

/// One scenario of one CLI.
struct Case {
    cli: Cli,
    name: &'static str,
    scenario: &'static str,
    approval: &'static str,
    /// The expected exit code of `panewise run`.
    exit: i32,
    /// Whether `hello.txt` must exist afterwards (`None`: not checked).
    file_written: Option<bool>,
    /// The prompts, one turn each, in one session.
    prompts: &'static [&'static str],
    /// How the case drives the session beyond its prompts.
    drive: Drive,
    /// `--channel`, when not the CLI's default (Codex `app-server`, Gemini CLI `acp`).
    channel: Option<&'static str>,
}

impl Case {
    /// The stream format the session log names (`agent_id`): the channel's.
    fn stream_format(&self) -> &'static str {
        match (self.cli, self.channel) {
            (Cli::Codex, None | Some("app-server")) => "codex-app-server",
            (Cli::Gemini, None | Some("acp")) => "acp",
            (cli, _) => cli.provider(),
        }
    }
}

/// How a case drives `panewise run`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drive {
    /// The prompts as arguments.
    Arguments,
    /// The prompts as lines of stdin, written at once (no PROMPT argument): the second waits in
    /// the reducer's queue while the first turn runs.
    StdinLines,
    /// Ctrl-C (SIGINT to panewise) once the agent's tool has started: the turn ends interrupted.
    Interrupt,
    /// A second `panewise run --resume` of the recorded session, with one more prompt.
    Resume,
    /// On a terminal (tmux): the approval question is answered `y`.
    TerminalYes,
    /// On a terminal (tmux), with the mock's `spoofed-command`: the question names the tool,
    /// shows the planted escape escaped, stays on screen, and `y` runs the command.
    TerminalQuestion,
    /// `signal` to panewise once the agent's tool has started: afterwards no process of the
    /// case (its `HOME`) is left, and the log replays; SIGTERM closes it with its checkpoint.
    Signal(Signal),
}

/// A signal an e2e case sends panewise mid-turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Term,
    Kill,
}

impl Signal {
    fn name(self) -> &'static str {
        match self {
            Signal::Term => "TERM",
            Signal::Kill => "KILL",
        }
    }
}

const CASES: &[Case] = &[
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-terminal-question",
        scenario: "spoofed-command",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::TerminalQuestion,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-terminal-question",
        scenario: "spoofed-command",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::TerminalQuestion,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-rate-limited",
        scenario: "rate-limit",
        approval: "ask",
        exit: 10,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-server-error",
        scenario: "server-error",
        approval: "ask",
        exit: 12,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-rate-limited",
        scenario: "rate-limit",
        approval: "ask",
        exit: 10,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-server-error",
        scenario: "server-error",
        approval: "ask",
        exit: 12,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-terminal-write-approved",
        scenario: "file-write",
        approval: "ask",
        exit: 0,
        file_written: Some(true),
        prompts: &[WRITE],
        drive: Drive::TerminalYes,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-tool-then-answer",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-approval-accepted",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::TerminalYes,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-approval-declined",
        scenario: "tool-then-answer",
        approval: "read-only",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-interrupt",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 20,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Interrupt,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-follow-up",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL, RESUME_PROMPT],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-resume",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-tool-then-answer",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-approval-accepted",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::TerminalYes,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-approval-declined",
        scenario: "tool-then-answer",
        approval: "read-only",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-interrupt",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 20,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Interrupt,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-follow-up",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL, RESUME_PROMPT],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-resume",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-interrupt",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 20,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Interrupt,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-stdin-prompts-queue",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL, "Now say done."],
        drive: Drive::StdinLines,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-resume",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-interrupt",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 20,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Interrupt,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-resume",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-write-allowed",
        scenario: "file-write",
        approval: "full-access",
        exit: 0,
        file_written: Some(true),
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-interrupt",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 20,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Interrupt,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-resume",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-write-allowed",
        scenario: "file-write",
        approval: "full-access",
        exit: 0,
        file_written: Some(true),
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-write-denied",
        scenario: "file-write",
        approval: "read-only",
        exit: 0,
        file_written: Some(false),
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Claude,
        name: "claude-write-allowed",
        scenario: "file-write",
        approval: "full-access",
        exit: 0,
        file_written: Some(true),
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-write-denied",
        scenario: "file-write",
        approval: "read-only",
        exit: 0,
        file_written: Some(false),
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-shell-tool",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-follow-up-prompt",
        scenario: "tool-then-answer",
        approval: "ask",
        exit: 0,
        file_written: None,
        prompts: &[WRITE, "Now say done."],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-server-error",
        scenario: "server-error",
        approval: "ask",
        exit: 12,
        file_written: None,
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-rate-limited",
        scenario: "rate-limit",
        approval: "ask",
        exit: 10,
        file_written: None,
        prompts: &[WRITE],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-tool-then-answer",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-follow-up-resumes",
        scenario: "tool-then-answer",
        approval: "auto",
        exit: 0,
        file_written: None,
        prompts: &[SHELL, "Now say done."],
        drive: Drive::Arguments,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Codex,
        name: "codex-exec-server-error",
        scenario: "server-error",
        approval: "read-only",
        exit: 12,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: Some("exec"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-tool-then-answer",
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-follow-up-resumes",
        scenario: "tool-then-answer",
        approval: "auto",
        exit: 0,
        file_written: None,
        prompts: &[SHELL, "Now say done."],
        drive: Drive::Arguments,
        channel: Some("stream-json"),
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-stream-server-error",
        scenario: "server-error",
        approval: "ask",
        exit: 12,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: Some("stream-json"),
    },
    // No process outlives its session: each CLI under SIGTERM (the session ends as a second
    // Ctrl-C ends it, exit 128 + 15) and SIGKILL (exit "137": killed by signal 9) of panewise
    // while the slow tool runs (`timeout 30 tail -f /dev/null`, whose `timeout` moves to a
    // process group of its own).
    Case {
        cli: Cli::Claude,
        name: "claude-sigterm-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 143,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Term),
        channel: None,
    },
    Case {
        cli: Cli::Claude,
        name: "claude-sigkill-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 137,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Kill),
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-sigterm-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 143,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Term),
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: "codex-appserver-sigkill-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 137,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Kill),
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-sigterm-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 143,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Term),
        channel: None,
    },
    Case {
        cli: Cli::Gemini,
        name: "gemini-acp-sigkill-mid-turn",
        scenario: "slow-tool",
        approval: "full-access",
        exit: 137,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Signal(Signal::Kill),
        channel: None,
    },
];

// Issue 18: a model API's 429 and 500 as each CLI reports them on each channel. The turn ends
// failed with the failure classified from what the CLI wrote (`FAILURE_CHECKS` names the kind
// and status each case must record), never "interrupted".
const FAILURE_CASES: &[Case] = &[
    failure_case(
        Cli::Codex,
        "codex-appserver-rate-limited",
        "rate-limit",
        10,
        None,
    ),
    failure_case(
        Cli::Codex,
        "codex-appserver-server-error",
        "server-error",
        12,
        None,
    ),
    failure_case(
        Cli::Codex,
        "codex-exec-rate-limited",
        "rate-limit",
        10,
        Some("exec"),
    ),
    failure_case(
        Cli::Gemini,
        "gemini-acp-rate-limited",
        "rate-limit",
        10,
        None,
    ),
    failure_case(
        Cli::Gemini,
        "gemini-acp-server-error",
        "server-error",
        12,
        None,
    ),
    failure_case(
        Cli::Gemini,
        "gemini-stream-rate-limited",
        "rate-limit",
        10,
        Some("stream-json"),
    ),
];

/// The failure kind (and HTTP status, when the CLI reports one) a failure case must record.
const FAILURE_CHECKS: &[(&str, &str, Option<u64>)] = &[
    ("codex-appserver-rate-limited", "rate_limited", Some(429)),
    // Codex says `internalServerError` and the provider's message, no status.
    ("codex-appserver-server-error", "server_error", None),
    ("codex-exec-rate-limited", "rate_limited", Some(429)),
    ("codex-exec-server-error", "server_error", None),
    ("gemini-acp-rate-limited", "rate_limited", Some(429)),
    ("gemini-acp-server-error", "server_error", Some(500)),
    // Gemini CLI's stream says "Resource has been exhausted" and no status; its exit code
    // (429 mod 256) comes after the failure.
    ("gemini-stream-rate-limited", "rate_limited", None),
    ("gemini-stream-server-error", "server_error", Some(500)),
];

const fn failure_case(
    cli: Cli,
    name: &'static str,
    scenario: &'static str,
    exit: i32,
    channel: Option<&'static str>,
) -> Case {
    Case {
        cli,
        name,
        scenario,
        approval: "full-access",
        exit,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel,
    }
}

/// The session a failure case recorded ended failed with the expected kind and status, and
/// the turn ended failed, not interrupted.
fn check_failure(panewise: &Path, dir: &Path, name: &str) -> Result<()> {
    let Some((_, kind, status)) = FAILURE_CHECKS.iter().find(|(case, ..)| *case == name) else {
        return Ok(());
    };
    let state = replay(panewise, &dir.join("session.jsonl"))?;
    let failure = &state["failure"]["failure"];
    ensure!(
        failure["kind"] == *kind,
        "failure {failure}, expected {kind}"
    );
    if let Some(status) = status {
        ensure!(
            failure["http_status"].as_u64() == Some(*status),
            "failure {failure}, expected HTTP {status}"
        );
    }
    ensure!(
        failure["message"]
            .as_str()
            .is_some_and(|text| !text.is_empty()),
        "the failure carries no message: {failure}"
    );
    ensure!(
        state["turn_phase"]["outcome"] == "errored",
        "the turn ended {}, not errored (failed)",
        state["turn_phase"]
    );
    Ok(())
}

// Issue 18: `--provider acp --agent-cmd "<gemini> --acp"` (any ACP agent, here Gemini CLI
// named by command), and a Codex resume whose thread is gone (the fallback starts a new one).
const ACP_AGENT_CASE: &str = "acp-agent-cmd-tool-then-answer";
const CODEX_LOST_THREAD_CASE: &str = "codex-appserver-resume-lost-thread";

const ISSUE18_CASES: &[Case] = &[
    Case {
        cli: Cli::Gemini,
        name: ACP_AGENT_CASE,
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Arguments,
        channel: None,
    },
    Case {
        cli: Cli::Codex,
        name: CODEX_LOST_THREAD_CASE,
        scenario: "tool-then-answer",
        approval: "full-access",
        exit: 0,
        file_written: None,
        prompts: &[SHELL],
        drive: Drive::Resume,
        channel: None,
    },
];

/// `panewise run --provider acp --agent-cmd "PROGRAM --acp"`: the session runs the turn, and
/// its log names the ACP channel and the agent's version.
fn acp_agent_case(panewise: &Path, program: &Path, version: &str, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mock = start_mock(panewise, "tool-then-answer", dir)?;
    let env = cli_env(Cli::Gemini, &home, &mock.url)?;
    let session = dir.join("session.jsonl");
    let output = Command::new(panewise)
        .args(["run", "--provider", "acp", "--agent-cmd"])
        .arg(format!("{} --acp", program.display()))
        .args(["--approval", "full-access", "--cwd"])
        .arg(&work)
        .arg("--log")
        .arg(&session)
        .arg("--capture")
        .arg(dir.join("capture.ndjson"))
        .arg(SHELL)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .output()
        .context("cannot run panewise run")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.code() == Some(0),
        "exit {:?}, expected 0; stderr:\n{stderr}",
        output.status.code()
    );
    check_header(&session, "acp", version, &work)?;
    let state = replay(panewise, &session)?;
    ensure!(
        state["turns_completed"] == 1,
        "turns completed: {}",
        state["turns_completed"]
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    ensure!(
        stdout.contains("hello"),
        "the answer is not on stdout: {stdout:?}"
    );
    Ok(())
}

/// Codex keeps its threads under `CODEX_HOME/sessions`: without them `thread/resume` fails.
fn forget_codex_threads(home: &Path) -> Result<()> {
    let sessions = home.join(".codex/sessions");
    ensure!(
        sessions.exists(),
        "Codex recorded no thread under {}",
        sessions.display()
    );
    std::fs::remove_dir_all(&sessions)?;
    Ok(())
}

/// A resume whose thread was lost went on in a new one: the resumed log names, last, another
/// agent session than the first (the one a further `--resume` continues).
fn check_lost_thread(first: &Path, second: &Path) -> Result<()> {
    let session_id = |path: &Path| -> Result<Option<String>> {
        Ok(std::fs::read_to_string(path)?
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|line| line["note"]["agent_session_id"].as_str().map(str::to_owned)))
    };
    let (before, after) = (session_id(first)?, session_id(second)?);
    ensure!(
        before.is_some() && after.is_some() && before != after,
        "the resumed run did not start a new thread: {before:?} then {after:?}"
    );
    Ok(())
}

/// A resumed run shows only its own turn: its stdout says none of the first run's answers
/// twice (a replayed history followed by the new turn would), and its log records no tool call
/// of the first run (a tool of the history, replayed as a new one).
fn check_resumed_output(panewise: &Path, first: &Path, second: &Path, stdout: &[u8]) -> Result<()> {
    let entries = |session: &Path, kind: &str, field: &str| -> Result<Vec<String>> {
        let output = Command::new(panewise)
            .args(["replay", "--json"])
            .arg(session)
            .output()?;
        Ok(output
            .stdout
            .split(|byte| *byte == b'\n')
            .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
            .filter(|line| line["type"] == "transcript" && line["entry"]["kind"] == kind)
            .filter_map(|line| {
                line["entry"][field]
                    .as_str()
                    .map(|text| text.trim().to_owned())
            })
            .filter(|text| !text.is_empty())
            .collect())
    };
    let first_calls = entries(first, "tool_call", "call_id")?;
    let phantom: Vec<String> = entries(second, "tool_call", "call_id")?
        .into_iter()
        .filter(|call| first_calls.contains(call))
        .collect();
    ensure!(
        phantom.is_empty(),
        "the resumed log records the first run's tool calls: {phantom:?}"
    );
    let stdout = String::from_utf8_lossy(stdout);
    for text in entries(first, "text", "text")? {
        let shown = stdout.matches(text.as_str()).count();
        ensure!(
            shown <= 1,
            "the resumed run repeats the first run's answer {text:?} ({shown} times): {stdout:?}"
        );
    }
    Ok(())
}

/// Runs every case whose name contains `filter` (every case without one); fails at the first
/// that does not hold.
pub fn run(root: &Path, filter: Option<&str>, capture: Option<&Path>) -> Result<()> {
    let target = root.join("target/e2e");
    let cases: Vec<&Case> = CASES
        .iter()
        .chain(FAILURE_CASES)
        .chain(ISSUE18_CASES)
        .filter(|case| filter.is_none_or(|filter| case.name.contains(filter)))
        .collect();
    let daemon_cases: Vec<&super::e2e_daemon::DaemonCase> = super::e2e_daemon::CASES
        .iter()
        .filter(|case| filter.is_none_or(|filter| case.name.contains(filter)))
        .collect();
    let telemetry_cases: Vec<&super::e2e_telemetry::TelemetryCase> = super::e2e_telemetry::CASES
        .iter()
        .filter(|case| filter.is_none_or(|filter| case.name.contains(filter)))
        .collect();
    let dashboard_cases: Vec<&super::e2e_dashboard::DashboardCase> = super::e2e_dashboard::CASES
        .iter()
        .filter(|case| filter.is_none_or(|filter| case.name.contains(filter)))
        .collect();
    let ssh_case = filter.is_none_or(|filter| super::e2e_ssh::NAME.contains(filter));
    let caller_path_case =
        filter.is_none_or(|filter| super::e2e_daemon::CALLER_PATH_NAME.contains(filter));
    let answers_case =
        filter.is_none_or(|filter| super::e2e_dashboard::ANSWERS_NAME.contains(filter));
    let context_case = filter.is_none_or(|filter| super::e2e_context::NAME.contains(filter));
    let questions = super::e2e_questions::wanted(filter);
    let window_floor_case =
        filter.is_none_or(|filter| super::e2e_window_floor::NAME.contains(filter));
    let recall_case = filter.is_none_or(|filter| super::e2e_recall::RUN_NAME.contains(filter));
    let mcp_case = filter.is_none_or(|filter| super::e2e_mcp::NAME.contains(filter));
    let daemon_recall_case =
        filter.is_none_or(|filter| super::e2e_recall::DAEMON_NAME.contains(filter));
    ensure!(
        context_case
            || mcp_case
            || window_floor_case
            || recall_case
            || daemon_recall_case
            || !cases.is_empty()
            || !daemon_cases.is_empty()
            || !telemetry_cases.is_empty()
            || !dashboard_cases.is_empty()
            || answers_case
            || questions != [false, false]
            || caller_path_case
            || ssh_case,
        "no e2e case matches {filter:?}"
    );
    let mut programs = Vec::new();
    if let Some(dir) = capture {
        std::fs::create_dir_all(dir)?;
    }
    for (cli, package, bin) in [
        (Cli::Claude, "@anthropic-ai/claude-code", "claude"),
        (Cli::Codex, "@openai/codex", "codex"),
        (Cli::Gemini, "@google/gemini-cli", "gemini"),
    ] {
        if cases.iter().any(|case| case.cli == cli)
            || daemon_cases.iter().any(|case| case.cli == cli)
            || telemetry_cases.iter().any(|case| case.cli == Some(cli))
            || dashboard_cases.iter().any(|case| case.cli == cli)
            || ((caller_path_case || questions.contains(&true)) && cli == Cli::Claude)
        {
            let (program, version) = install(root, &target, package, bin)?;
            programs.push((cli, program, version));
        }
    }
    super::cargo(&["build", "-p", "panewise-cli"], &[])?;
    // The binary cargo just built: under CARGO_TARGET_DIR when it is set.
    let panewise = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("debug/panewise");
    for case in &cases {
        let (program, version) = programs
            .iter()
            .find(|(cli, ..)| *cli == case.cli)
            .map(|(_, program, version)| (program.as_path(), version.as_str()))
            .context("the case's CLI was not installed")?;
        let dir = target.join("runs").join(case.name);
        if case.name == ACP_AGENT_CASE {
            acp_agent_case(&panewise, program, version, &dir)
        } else {
            run_case(&panewise, program, version, &dir, case)
        }
        .with_context(|| format!("e2e case {}", case.name))?;
        check_failure(&panewise, &dir, case.name)
            .with_context(|| format!("e2e case {}", case.name))?;
        if let Some(capture) = capture {
            for (from, to) in [
                ("capture.ndjson", format!("{}.ndjson", case.name)),
                (
                    "capture.ndjson.input.ndjson",
                    format!("{}.input.ndjson", case.name),
                ),
            ] {
                std::fs::copy(dir.join(from), capture.join(to))
                    .with_context(|| format!("saving the capture of {}", case.name))?;
            }
        }
        eprintln!("e2e: {}: ok", case.name);
    }
    for case in &daemon_cases {
        let program = programs
            .iter()
            .find(|(cli, ..)| *cli == case.cli)
            .map(|(_, program, _)| program.as_path())
            .context("the case's CLI was not installed")?;
        let dir = target.join("runs").join(case.name);
        super::e2e_daemon::run_case(&panewise, program, &dir, case)
            .with_context(|| format!("e2e case {}", case.name))?;
        eprintln!("e2e: {}: ok", case.name);
    }
    if caller_path_case {
        let name = super::e2e_daemon::CALLER_PATH_NAME;
        let program = programs
            .iter()
            .find(|(cli, ..)| *cli == Cli::Claude)
            .map(|(_, program, _)| program.as_path())
            .context("Claude Code was not installed")?;
        super::e2e_daemon::caller_path_case(&panewise, program, &target.join("runs").join(name))
            .with_context(|| format!("e2e case {name}"))?;
        eprintln!("e2e: {name}: ok");
    }
    if !telemetry_cases.is_empty() {
        let phoenix = super::e2e_telemetry::install(root)?;
        for case in &telemetry_cases {
            let program = case.cli.and_then(|wanted| {
                programs
                    .iter()
                    .find(|(cli, ..)| *cli == wanted)
                    .map(|(_, program, _)| program.as_path())
            });
            let dir = target.join("runs").join(case.name);
            super::e2e_telemetry::run_case(&panewise, &phoenix, program, &dir, case)
                .with_context(|| format!("e2e case {}", case.name))?;
            eprintln!("e2e: {}: ok", case.name);
        }
    }
    for case in &dashboard_cases {
        let (program, version) = programs
            .iter()
            .find(|(cli, ..)| *cli == case.cli)
            .map(|(_, program, version)| (program.as_path(), version.as_str()))
            .context("the case's CLI was not installed")?;
        let dir = target.join("runs").join(case.name);
        super::e2e_dashboard::run_case(&panewise, program, version, &dir, case)
            .with_context(|| format!("e2e case {}", case.name))?;
        eprintln!("e2e: {}: ok", case.name);
    }
    super::e2e_questions::run(&panewise, &target, &programs, questions)?;
    if answers_case {
        let name = super::e2e_dashboard::ANSWERS_NAME;
        super::e2e_dashboard::answers_case(&panewise, &target.join("runs").join(name))
            .with_context(|| format!("e2e case {name}"))?;
        eprintln!("e2e: {name}: ok");
    }
    if mcp_case {
        super::e2e_mcp::run(root, &target, &panewise)?;
    }
    if window_floor_case {
        let name = super::e2e_window_floor::NAME;
        super::e2e_window_floor::run_case(&panewise, &target.join("runs").join(name))
            .with_context(|| format!("e2e case {name}"))?;
        eprintln!("e2e: {name}: ok");
    }
    if context_case {
        let dir = target.join("runs").join(super::e2e_context::NAME);
        super::e2e_context::run_case(&panewise, &dir)
            .with_context(|| format!("e2e case {}", super::e2e_context::NAME))?;
        eprintln!("e2e: {}: ok", super::e2e_context::NAME);
    }
    for (run, name, case) in [
        (
            recall_case,
            super::e2e_recall::RUN_NAME,
            super::e2e_recall::run_case as fn(&Path, &Path) -> Result<()>,
        ),
        (
            daemon_recall_case,
            super::e2e_recall::DAEMON_NAME,
            super::e2e_recall::run_daemon_case,
        ),
    ] {
        if run {
            case(&panewise, &target.join("runs").join(name))
                .with_context(|| format!("e2e case {name}"))?;
            eprintln!("e2e: {name}: ok");
        }
    }
    if ssh_case {
        let dir = target.join("runs").join(super::e2e_ssh::NAME);
        super::e2e_ssh::run_case(&panewise, &dir)
            .with_context(|| format!("e2e case {}", super::e2e_ssh::NAME))?;
        eprintln!("e2e: {}: ok", super::e2e_ssh::NAME);
    }
    eprintln!(
        "e2e: {} cases passed",
        cases.len()
            + daemon_cases.len()
            + telemetry_cases.len()
            + dashboard_cases.len()
            + usize::from(answers_case)
            + questions.iter().filter(|wanted| **wanted).count()
            + usize::from(ssh_case)
            + usize::from(caller_path_case)
            + usize::from(context_case)
            + usize::from(window_floor_case)
            + usize::from(mcp_case)
            + usize::from(recall_case)
            + usize::from(daemon_recall_case)
    );
    Ok(())
}

fn run_case(panewise: &Path, program: &Path, version: &str, dir: &Path, case: &Case) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let home = dir.join("home");
    let work = dir.join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mock = start_mock(panewise, case.scenario, dir)?;
    let env = cli_env(case.cli, &home, &mock.url)?;
    let session = dir.join("session.jsonl");
    let mut command = Command::new(panewise);
    command
        .arg("run")
        .args([
            "--provider",
            case.cli.provider(),
            "--approval",
            case.approval,
            case.cli.program_flag(),
        ])
        .arg(program)
        .arg("--cwd")
        .arg(&work)
        .arg("--log")
        .arg(&session)
        .arg("--capture")
        .arg(dir.join("capture.ndjson"))
        .args(
            case.channel
                .map(|channel| ["--channel", channel])
                .into_iter()
                .flatten(),
        )
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if case.drive == Drive::StdinLines {
        command.stdin(Stdio::piped());
    } else {
        command.args(case.prompts).stdin(Stdio::null());
    }
    if case.drive == Drive::TerminalYes {
        return on_terminal(command, dir, case, &session, &mock, version, &work);
    }
    if case.drive == Drive::TerminalQuestion {
        command.current_dir(&work);
        let tool = match case.cli {
            Cli::Claude => "Bash",
            Cli::Codex => "shell",
            Cli::Gemini => "shell",
        };
        super::e2e_terminal::spoofed_command_shown_escaped(&command, dir, case.name, tool, &work)?;
        check_header(&session, case.stream_format(), version, &work)?;
        let state = replay(panewise, &session)?;
        ensure!(state["failure"].is_null(), "failure: {}", state["failure"]);
        let text = std::fs::read_to_string(&session)?;
        ensure!(answered_yes(&text), "the approval was not answered yes");
        return Ok(());
    }
    let mut child = command.spawn().context("cannot run panewise run")?;
    match case.drive {
        Drive::StdinLines => {
            use std::io::Write;
            let mut stdin = child.stdin.take().context("no stdin")?;
            for prompt in case.prompts {
                writeln!(stdin, "{prompt}")?;
            }
            // Dropping stdin ends the input: the session ends when both turns have.
        }
        Drive::Interrupt | Drive::Signal(_) => {
            wait_for_line(
                &session,
                "\"tool_start\"",
                std::time::Duration::from_secs(120),
            )?;
            let signal = match case.drive {
                Drive::Signal(signal) => {
                    // What the check afterwards looks for is there before: the CLI runs.
                    let marker = format!("HOME={}", home.display());
                    ensure!(
                        !processes_with_env(&marker).is_empty(),
                        "no process carries {marker} while the tool runs"
                    );
                    signal.name()
                }
                _ => "INT",
            };
            let pid = i32::try_from(child.id())?;
            let status = Command::new("kill")
                .args([&format!("-{signal}"), &pid.to_string()])
                .status()?;
            ensure!(status.success(), "kill -{signal} {pid} failed");
        }
        Drive::Arguments | Drive::Resume | Drive::TerminalYes | Drive::TerminalQuestion => {}
    }
    let output = child
        .wait_with_output()
        .context("waiting for panewise run")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A process killed by a signal exits "128 + the signal", as a shell reports it.
    let code = {
        use std::os::unix::process::ExitStatusExt;
        output
            .status
            .code()
            .or(output.status.signal().map(|signal| 128 + signal))
    };
    ensure!(
        code == Some(case.exit),
        "exit {code:?}, expected {}; stderr:\n{stderr}",
        case.exit
    );
    // A failure is said where the person looks, with its kind, and the exit with a sentence.
    if let Some(kind) = match case.exit {
        10 => Some("rate limited"),
        11 => Some("overloaded"),
        12 => Some("server error"),
        _ => None,
    } {
        ensure!(
            stderr.contains(&format!("panewise run: failed: {kind}"))
                || stderr.contains(&format!("panewise run: failed: the provider is {kind}")),
            "the failure is not said on stderr:\n{stderr}"
        );
        ensure!(
            stderr.contains(&format!("panewise run: exit {}: ", case.exit)),
            "the exit code comes without a sentence:\n{stderr}"
        );
    }
    if let Drive::Signal(signal) = case.drive {
        return after_signal(panewise, dir, case, signal, &session, &home);
    }
    if let Some(expected) = case.file_written {
        let written = work.join("hello.txt").exists();
        ensure!(
            written == expected,
            "hello.txt written: {written}, expected {expected}"
        );
    }
    check_header(&session, case.stream_format(), version, &work)?;
    check_capture(panewise, dir, case)?;
    let state = replay(panewise, &session)?;
    if case.stream_format() == "codex-app-server" && case.exit == 0 {
        // The context meter shows the window Codex itself reported (`modelContextWindow`).
        ensure!(
            state["context"]["window_source"] == "reported"
                && state["context"]["window"]
                    .as_u64()
                    .is_some_and(|window| window > 0),
            "Codex's context meter: {}",
            state["context"]
        );
    }
    match case.drive {
        Drive::Interrupt => {
            ensure!(
                state["turn_phase"]["kind"] == "done"
                    && state["turn_phase"]["outcome"] != "completed",
                "an interrupted turn ends interrupted: {}",
                state["turn_phase"]
            );
            ensure!(
                state["failure"].is_null(),
                "an interrupted turn is no failure: {}",
                state["failure"]
            );
        }
        _ if case.exit == 0 => {
            ensure!(
                state["turns_completed"].as_u64() == u64::try_from(case.prompts.len()).ok(),
                "turns completed: {}",
                state["turns_completed"]
            );
            // Gemini CLI over ACP reports only its `_meta.quota` counts, which are not the
            // API's per-call usage: the totals can be checked on the stream channels only.
            if case.drive != Drive::Resume && case.stream_format() != "acp" {
                check_totals(&state, &mock.log)?;
            }
        }
        _ => ensure!(!state["failure"].is_null(), "no failure recorded"),
    }
    if case.drive == Drive::Resume {
        if case.name == CODEX_LOST_THREAD_CASE {
            forget_codex_threads(&home)?;
        }
        resume(panewise, (case.cli, program), dir, &session, &env, &mock)?;
        if case.name == CODEX_LOST_THREAD_CASE {
            check_lost_thread(&session, &dir.join("resumed.jsonl"))?;
        }
    }
    Ok(())
}

/// After a signal to panewise: nothing of the case is left running (every process it started
/// carries the case's `HOME`), and the log replays; after SIGTERM it ends with the session's
/// closing checkpoint and its `quit`.
fn after_signal(
    panewise: &Path,
    dir: &Path,
    case: &Case,
    signal: Signal,
    session: &Path,
    home: &Path,
) -> Result<()> {
    let marker = format!("HOME={}", home.display());
    let left = || processes_with_env(&marker);
    let start = std::time::Instant::now();
    while !left().is_empty() && start.elapsed() < std::time::Duration::from_secs(15) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let left = left();
    ensure!(
        left.is_empty(),
        "still running after kill -{} of panewise: {left:?}",
        signal.name()
    );
    check_capture(panewise, dir, case)?;
    replay(panewise, session)?;
    if signal == Signal::Term {
        let text = std::fs::read_to_string(session)?;
        // The transcript's closing line follows the checkpoint.
        let last = text
            .lines()
            .rfind(|line| !line.contains("\"transcript\""))
            .unwrap_or_default();
        ensure!(
            last.contains("\"checkpoint\""),
            "the log does not end with its closing checkpoint: {last}"
        );
        ensure!(text.contains("\"type\":\"quit\""), "the log has no quit");
    }
    Ok(())
}

/// Runs `command` on a terminal (tmux), answers its approval question `y` once it is asked,
/// and checks the turn completed with the tool run.
fn on_terminal(
    command: Command,
    dir: &Path,
    case: &Case,
    session: &Path,
    mock: &Mock,
    version: &str,
    work: &Path,
) -> Result<()> {
    let mut command = command;
    command.current_dir(work);
    // What the scenario's model asks for: a file written (Claude Code's `Write`), or the shell
    // command (one tool name for every agent). Claude Code refuses a command holding control
    // characters itself ("would be hidden in the approval dialog"), so its question is about
    // the file it writes.
    let (tool, argument) = match case.scenario {
        "file-write" => ("Write", "hello.txt"),
        _ => ("shell", "echo hello"),
    };
    let (code, output) =
        super::e2e_terminal::question_stays(&command, dir, case.name, tool, argument)?;
    ensure!(
        code == case.exit,
        "exit {code}, expected {}; terminal:\n{output}",
        case.exit
    );
    if let Some(expected) = case.file_written {
        ensure!(
            work.join("hello.txt").exists() == expected,
            "hello.txt written: {}, expected {expected}",
            !expected
        );
    }
    check_header(session, case.stream_format(), version, work)?;
    let state = replay(&panewise_of(dir)?, session)?;
    ensure!(
        state["turns_completed"] == 1,
        "turns completed: {}",
        state["turns_completed"]
    );
    ensure!(state["failure"].is_null(), "failure: {}", state["failure"]);
    let text = std::fs::read_to_string(session)?;
    ensure!(answered_yes(&text), "the approval was not answered yes");
    if case.stream_format() != "acp" {
        check_totals(&state, &mock.log)?;
    }
    Ok(())
}

/// The `panewise` binary next to the case directory's run (the workspace's debug build).
fn panewise_of(dir: &Path) -> Result<PathBuf> {
    // Where cargo built it, as `run` finds it: under CARGO_TARGET_DIR when it is set.
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Ok(PathBuf::from(target).join("debug/panewise"));
    }
    let target = dir
        .ancestors()
        .find(|ancestor| ancestor.ends_with("target"))
        .context("the case directory is not under target/")?;
    Ok(target.join("debug/panewise"))
}

/// `panewise run --resume` of the recorded session: the CLI continues its own session (the mock
/// sees the first turn's conversation again), and both runs' usage adds up to the mock's.
fn resume(
    panewise: &Path,
    (cli, program): (Cli, &Path),
    dir: &Path,
    first: &Path,
    env: &[(String, String)],
    mock: &Mock,
) -> Result<()> {
    let requests_before = std::fs::read_to_string(&mock.log)?.lines().count();
    let second = dir.join("resumed.jsonl");
    let output = Command::new(panewise)
        .arg("run")
        .arg("--resume")
        .arg(first)
        .arg("--log")
        .arg(&second)
        .arg("--approval")
        .arg("full-access")
        .arg(cli.program_flag())
        .arg(program)
        .arg(RESUME_PROMPT)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .output()?;
    ensure!(
        output.status.success(),
        "the resumed run exited {:?}: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&second)?
            .lines()
            .next()
            .unwrap_or_default(),
    )?;
    ensure!(
        header["header"]["resumed_from"] == first.display().to_string(),
        "the resumed log names its origin: {}",
        header["header"]
    );
    check_resumed_output(panewise, first, &second, &output.stdout)?;
    let resumed_stderr = String::from_utf8_lossy(&output.stderr);
    if resumed_stderr.contains("starting a new one") {
        // Gemini CLI 0.61 over ACP advertises `loadSession` but answers the load of a session
        // it recorded with "No previous sessions found for this project", and Codex refuses a
        // thread it lost: the run goes on in a new session, which is all that can be checked.
        let state = replay(panewise, &second)?;
        ensure!(
            state["turns_completed"] == 1,
            "turns completed: {}",
            state["turns_completed"]
        );
        return Ok(());
    }
    // The resumed call carries the first turn: the first prompt is in its body.
    let log = std::fs::read_to_string(&mock.log)?;
    let resumed_call = log
        .lines()
        .skip(requests_before)
        .find(|line| line.contains("Now say done."))
        .context("the resumed run made no model call")?;
    ensure!(
        resumed_call.contains("echo hello"),
        "the resumed call does not carry the first turn"
    );
    let state = replay(panewise, &second)?;
    ensure!(
        state["turns_completed"] == 1,
        "turns completed: {}",
        state["turns_completed"]
    );
    Ok(())
}

/// `--capture` saved the raw stream, and it decodes as the provider's stream.
fn check_capture(panewise: &Path, dir: &Path, case: &Case) -> Result<()> {
    let capture = dir.join("capture.ndjson");
    let bytes = std::fs::metadata(&capture)
        .with_context(|| format!("no capture at {}", capture.display()))?
        .len();
    ensure!(bytes > 0, "the capture is empty");
    let decoded = Command::new(panewise)
        .args(["decode", "--provider", case.stream_format()])
        .arg(&capture)
        .output()?;
    ensure!(
        decoded
            .status
            .code()
            .is_some_and(|code| code != 2 && code != 3),
        "decode of the capture failed: {}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    Ok(())
}

/// Waits until a line of `path` contains `needle`.
fn wait_for_line(path: &Path, needle: &str, timeout: std::time::Duration) -> Result<()> {
    let start = std::time::Instant::now();
    while start.elapsed() < timeout {
        if std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle)) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    bail!("{} never held {needle} within {timeout:?}", path.display())
}

/// Whether a session log records an approval answered yes (a `msg` line of type
/// `approval_answered` with `approved: true`, whatever else the answer carries).
fn answered_yes(log: &str) -> bool {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|line| line["msg"]["type"] == "approval_answered" && line["msg"]["approved"] == true)
}
