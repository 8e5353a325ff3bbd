//! The end-to-end case of the own loop's MCP client (issue 43): real MCP servers the project
//! did not write, installed pinned from npm (`e2e/versions.json`):
//! `@modelcontextprotocol/server-filesystem` over stdio, from the project's `.mcp.json` as
//! Claude Code writes it, and `@modelcontextprotocol/server-everything` in its
//! `streamableHttp` mode, from the user's `panewise.toml` (`[mcp.servers.everything] url`),
//! with a third server that cannot start.
//!
//! Through `panewise run` over the mock's `mcp-tools` scenario: the model calls the
//! filesystem server's `list_allowed_directories` and the everything server's `echo`; both
//! results are in the transcript (`panewise replay --json`), the ledger's every `call` line
//! counts the tool list, the broken server is said in the run's output and in the log, and no
//! process of the session outlives it — also when panewise is killed with SIGKILL while its
//! servers run. With `tool_budget_tokens = 0` the first request's tool list costs less and
//! defers the MCP tools, and the model loads each through `mcp_tool_search` before calling
//! it. `panewise mcp list` names each server's state and its tools with their token cost.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::e2e_support::{processes_with_env, start_mock, text, within};

/// The case's name (`cargo xtask e2e mcp`).
pub const NAME: &str = "own-loop-mcp-servers";

/// How long any command may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// The packages, with the name of their `bin`.
pub const PACKAGES: [(&str, &str); 2] = [
    (
        "@modelcontextprotocol/server-filesystem",
        "mcp-server-filesystem",
    ),
    (
        "@modelcontextprotocol/server-everything",
        "mcp-server-everything",
    ),
];

