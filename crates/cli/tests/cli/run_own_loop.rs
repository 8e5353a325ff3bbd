//! The `panewise run` binary on panewise's own loop: offline by default on a fresh machine,
//! the strategy swapped by editing `panewise.toml` alone, a missing key refused at start.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A fresh machine: empty HOME and XDG directories, no API keys, a project directory that is
/// a repository of its own (so no `panewise.toml` above it is read).
pub(crate) struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "data", "config", "project/.git"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The command `run` runs, for a test that sets its input or output itself.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_panewise"));
        command
            .args(args)
            .current_dir(self.path("project"))
            .env("HOME", self.path("home"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .stdin(Stdio::null());
        for variable in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "PANEWISE_LOG",
        ] {
            command.env_remove(variable);
        }
        command
    }
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The path printed after `label` on stderr.
fn printed_path(output: &Output, label: &str) -> PathBuf {
    let text = stderr(output);
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no `{label}` in {text}"));
    PathBuf::from(line.trim())
}

#[test]
fn run_with_no_provider_completes_offline_runs_the_shell_tool_and_names_its_files() {
    let machine = Machine::new();
    let output = machine.run(&["run", "say hello"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("ran shell `echo hello` (exit 0)"), "{err}");
    assert!(err.contains("window: token-budget"), "{err}");
    assert!(err.contains("--provider anthropic"), "{err}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("The command printed `hello`. Done."),
        "{stdout}"
    );
    let log = printed_path(&output, "panewise run: session log: ");
    let ledger = printed_path(&output, "panewise run: window ledger: ");
    assert!(log.starts_with(machine.path("data")), "{}", log.display());
    assert!(log.is_file() && ledger.is_file());
    // The recorded session replays, and replay shows the window's visits from the ledger.
    let replayed = machine.run(&["replay", log.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&replayed.stdout);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert!(shown.contains("2 visit(s), 0 engaged"), "{shown}");
    assert!(
        shown.contains("iteration 1: token-budget did not engage"),
        "{shown}"
    );
    // `panewise window` takes the recorded session as its conversation.
    std::fs::write(
        machine.path("sliding.json"),
        r#"{"strategy":"sliding-window","keepRecentTurns":1}"#,
    )
    .unwrap();
    let windowed = machine.run(&[
        "window",
        "--config",
        machine.path("sliding.json").to_str().unwrap(),
        log.to_str().unwrap(),
    ]);
    let shown = String::from_utf8_lossy(&windowed.stdout);
    assert!(windowed.status.success(), "{}", stderr(&windowed));
    assert!(shown.contains("messages    4 -> 4"), "{shown}");
    assert!(shown.contains("last-tool-result: turn 1"), "{shown}");
}

fn run_with_toml(machine: &Machine, toml: &str, log: &Path) -> String {
    std::fs::write(machine.path("project/panewise.toml"), toml).unwrap();
    let output = machine.run(&["run", "--log", log.to_str().unwrap(), "say hello"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let ledger = printed_path(&output, "panewise run: window ledger: ");
    std::fs::read_to_string(ledger).unwrap()
}

#[test]
fn editing_panewise_toml_alone_swaps_the_strategy_the_ledger_names() {
    let machine = Machine::new();
    let first = run_with_toml(
        &machine,
        "[window]\nstrategy = \"sliding-window\"\nkeepRecentTurns = 1\n",
        &machine.path("first.jsonl"),
    );
    let second = run_with_toml(
        &machine,
        "[window]\nstrategy = \"observation-masking\"\nkeepRecentObservations = 1\n",
        &machine.path("second.jsonl"),
    );
    assert!(first.contains("\"strategy\":\"sliding-window\""), "{first}");
    assert!(!first.contains("observation-masking"), "{first}");
    assert!(
        second.contains("\"strategy\":\"observation-masking\""),
        "{second}"
    );
    assert!(!second.contains("sliding-window"), "{second}");
}

#[test]
fn a_real_provider_without_its_key_fails_at_start_and_names_the_variable() {
    let machine = Machine::new();
    let output = machine.run(&["run", "--provider", "anthropic", "say hello"]);
    let err = stderr(&output);
    assert!(!output.status.success());
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("api_key_env"), "{err}");
    let sessions = machine.path("data/panewise/sessions");
    assert!(
        !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none(),
        "nothing was recorded"
    );
}

/// One vocabulary of provider names for both kinds of session: an unknown name is refused
/// before anything runs, and the refusal lists every valid one, the own loop's and the
/// supervised agents' alike.
#[test]
fn an_unknown_provider_is_refused_with_every_valid_name() {
    let machine = Machine::new();
    let output = machine.run(&["run", "--provider", "no-such-agent", "say hello"]);
    let err = stderr(&output);
    assert!(!output.status.success(), "{err}");
    for name in [
        "mock",
        "anthropic",
        "openai",
        "gemini",
        "claude-code",
        "codex",
        "gemini-cli",
        "acp",
    ] {
        assert!(
            err.split([' ', ',', '\n', '[', ']'])
                .any(|word| word == name),
            "`{name}` is not listed: {err}"
        );
    }
}

/// `--agent-cmd` names an ACP agent, so it goes with `--provider acp` alone.
#[test]
fn agent_cmd_without_the_acp_provider_is_refused() {
    let machine = Machine::new();
    let output = machine.run(&[
        "run",
        "--provider",
        "codex",
        "--agent-cmd",
        "some-agent --acp",
        "say hello",
    ]);
    let err = stderr(&output);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("--provider acp"), "{err}");
}

/// R95, R98: Ctrl-C stops the turn: the call's token is cancelled, the running `shell`'s
/// process group is killed, the call still gets a result (so no later request holds an
/// orphan), and the turn ends interrupted (exit code 20), not failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_running_tool_and_ends_the_turn_interrupted() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;

    let server = crate::start(panewise_mock_server::Scenario::SlowTool).await;
    let machine = Machine::new();
    std::fs::write(
        machine.path("project/panewise.toml"),
        format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    let log = machine.path("slow.jsonl");
    let mut command = Command::new(env!("CARGO_BIN_EXE_panewise"));
    command
        .args(["run", "--log", log.to_str().unwrap(), "wait for it"])
        .current_dir(machine.path("project"))
        .env("HOME", machine.path("home"))
        .env("XDG_DATA_HOME", machine.path("data"))
        .env("XDG_CONFIG_HOME", machine.path("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    let ledger = panewise_host::agent_loop::ledger::ledger_path(&log);
    // Wait until the slow command is running: its call is in the ledger.
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&ledger)
        .unwrap_or_default()
        .contains("tail -f /dev/null")
    {
        assert!(
            started.elapsed().as_secs() < 20,
            "the slow tool never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    kill(pid, Signal::SIGINT).unwrap();
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    server.shutdown().await;
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(20), "{err}");
    assert!(
        started.elapsed().as_secs() < 25,
        "the 30 s command was not stopped"
    );
    let written = std::fs::read_to_string(&ledger).unwrap();
    assert!(
        written.contains("interrupted by the person before it finished"),
        "{written}"
    );
    crate::assert_replays(&log);
}

#[test]
fn the_mock_runs_in_a_directory_of_its_own_that_goes_when_left_empty() {
    let machine = Machine::new();
    std::fs::create_dir_all(machine.path("tmp")).unwrap();
    let output = machine
        .command(&["run", "say hello"])
        .env("TMPDIR", machine.path("tmp"))
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("(removed: nothing was left in it)"), "{err}");
    let left: Vec<_> = std::fs::read_dir(machine.path("tmp"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name.to_string_lossy().starts_with("panewise-mock-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A run refused once its directory was made (a provider-side strategy the mock's model
    // does not offer) leaves nothing behind either.
    let strategy = machine.path("clear.json");
    std::fs::write(
        &strategy,
        r#"{"strategy":"anthropic-clear-tool-uses","triggerTokens":3000,"keepToolUses":2}"#,
    )
    .unwrap();
    let refused = machine
        .command(&["run", "--window", strategy.to_str().unwrap(), "go"])
        .env("TMPDIR", machine.path("tmp"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let left: Vec<_> = std::fs::read_dir(machine.path("tmp"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name.to_string_lossy().starts_with("panewise-mock-"))
        .collect();
    assert!(left.is_empty(), "a refused run left {left:?}");
}

#[test]
fn an_answer_that_cannot_be_written_to_stdout_fails_the_run() {
    let machine = Machine::new();
    for json in [false, true] {
        let mut args = vec!["run", "say hello"];
        if json {
            args.push("--json");
        }
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let output = machine.command(&args).stdout(full).output().unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "--json {json}: {err}");
        assert!(
            err.contains("the answer could not be written to standard output"),
            "{err}"
        );
    }
}

#[test]
fn a_prompt_line_that_is_not_utf8_is_taken_and_the_session_goes_on() {
    use std::io::Write;

    let machine = Machine::new();
    let log = machine.path("lines.jsonl");
    let mut child = machine
        .command(&["run", "--log", log.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"say h\xffllo\nsay hello again\n").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let replayed = machine.run(&["replay", "--json", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replayed.stdout);
    let prompts: Vec<String> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["entry"]["kind"] == "prompt")
        .filter_map(|line| line["entry"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(prompts, ["say h\u{fffd}llo", "say hello again"], "{text}");
}

/// `run --resume` of an own-loop session: the second session's first request to the model
/// carries the first session's prompt, answer, and tool call with its result, then the new
/// prompt; its log names the one it continues and keeps the recorded settings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_resume_sends_the_earlier_conversation_with_the_new_prompt() {
    let server = crate::start(panewise_mock_server::Scenario::ToolThenAnswer).await;
    let machine = Machine::new();
    std::fs::write(
        machine.path("project/panewise.toml"),
        format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    let first = machine.path("first.jsonl");
    let second = machine.path("second.jsonl");
    let window = machine.path("window.json");
    std::fs::write(
        &window,
        r#"{"strategy":"sliding-window","keepRecentTurns":4}"#,
    )
    .unwrap();
    let (first_arg, second_arg, window_arg) = (
        first.to_str().unwrap().to_owned(),
        second.to_str().unwrap().to_owned(),
        window.to_str().unwrap().to_owned(),
    );
    // The server runs on this test's runtime: the binary is waited for off it.
    let mut command = machine.command(&[
        "run",
        "--approval",
        "auto",
        "--window",
        &window_arg,
        "--log",
        &first_arg,
        "say hello",
    ]);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let before = server.log().len();
    let mut command = machine.command(&[
        "run",
        "--resume",
        &first_arg,
        "--log",
        &second_arg,
        "and now in French",
    ]);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("resuming"), "{err}");
    let requests: Vec<_> = server
        .log()
        .into_iter()
        .skip(before)
        .filter(|request| request.method == "POST")
        .collect();
    server.shutdown().await;
    let Some(request) = requests.first() else {
        panic!("the resumed session sent no request")
    };
    let messages = request.body["messages"].as_array().unwrap();
    let text = serde_json::to_string(messages).unwrap();
    let first_prompt = text.find("say hello").expect("the first prompt");
    let call = text.find("\"tool_use\"").expect("the tool call");
    assert!(text.contains("echo hello"), "{text}");
    // `auto` runs `shell` unasked inside the OS sandbox (bubblewrap, which .ci/run installs):
    // the call's result is the command's output.
    let result = text.find("\"tool_result\"").expect("the tool's result");
    assert!(text.contains("\"is_error\":false"), "{text}");
    let answer = text.find("The command printed").expect("the first answer");
    let new_prompt = text.find("and now in French").expect("the new prompt");
    assert!(
        first_prompt < call && call < result && result < answer && answer < new_prompt,
        "{text}"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{text}");

    let header = panewise_pane_state::parse_log_bytes(&std::fs::read(&second).unwrap())
        .unwrap()
        .header
        .unwrap();
    let canonical = std::fs::canonicalize(&first).unwrap();
    assert_eq!(header.resumed_from.as_deref(), canonical.to_str());
    assert_eq!(header.provider.as_deref(), Some("mock"));
    let settings = header.own_loop.unwrap();
    assert_eq!(settings.approval.as_deref(), Some("auto"));
    assert_eq!(
        settings.window.unwrap()["strategy"],
        serde_json::json!("sliding-window")
    );
    crate::assert_replays(&second);
}

/// A log written before transcripts were kept cannot be resumed, and says why.
#[test]
fn run_resume_of_a_log_without_a_transcript_is_refused() {
    let machine = Machine::new();
    let old = machine.path("old.jsonl");
    std::fs::write(&old, "{\"v\":2,\"header\":{\"agent_id\":\"mock\"}}\n").unwrap();
    let output = machine.run(&["run", "--resume", old.to_str().unwrap(), "go on"]);
    let err = stderr(&output);
    assert!(!output.status.success(), "{err}");
    assert!(err.contains("schema v2"), "{err}");
    assert!(err.contains("cannot be resumed"), "{err}");
}

/// The issue's done-when for prompt caching: an own-loop session of 40 tool rounds over the
/// Anthropic format, against the mock (which caches as the API does, `cache.rs`), reads at
/// least 90 % of its last call's input from the cache. Per-call figures come from the mock's
/// request log (what each answer reported; the session log keeps each call's prompt as one
/// sum), and the session log's totals are checked to be their sums.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forty_round_session_reads_nine_tenths_of_its_last_input_from_the_cache() {
    let server = crate::start(panewise_mock_server::Scenario::LongSession).await;
    let machine = Machine::new();
    let log = machine.path("long.jsonl");
    let output = run_anthropic_on_mock(&machine, &server, &[], &log, "count to forty").await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("All forty rounds"),
        "{err}"
    );
    let calls: Vec<_> = server
        .log()
        .into_iter()
        .filter(|request| request.method == "POST" && request.path == "/v1/messages")
        .collect();
    server.shutdown().await;
    let rounds = panewise_mock_server::LONG_SESSION_ROUNDS;
    assert_eq!(calls.len(), rounds + 1);

    let mut before: Option<panewise_mock_server::Usage> = None;
    for (index, call) in calls.iter().enumerate() {
        // The breakpoints: the system prompt, the last tool, the last block; never more
        // than four.
        let body = &call.body;
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        let tools = body["tools"].as_array().unwrap();
        assert!(tools.last().unwrap().get("cache_control").is_some());
        let last_block = body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert!(last_block.get("cache_control").is_some(), "call {index}");
        assert_eq!(body.to_string().matches("\"cache_control\"").count(), 3);
        let usage = call.usage.unwrap();
        // Each call reads all the call before it read and wrote: nothing earlier changed.
        if let Some(before) = before {
            assert_eq!(
                usage.cached_input_tokens,
                before.cached_input_tokens + before.cache_write_tokens,
                "call {index}: {usage:?}"
            );
        }
        before = Some(usage);
    }
    let last = before.unwrap();
    let share = last.cached_input_tokens as f64 / last.input_tokens as f64;
    println!(
        "last call: {} of {} input tokens read from the cache ({:.1} %)",
        last.cached_input_tokens,
        last.input_tokens,
        share * 100.0
    );
    assert!(share >= 0.9, "{last:?}: {share}");

    // The session log's totals are the calls' own figures, summed.
    let replayed = machine.run(&["replay", "--json", log.to_str().unwrap()]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    let totals = crate::replayed_state(&replayed.stdout)["session_totals"].clone();
    let sum = |pick: fn(&panewise_mock_server::Usage) -> u64| -> u64 {
        calls.iter().map(|call| pick(&call.usage.unwrap())).sum()
    };
    assert_eq!(
        totals["cached_input_tokens"],
        sum(|usage| usage.cached_input_tokens),
        "{totals}"
    );
    assert_eq!(
        totals["cache_write_input_tokens"],
        sum(|usage| usage.cache_write_tokens),
        "{totals}"
    );
    assert_eq!(
        totals["input_tokens"],
        sum(panewise_mock_server::Usage::uncached_input_tokens),
        "{totals}"
    );
    // Per call, the ledger's line in `panewise replay` gives the mock's own cached reads and
    // writes, and the cost split by kind.
    let replayed = machine.run(&["replay", log.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replayed.stdout);
    for (index, call) in calls.iter().enumerate() {
        let usage = call.usage.unwrap();
        let grouped = |n: u64| panewise_providers::call_usage::grouped(n);
        let expected = format!(
            "call {} (claude-sonnet-4-5): prompt {} = {} new + {} cache read + {} cache write",
            index + 1,
            grouped(usage.input_tokens),
            grouped(usage.uncached_input_tokens()),
            grouped(usage.cached_input_tokens),
            grouped(usage.cache_write_tokens),
        );
        let line = text
            .lines()
            .find(|line| line.trim_start().starts_with(&format!("{expected};")))
            .unwrap_or_else(|| panic!("no `{expected}` in {text}"));
        assert!(
            line.contains(" input + $") && line.contains(" cache read + $"),
            "{line}"
        );
    }
    crate::assert_replays(&log);
}

/// Rule: the provider's text in the window summary `run` prints (a call's model name) reaches
/// the terminal escaped, never interpreted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_name_with_an_escape_is_shown_escaped_in_the_window_summary() {
    let server = crate::start(panewise_mock_server::Scenario::ToolThenAnswer).await;
    let machine = Machine::new();
    let log = machine.path("escaped.jsonl");
    let output = run_anthropic_on_mock(
        &machine,
        &server,
        &["--model", "evil\u{1b}[31mred"],
        &log,
        "go",
    )
    .await;
    server.shutdown().await;
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(err.contains("call 1 (evil\\u{1b}[31mred)"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

/// `panewise run` of the own loop over Anthropic's format against `server`, with full access,
/// `extra` flags before the log and the prompt; waited for off the test's runtime, on which the
/// server runs.
pub(crate) async fn run_anthropic_on_mock(
    machine: &Machine,
    server: &panewise_mock_server::RunningServer,
    extra: &[&str],
    log: &Path,
    prompt: &str,
) -> Output {
    let mut args = vec![
        "run",
        "--provider",
        "anthropic",
        "--approval",
        "full-access",
    ];
    args.extend_from_slice(extra);
    args.extend(["--log", log.to_str().unwrap(), prompt]);
    let mut command = machine.command(&args);
    command
        .env("ANTHROPIC_API_KEY", "sk-ant-mock-key")
        .env("ANTHROPIC_BASE_URL", server.base_url());
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}
