//! A supervised agent that writes text deltas as fast as it can does not grow panewise's memory:
//! every queue between the agent's pipe and the front end is bounded and its producer waits
//! (docs/ARCHITECTURE.md, "Bounds"), so the reader never outruns the engine and the agent is
//! held back at its pipe.
//!
//! A test binary of its own: it samples this process's resident memory, which no other test
//! may share.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use panewise_host::approval::ApprovalMode;
use panewise_host::backend::cli::{Channel, CliAgent, CliLaunch};
use panewise_host::backend::Backend;
use panewise_host::session::lines::{
    drive, raise, signal_queue, Question, Signal, UserInput, View,
};
use panewise_host::session::{log_header, Session, SessionSpec};
use panewise_pane_state::State;
use panewise_providers::claude_control::ClaudeLaunch;
use panewise_providers::ProviderEvent;

/// How long the agent floods before the session is stopped.
const FLOOD: Duration = Duration::from_secs(5);

/// The resident memory reached by then is the baseline: the allocator's arenas, the log's
/// buffers and the channels at their bounds are in place.
const WARM_UP: Duration = Duration::from_millis(1500);

/// How far resident memory may grow past the baseline while the agent floods. Unbounded
/// queues grow it by hundreds of MB in this time (about 50 MiB a second were measured).
const GROWTH_BOUND_BYTES: u64 = 64 * 1024 * 1024;

/// The fewest text deltas the view must have seen: the agent did flood.
const FEWEST_DELTAS: usize = 20_000;

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","cwd":"/tmp","tools":["Bash"]}"#;

/// One of Claude Code's `--include-partial-messages` text deltas, as it writes them.
const DELTA: &str = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Working "}},"session_id":"s1","parent_tool_use_id":null,"uuid":"7fb75f32-0225-4ed7-b67d-6cf9d46d722e"}"#;

/// A view that counts what it is shown and keeps nothing.
#[derive(Default)]
struct Counting {
    deltas: usize,
}

impl View for Counting {
    fn agent_event(&mut self, event: &ProviderEvent) {
        if matches!(event, ProviderEvent::TextDelta { .. }) {
            self.deltas += 1;
        }
    }
    fn state(&mut self, _state: &State) {}
    fn ask(&mut self, _question: &Question) {}
    fn notice(&mut self, _text: &str) {}
}

/// This process's resident memory, from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

/// Samples resident memory every 50 ms until `done`: the baseline at [`WARM_UP`], and the
/// most seen after it.
fn sample(done: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, u64)> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut baseline = None;
        let mut most = 0;
        while !done.load(Ordering::Relaxed) {
            let now = resident_bytes();
            if start.elapsed() >= WARM_UP {
                let base = *baseline.get_or_insert(now);
                most = most.max(now).max(base);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let base = baseline.unwrap_or_else(resident_bytes);
        (base, most.max(base))
    })
}

struct Scratch {
    dir: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ignored = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_agent_flooding_its_stdout_with_text_deltas_does_not_grow_memory() {
    let scratch = Scratch {
        dir: std::env::temp_dir().join(format!("panewise-flood-{}", std::process::id())),
    };
    let _ignored = std::fs::remove_dir_all(&scratch.dir);
    std::fs::create_dir_all(&scratch.dir).unwrap();
    // Reads the control request and the prompt, says it started, then writes one text delta
    // after another for as long as it lives.
    let program = scratch.dir.join("fake-claude");
    std::fs::write(
        &program,
        format!("#!/bin/sh\nread init\nread prompt\necho '{INIT}'\nexec yes '{DELTA}'\n"),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = scratch.dir.join("session.jsonl");
    let channel = Channel::Claude(ClaudeLaunch::default());
    let header = log_header(
        channel.provider().as_str(),
        channel.model(),
        &scratch.dir,
        None,
    );
    let spec = SessionSpec {
        prompts: vec!["talk".to_owned()],
        approval: ApprovalMode::ReadOnly,
        ..SessionSpec::new(header, log.clone(), scratch.dir.clone())
    };
    let backend = CliAgent::new(CliLaunch {
        program: program.display().to_string(),
        channel,
        cwd: scratch.dir.clone(),
        env: Vec::new(),
        env_remove: Vec::new(),
        resume: None,
        capture: None,
        launcher: Default::default(),
        startup_limit: std::time::Duration::from_secs(60),
    })
    .unwrap();
    let (session, handle) = Session::new(spec, Backend::Cli(Box::new(backend))).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let sampler = sample(Arc::clone(&done));
    let (signals, signals_in) = signal_queue();
    tokio::spawn(async move {
        tokio::time::sleep(FLOOD).await;
        let _ended = raise(&signals, Signal::Terminate("the test's stop")).await;
    });
    let mut view = Counting::default();
    let outcome = drive(
        session,
        handle,
        UserInput::default(),
        Some(signals_in),
        &mut view,
    )
    .await;
    done.store(true, Ordering::Relaxed);
    let (baseline, most) = sampler.join().unwrap();
    assert!(outcome.is_ok(), "the session ends: {outcome:?}");
    let growth = most.saturating_sub(baseline);
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let logged = std::fs::metadata(&log).map(|meta| meta.len()).unwrap_or(0);
    eprintln!(
        "flood: {} deltas shown, log {:.1} MiB, resident {:.1} MiB after warm-up, at most {:.1} MiB (+{:.1} MiB)",
        view.deltas,
        mib(logged),
        mib(baseline),
        mib(most),
        mib(growth)
    );
    assert!(
        view.deltas >= FEWEST_DELTAS,
        "the agent did not flood: {} deltas",
        view.deltas
    );
    assert!(
        growth < GROWTH_BOUND_BYTES,
        "resident memory grew by {:.1} MiB while the agent flooded (bound {:.1} MiB): from {:.1} to {:.1} MiB",
        mib(growth),
        mib(GROWTH_BOUND_BYTES),
        mib(baseline),
        mib(most)
    );
}
