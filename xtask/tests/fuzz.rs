//! The fuzz harness under `cargo test`: it finds and saves a planted panic, so it is known to
//! work, and a short run of every real target finds none. The test profile has overflow checks
//! on, so a wrapped sum counts as a panic here.
// Test helpers fail the test on a broken fixture, which is what `expect` is for here.
#![allow(clippy::expect_used)]

use std::path::PathBuf;

use xtask::fuzz::{self, Options, Target};
use xtask::metadata::workspace_root;

/// A directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("xtask-fuzz-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn options(iterations: u64, out_dir: PathBuf) -> Options {
    Options {
        iterations: Some(iterations),
        time_limit: None,
        seed: fuzz::DEFAULT_SEED,
        out_dir,
        root: workspace_root(),
    }
}

#[test]
fn overflow_checks_are_on_in_the_test_profile() {
    assert!(fuzz::overflow_checks_on());
}

#[test]
fn the_harness_finds_saves_and_reproduces_the_planted_panic() {
    let out = TempDir::new("planted");
    let report = fuzz::run(Target::Planted, &options(300, out.0.clone())).expect("fuzz run");
    assert_eq!(report.inputs, 300);
    // The unmutated seed is disarmed: only mutations arm it.
    assert!(fuzz::run_caught(Target::Planted, fuzz::PLANTED_SEED.as_bytes()).is_none());
    assert!(report.panics > 0, "no planted panic found in 300 inputs");
    assert!(!report.crashes.is_empty());
    for crash in &report.crashes {
        assert!(
            crash.starts_with(out.0.join("planted")),
            "{}",
            crash.display()
        );
        let name = crash.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            name.starts_with("crash-") && name.ends_with(".bin"),
            "{name}"
        );
        let input = std::fs::read(crash).expect("saved input");
        let message = fuzz::run_caught(Target::Planted, &input).expect("saved input panics");
        assert!(message.contains("planted panic"), "{message}");
        assert!(fuzz::reproduce(Target::Planted, crash).expect("readable"));
    }
}

#[test]
fn a_short_run_of_every_real_target_finds_no_panic() {
    let out = TempDir::new("real");
    for target in Target::REAL {
        let report = fuzz::run(target, &options(300, out.0.clone())).expect("fuzz run");
        assert_eq!(report.inputs, 300, "{}", target.name());
        assert_eq!(report.panics, 0, "{report}; saved: {:?}", report.crashes);
        assert!(report.slowest.1 > 0, "{}", target.name());
    }
}

/// The seeds are the real captures: every target has several, and they run clean.
#[test]
fn every_real_target_has_seed_files_that_run_clean() {
    for target in Target::REAL {
        let seeds = fuzz::load_seeds(&workspace_root(), target).expect("seed files readable");
        assert!(!seeds.is_empty(), "{} has no seed files", target.name());
        for seed in &seeds {
            assert_eq!(fuzz::run_caught(target, seed), None, "{}", target.name());
        }
    }
}

/// The first finding (R24/R69: the output estimate of a streamed-character counter saturated
/// at `u64::MAX` overflowed) stays a regression input of the session-log target.
#[test]
fn r69_the_first_finding_stays_fixed() {
    let golden = workspace_root().join("crates/pane-state/tests/data/golden/tool-call-turn.jsonl");
    let text = std::fs::read_to_string(golden).expect("golden log");
    let input = text.replacen(r#""chars":48"#, r#""chars":18446744073709551615"#, 2);
    assert_ne!(input, text, "the golden log streams characters");
    // The input does reach the saturated counter the estimate once overflowed on.
    let log = panewise_pane_state::parse_log(&input).expect("still a valid log");
    let saturated = log
        .entries
        .iter()
        .scan(log.initial_state(), |state, entry| {
            *state = panewise_pane_state::step(state.clone(), entry.ts, entry.msg.clone()).0;
            Some(state.turn_tokens.as_ref().map_or(0, |t| t.streamed_chars))
        })
        .any(|chars| chars == u64::MAX);
    assert!(saturated, "the counter never saturated");
    assert_eq!(fuzz::run_caught(Target::SessionLog, input.as_bytes()), None);
}

/// 10 000 nested arrays or objects, as a whole line and as a field, must be an error from
/// serde_json's recursion limit, never a stack overflow (which would abort this test binary).
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 10_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    for target in Target::REAL {
        let seeds = fuzz::load_seeds(&workspace_root(), target).expect("seed files readable");
        let seed = String::from_utf8_lossy(&seeds[0]).into_owned();
        for nested in [&arrays, &objects] {
            for input in [
                format!("{nested}\n{seed}"),
                format!("{seed}{{\"type\":{nested}}}\n"),
                format!("{{\"v\":1,\"ts\":1,\"msg\":{nested}}}\n"),
                format!("{{\"role\":\"user\",\"content\":{nested}}}\n"),
            ] {
                assert_eq!(
                    fuzz::run_caught(target, input.as_bytes()),
                    None,
                    "{}",
                    target.name()
                );
            }
        }
    }
}

#[test]
fn window_properties_counts_every_strategy_and_reruns_a_saved_case() {
    let out = TempDir::new("window-properties");
    let report = fuzz::run(Target::WindowProperties, &options(90, out.0.clone())).expect("run");
    assert_eq!(report.inputs, 90);
    assert_eq!(report.panics, 0, "{report}; saved: {:?}", report.crashes);
    let counts = report.properties.as_ref().expect("per-strategy counts");
    for tally in &counts.per_strategy {
        assert_eq!(tally.cases, 10, "{report}");
        assert!(tally.visits >= tally.cases, "{report}");
    }
    assert_eq!(counts.total().cases, 90);
    let printed = report.to_string();
    for name in panewise_window::properties::STRATEGIES {
        assert!(
            printed.contains(&format!("  {name}: 10 cases")),
            "{printed}"
        );
    }
    // A saved case is its line, and `--reproduce` reruns it; a line naming no case is no finding.
    let file = out.0.join("case.bin");
    let line = panewise_window::properties::case_line(2, 0x31);
    std::fs::write(&file, line).expect("write case");
    assert!(!fuzz::reproduce(Target::WindowProperties, &file).expect("readable"));
    assert!(fuzz::run_caught(Target::WindowProperties, b"no-such-strategy 0x1").is_none());
}
