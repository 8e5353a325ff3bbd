//! What every end-to-end case uses, the runner (`e2e.rs`) and the case modules (`e2e_*.rs`)
//! alike: the CLIs and the prompts the cases give them, the mock server and the environment
//! that points a CLI at it, the processes a case left running, and the checks of a session's
//! log (its replay, its header, its token totals). It names no other e2e module, so a case
//! module can use it without reaching back to the runner that calls it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

/// The CLI a case supervises.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cli {
    Claude,
    Codex,
    Gemini,
}

impl Cli {
    /// `--provider` of `panewise run`.
    pub(crate) fn provider(self) -> &'static str {
        match self {
            Cli::Claude => "claude-code",
            Cli::Codex => "codex",
            Cli::Gemini => "gemini-cli",
        }
    }

    /// The variable that names the executable the daemon starts for the CLI.
    pub(crate) fn daemon_variable(self) -> &'static str {
        match self {
            Cli::Claude => "PANEWISE_CLAUDE",
            Cli::Codex => "PANEWISE_CODEX",
            Cli::Gemini => "PANEWISE_GEMINI",
        }
    }

    /// The flag of `panewise run` that names the executable.
    pub(crate) fn program_flag(self) -> &'static str {
        match self {
            Cli::Claude => "--claude",
            Cli::Codex => "--codex",
            Cli::Gemini => "--gemini",
        }
    }
}

pub(crate) const WRITE: &str = "Create a file hello.txt containing hello, using your tools.";

pub(crate) const SHELL: &str = "Run echo hello with your shell tool, then tell me what it printed.";

pub(crate) const RESUME_PROMPT: &str = "Now say done.";

/// A mock server for one case, stopped when dropped.
pub(crate) struct Mock {
    child: Child,
    pub(crate) url: String,
    pub(crate) log: PathBuf,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

pub(crate) fn start_mock(panewise: &Path, scenario: &str, dir: &Path) -> Result<Mock> {
    use std::io::BufRead;
    let log = dir.join("mock.jsonl");
    let mut child = Command::new(panewise)
        .args([
            "mock-server",
            "--port",
            "0",
            "--scenario",
            scenario,
            "--log",
        ])
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start panewise mock-server")?;
    let mut first = String::new();
    if let Some(stdout) = child.stdout.take() {
        std::io::BufReader::new(stdout).read_line(&mut first)?;
    }
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://127.0.0.1:"))
        .map(str::to_owned)
        .with_context(|| format!("the mock server said {first:?}"))?;
    Ok(Mock { child, url, log })
}

/// The environment that points `cli` at the mock (and nowhere else), with the files it reads
/// under `home`.
pub(crate) fn cli_env(cli: Cli, home: &Path, url: &str) -> Result<Vec<(String, String)>> {
    const KEY: &str = "sk-e2e-not-a-real-key";
    let mut env: Vec<(&str, String)> = vec![
        ("HOME", home.display().to_string()),
        ("HTTP_PROXY", url.to_owned()),
        ("HTTPS_PROXY", url.to_owned()),
        ("NO_PROXY", "127.0.0.1".to_owned()),
    ];
    match cli {
        Cli::Claude => env.extend([
            ("ANTHROPIC_BASE_URL", url.to_owned()),
            ("ANTHROPIC_API_KEY", KEY.to_owned()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
            ("DISABLE_TELEMETRY", "1".to_owned()),
            ("DISABLE_ERROR_REPORTING", "1".to_owned()),
            ("DISABLE_AUTOUPDATER", "1".to_owned()),
            ("CLAUDE_CODE_MAX_RETRIES", "1".to_owned()),
        ]),
        Cli::Codex => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home)?;
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\
                     check_for_update_on_startup = false\n\n\
                     [model_providers.mock]\nname = \"mock\"\nbase_url = \"{url}/v1\"\n\
                     env_key = \"PANEWISE_E2E_KEY\"\nwire_api = \"responses\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\n\n\
                     [analytics]\nenabled = false\n\n\
                     [features]\nplugins = false\nremote_plugin = false\napps = false\n"
                ),
            )?;
            env.extend([
                ("CODEX_HOME", codex_home.display().to_string()),
                ("PANEWISE_E2E_KEY", KEY.to_owned()),
            ]);
        }
        Cli::Gemini => {
            let gemini_home = home.join(".gemini");
            std::fs::create_dir_all(&gemini_home)?;
            std::fs::write(
                gemini_home.join("settings.json"),
                serde_json::json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    // Two attempts per call, as Claude Code gets one retry and Codex none:
                    // headless Gemini CLI retries a 429 or 5xx silently (ten attempts by
                    // default, minutes of backoff), longer than a turn may stay unanswered.
                    "general": {
                        "enableAutoUpdate": false,
                        "enableAutoUpdateNotification": false,
                        "maxAttempts": 2,
                    },
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                })
                .to_string(),
            )?;
            env.extend([
                ("GEMINI_API_KEY", KEY.to_owned()),
                ("GOOGLE_GEMINI_BASE_URL", url.to_owned()),
                ("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned()),
            ]);
        }
    }
    Ok(env
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect())
}