/// The everything server in `streamableHttp` mode, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Waits until `done` holds, looking every 50 ms, for at most `limit`.
fn until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) -> Result<()> {
    let end = Instant::now() + limit;
    while !done() {
        if Instant::now() > end {
            bail!("{what} did not happen within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn start_http(bin: &Path, dir: &Path) -> Result<HttpServer> {
    let port = free_port()?;
    let child = Command::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        // Not the session's HOME: this server is the harness's, not the session's.
        .env("HOME", dir.join("http-home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the everything server")?;
    let server = HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    until(
        Duration::from_secs(30),
        "the everything server listening",
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    )?;
    Ok(server)
}

/// Installs the servers (pinned) under `target` and runs the case under `target/runs/`.
pub fn run(root: &Path, target: &Path, panewise: &Path) -> Result<()> {
    let mut bins = Vec::new();
    for (package, bin) in PACKAGES {
        bins.push(crate::e2e_npm::install(root, target, package, bin)?.0);
    }
    run_case(panewise, &bins, &target.join("runs").join(NAME))
        .with_context(|| format!("e2e case {NAME}"))?;
    eprintln!("e2e: {NAME}: ok");
    Ok(())
}

/// Runs the case in `dir`, the servers' bins installed under `bins`.
pub fn run_case(panewise: &Path, bins: &[PathBuf], dir: &Path) -> Result<()> {
    let [filesystem, everything] = bins else {
        bail!("two MCP server bins expected");
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    for sub in [
        "home",
        "run",
        "data",
        "config/panewise",
        "logs",
        "http-home",
    ] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let project = dir.join("project");
    std::fs::create_dir_all(project.join(".git"))?;
    let project = project.canonicalize()?;
    let http = start_http(everything, dir)?;
    let mock = start_mock(panewise, "mcp-tools", dir)?;
    // The project's `.mcp.json`, as Claude Code writes it.
    std::fs::write(
        project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"files": {
            "command": filesystem, "args": [project]
        }}})
        .to_string(),
    )?;
    let user_config = |budget: Option<u64>| -> Result<()> {
        let budget = budget
            .map(|tokens| format!("tool_budget_tokens = {tokens}\n"))
            .unwrap_or_default();
        std::fs::write(
            dir.join("config/panewise/panewise.toml"),
            format!(
                "[mcp]\nproject_servers = true\n{budget}\n\
                 [mcp.servers.everything]\nurl = \"{}\"\n\n\
                 [mcp.servers.broken]\ncommand = \"{}\"\n",
                http.url,
                dir.join("no-such-server").display()
            ),
        )?;
        Ok(())
    };
    let home = dir.join("home");
    let marker = format!("HOME={}", home.display());
    let command = |args: &[&str]| -> Command {
        let mut command = Command::new(panewise);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("NO_PROXY", "127.0.0.1")
            .env("ANTHROPIC_API_KEY", "sk-e2e-mcp")
            .env("ANTHROPIC_BASE_URL", &mock.url)
            .current_dir(&project)
            .args(args)
            .stdin(Stdio::null());
        command
    };
    let run = |log: &Path| -> Result<Output> {
        let log = log.display().to_string();
        let args = [
            "run",
            "--provider",
            "anthropic",
            "--approval",
            "auto",
            "--log",
            &log,
            "list the allowed directories, then echo",
        ];
        within(command(&args), DEADLINE)
    };

    // `panewise mcp list`: two servers run, one failed, each tool with its cost.
    user_config(None)?;
    let listed = within(command(&["mcp", "list"]), DEADLINE)?;
    let said = text(&listed);
    ensure!(
        listed.status.code() == Some(1),
        "mcp list with a broken server: {said}"
    );
    for expected in [
        "files (.mcp.json, stdio: ",
        "everything (user panewise.toml, http: ",
        "broken (user panewise.toml, stdio: ",
        "FAILED: cannot start",
        "mcp__files__list_allowed_directories",
        "mcp__everything__echo",
        "tool definitions: ",
    ] {
        ensure!(
            said.contains(expected),
            "mcp list does not say {expected:?}: {said}"
        );
    }
    let listed = within(command(&["mcp", "list", "--json"]), DEADLINE)?;
    let json: Value = serde_json::from_slice(&listed.stdout).context("mcp list --json")?;
    let servers = json["servers"].as_array().context("servers")?;
    let running: Vec<&str> = servers
        .iter()
        .filter(|server| server["state"] == "running")
        .filter_map(|server| server["name"].as_str())
        .collect();
    ensure!(running == ["everything", "files"], "running: {running:?}");
    ensure!(
        servers
            .iter()
            .flat_map(|server| server["tools"].as_array().into_iter().flatten())
            .all(|tool| tool["tokens"].as_u64().is_some_and(|tokens| tokens > 0)),
        "a tool without its token cost: {json}"
    );
    ensure!(
        processes_with_env(&marker).is_empty(),
        "mcp list left processes: {:?}",
        processes_with_env(&marker)
    );

    // The session: both tools called, results in the transcript, the tool list in the ledger.
    let log = dir.join("logs").join("full.jsonl");
    let ran = run(&log)?;
    let said = text(&ran);
    ensure!(ran.status.success(), "run: {said}");
    ensure!(
        said.contains("MCP-DONE"),
        "the model did not see both results: {said}"
    );
    ensure!(
        said.contains("MCP server broken failed to start"),
        "the broken server is not said: {said}"
    );
    let session_log = std::fs::read_to_string(&log)?;
    ensure!(
        session_log.contains("MCP server broken failed to start"),
        "the log does not say the broken server failed"
    );
    let replayed = within(
        command(&["replay", "--json", &log.display().to_string()]),
        DEADLINE,
    )?;
    let replay = String::from_utf8_lossy(&replayed.stdout);
    ensure!(replayed.status.success(), "replay: {}", text(&replayed));
    for result in [
        format!("Allowed directories:\\n{}", project.display()),
        format!("Echo: {}", "hello from the panewise mock"),
    ] {
        ensure!(
            replay.contains(&result),
            "the transcript lacks {result:?}: {replay}"
        );
    }
    let full = tool_lists(&log)?;
    ensure!(
        full.len() == 3,
        "3 model calls expected, the ledger has {full:?}"
    );
    ensure!(
        full.iter()
            .all(|(count, tokens, deferred)| *count > 6 && *tokens > 0 && *deferred == 0),
        "a call line without its whole tool list: {full:?}"
    );
    ensure!(
        processes_with_env(&marker).is_empty(),
        "processes outlived the session: {:?}",
        processes_with_env(&marker)
    );

    // The budget: every MCP tool deferred; each loaded through the search tool, then called.
    user_config(Some(0))?;
    let log = dir.join("logs").join("budget.jsonl");
    let ran = run(&log)?;
    let said = text(&ran);
    ensure!(
        ran.status.success() && said.contains("MCP-DONE"),
        "budget run: {said}"
    );
    let budget = tool_lists(&log)?;
    let (first, first_full) = (budget.first(), full.first());
    ensure!(
        matches!((first, first_full), (Some(small), Some(whole)) if small.1 < whole.1 && small.2 > 0),
        "the first request's tool list is not smaller with the budget: {budget:?} vs {full:?}"
    );
    let replayed = within(
        command(&["replay", "--json", &log.display().to_string()]),
        DEADLINE,
    )?;
    let replay = String::from_utf8_lossy(&replayed.stdout);
    for loaded in [
        "[tool search: list_allowed_directories] loaded",
        "[tool search: echo] loaded",
    ] {
        ensure!(
            replay.contains(loaded),
            "no search result {loaded:?}: {replay}"
        );
    }
    ensure!(
        budget.len() == 5,
        "5 calls expected (two searches, two tools, the answer): {budget:?}"
    );

    // kill -9 of panewise while its servers run: none outlives it.
    user_config(None)?;
    let log = dir.join("logs").join("killed.jsonl");
    let mut killed = command(&[
        "run",
        "--provider",
        "anthropic",
        "--approval",
        "full-access",
        "--log",
        &log.display().to_string(),
        "wait",
    ]);
    // The `slow-tool` scenario keeps the turn busy (a shell call of half a minute) while the
    // servers run.
    let slow_dir = dir.join("slow");
    std::fs::create_dir_all(&slow_dir)?;
    let slow = start_mock(panewise, "slow-tool", &slow_dir)?;
    killed.env("ANTHROPIC_BASE_URL", &slow.url);
    let mut child = killed
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start panewise")?;
    let filesystem_running = || {
        processes_with_env(&marker)
            .iter()
            .any(|(_, name)| name.starts_with("node") || name.contains("mcp-server"))
    };
    until(
        Duration::from_secs(60),
        "the filesystem server starting",
        filesystem_running,
    )?;
    child.kill()?;
    let _status = child.wait()?;
    until(
        Duration::from_secs(15),
        "every session process gone after kill -9",
        || processes_with_env(&marker).is_empty(),
    )
    .with_context(|| format!("left: {:?}", processes_with_env(&marker)))?;
    Ok(())
}

/// Each `call` line's tool list in the ledger beside `log`: (count, tokens, deferred).
fn tool_lists(log: &Path) -> Result<Vec<(u64, u64, u64)>> {
    let ledger = std::fs::read_to_string(format!("{}.window.jsonl", log.display()))
        .context("the window ledger")?;
    ledger
        .lines()
        .map(serde_json::from_str::<Value>)
        .filter(|line| line.as_ref().map_or(true, |line| line["type"] == "call"))
        .map(|line| {
            let line = line?;
            let tools = &line["tools"];
            Ok((
                tools["count"].as_u64().context("no tools.count")?,
                tools["tokens"].as_u64().context("no tools.tokens")?,
                tools["deferred"].as_u64().unwrap_or(0),
            ))
        })
        .collect()
}