/// The live processes whose environment holds the entry `entry`, as (pid, command name).
pub(crate) fn processes_with_env(entry: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|proc_entry| {
            let pid: u32 = proc_entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(proc_entry.path().join("environ")).ok()?;
            let stat = std::fs::read_to_string(proc_entry.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let live = !(rest.starts_with('Z') || rest.starts_with('X'));
            let holds = environ
                .split(|byte| *byte == 0)
                .any(|item| item == entry.as_bytes());
            (live && holds).then(|| (pid, name.to_owned()))
        })
        .collect()
}

/// Replays the log at `session` with `panewise replay`: it must read back as a conversation
/// holding a prompt; the state it replays to is returned.
pub(crate) fn replay(panewise: &Path, session: &Path) -> Result<Value> {
    // The log replays to the state the run recorded (its closing checkpoint), and it reads
    // back as a conversation: the prompt the run sent is in its transcript.
    let replay = Command::new(panewise)
        .args(["replay", "--json"])
        .arg(session)
        .output()?;
    ensure!(
        replay.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let lines = replay
        .stdout
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(serde_json::from_slice::<Value>)
        .collect::<Result<Vec<_>, _>>()?;
    let kinds: Vec<&str> = lines
        .iter()
        .filter(|line| line["type"] == "transcript")
        .filter_map(|line| line["entry"]["kind"].as_str())
        .collect();
    ensure!(
        kinds.contains(&"prompt"),
        "the replayed conversation of {} holds no prompt (kinds: {kinds:?})",
        session.display()
    );
    let conversation = Command::new(panewise).arg("replay").arg(session).output()?;
    ensure!(
        conversation.status.success()
            && String::from_utf8_lossy(&conversation.stdout)
                .lines()
                .any(|line| line.starts_with("prompt ")),
        "`panewise replay {}` does not print the conversation",
        session.display()
    );
    lines
        .into_iter()
        .find(|line| line["type"] == "replayed")
        .map(|line| line["state"].clone())
        .context("replay --json printed no `replayed` line")
}

/// The log's header names the provider, the CLI's pinned version, the working directory and
/// panewise's version.
pub(crate) fn check_header(
    session: &Path,
    provider: &str,
    version: &str,
    work: &Path,
) -> Result<()> {
    let text = std::fs::read_to_string(session)?;
    let header: Value = serde_json::from_str(text.lines().next().unwrap_or_default())?;
    let header = &header["header"];
    ensure!(header["agent_id"] == provider, "header: {header}");
    ensure!(
        header["cli_version"]
            .as_str()
            .is_some_and(|found| found.contains(version)),
        "the header's CLI version is not {version}: {header}"
    );
    let work = std::fs::canonicalize(work)?;
    ensure!(
        header["cwd"] == work.display().to_string(),
        "header cwd: {header}"
    );
    ensure!(header["panewise_version"].is_string(), "header: {header}");
    Ok(())
}

/// The session totals equal the sum of what the mock reported, call by call.
pub(crate) fn check_totals(state: &Value, mock_log: &Path) -> Result<()> {
    let mut sums = [0u64; 4];
    for line in std::fs::read_to_string(mock_log)?.lines() {
        let entry: Value = serde_json::from_str(line)?;
        let usage = &entry["usage"];
        if usage.is_null() {
            continue;
        }
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        let cached = count("cached_input_tokens");
        let written = count("cache_write_tokens");
        sums[0] += count("input_tokens").saturating_sub(cached + written);
        sums[1] += cached;
        sums[2] += written;
        sums[3] += count("output_tokens");
    }
    let totals = &state["session_totals"];
    let got = [
        totals["input_tokens"].as_u64(),
        totals["cached_input_tokens"].as_u64(),
        // Gemini has no cache writes to report: none is zero.
        Some(totals["cache_write_input_tokens"].as_u64().unwrap_or(0)),
        totals["output_tokens"].as_u64(),
    ];
    if got != sums.map(Some) {
        bail!("session totals {got:?} differ from the mock's usage {sums:?}");
    }
    Ok(())
}

/// Runs `command` to its end, killed if it takes longer than `deadline`.
pub(crate) fn within(mut command: Command, deadline: Duration) -> Result<Output> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run panewise")?;
    let until = Instant::now() + deadline;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let output = child.wait_with_output()?;
            bail!("still running after {deadline:?}: {}", text(&output));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An output's exit code, stdout and stderr, for a message.
pub(crate) fn text(output: &Output) -> String {
    format!(
        "{:?}: {}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// How long one `panewise` command of a case run in a [`Place`] may take.
const PLACE_DEADLINE: Duration = Duration::from_secs(120);

/// A daemon case's place: its own HOME, working directory, runtime, data and config
/// directories under the case's directory, and the environment that names them, so the daemon
/// it starts (and the dashboard and CLIs talking to it) see nothing of the machine's.
pub(crate) struct Place {
    /// The case's directory.
    pub(crate) dir: PathBuf,
    /// The case's HOME.
    pub(crate) home: PathBuf,
    /// The working directory, canonical: as the daemon reports a session's `cwd`.
    pub(crate) work: PathBuf,
    /// The environment of every `panewise` command of the case.
    pub(crate) env: Vec<(String, String)>,
}

impl Place {
    /// Makes the directories under `dir`, with the daemon's desktop notifications off (the
    /// dashboard's notices are enough).
    pub(crate) fn new(dir: &Path) -> Result<Place> {
        let home = dir.join("home");
        let work = dir.join("work");
        let config = home.join(".config");
        for sub in [
            &home,
            &work,
            &dir.join("run"),
            &dir.join("data"),
            &config.join("panewise"),
        ] {
            std::fs::create_dir_all(sub)?;
        }
        std::fs::write(
            config.join("panewise/panewise.toml"),
            "[notify]\ndesktop = false\n",
        )?;
        let env = [
            ("HOME", &home),
            ("XDG_RUNTIME_DIR", &dir.join("run")),
            ("XDG_DATA_HOME", &dir.join("data")),
            ("XDG_CONFIG_HOME", &config),
        ]
        .map(|(key, value)| (key.to_owned(), value.display().to_string()))
        .to_vec();
        Ok(Place {
            dir: dir.to_path_buf(),
            work: std::fs::canonicalize(work)?,
            home,
            env,
        })
    }

    /// The place with `cli` pointed at the mock at `url`, and the daemon starting `program` as
    /// that CLI.
    pub(crate) fn with_cli(mut self, cli: Cli, program: &Path, url: &str) -> Result<Place> {
        let cli_env = cli_env(cli, &self.home, url)?;
        // HOME is the place's already.
        self.env
            .extend(cli_env.into_iter().filter(|(key, _)| key != "HOME"));
        self.env.push((
            cli.daemon_variable().to_owned(),
            program.display().to_string(),
        ));
        Ok(self)
    }

    /// `panewise args` in the place, with no stdin and no `PANEWISE_LOG` of the caller's.
    pub(crate) fn command(&self, panewise: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(panewise);
        command
            .args(args)
            .current_dir(&self.work)
            .envs(self.env.iter().map(|(key, value)| (key, value)))
            .env_remove("PANEWISE_LOG")
            .stdin(Stdio::null());
        command
    }

    /// Runs `panewise args` in the place to its end, killed past the deadline.
    pub(crate) fn run(&self, panewise: &Path, args: &[&str]) -> Result<Output> {
        within(self.command(panewise, args), PLACE_DEADLINE)
    }
}

/// The list's part of a dashboard line: what is left of the peek's border.
pub(crate) fn list_part(line: &str) -> &str {
    line.split(['│', '┌', '└']).next().unwrap_or("").trim()
}

/// The list row of the session named `name` (its state mark first), as shown.
pub(crate) fn list_row(screen: &str, name: &str) -> Option<String> {
    screen
        .lines()
        .map(list_part)
        .find(|row| row.split_whitespace().nth(1) == Some(name))
        .map(str::to_owned)
}
