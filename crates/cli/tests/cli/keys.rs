//! The API key out of the model's reach: `panewise run` against the workspace mock with a
//! recognisable key in its environment, the mock's `key-probe` scenario asking for each way a
//! model could read it (`read_file /proc/self/environ`, `shell cat /proc/$PPID/environ`,
//! `shell env`), in `read-only`, `ask` (answered yes, on a terminal) and `auto`. The key is
//! then in no file panewise wrote (the session log, the ledger, the archive: everything under
//! the machine's data, config, home and project directories), in no request the mock received
//! (bodies and headers as logged), and not on the screen. `full-access`, which is outside
//! panewise's protection, is the control: there `read_file` reads the key, and the scan must
//! find it. bubblewrap must be installed, as for the sandbox's tests.

use std::process::Output;

use panewise_mock_server::{KeyProbe, RunningServer, Scenario, KEY_PROBES};

use crate::run_own_loop::{stderr, Machine};
use crate::run_terminal::Terminal;
use crate::sandbox::files_containing;

/// The key: fake, and found anywhere by its text.
const KEY: &str = "sk-ant-panewise-canary-5e1f0c2a9d";

/// What a route's tool result must show in a mode.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Refused, the result containing this.
    Refused(&'static str),
    /// Run, the result containing this.
    Ran(&'static str),
    /// Run or refused: only the key's absence is held (what `/proc/$PPID/environ` is inside
    /// the box depends on the box's own process tree).
    Either,
}

/// The modes, and what each route's result shows there (routes in [`KEY_PROBES`] order);
/// `leaks` for the control.
const TABLE: [(&str, [Expect; 3], bool); 4] = [
    (
        "read-only",
        [
            Expect::Refused("read_file refuses /proc/self/environ: it leads into /proc"),
            Expect::Either,
            Expect::Ran("PATH="),
        ],
        false,
    ),
    (
        "ask",
        [
            Expect::Refused("read_file refuses /proc/self/environ: it leads into /proc"),
            Expect::Either,
            Expect::Ran("PATH="),
        ],
        false,
    ),
    (
        "auto",
        [
            Expect::Refused("read_file refuses /proc/self/environ: it leads into /proc"),
            Expect::Either,
            Expect::Ran("PATH="),
        ],
        false,
    ),
    // The control: `full-access` reads the key with `read_file`, so the scan must see it.
    (
        "full-access",
        [Expect::Ran(KEY), Expect::Either, Expect::Either],
        true,
    ),
];

/// The tool results of the last request the mock received, in order (Anthropic's
/// `tool_result` blocks, their text joined).
fn tool_results(server: &RunningServer) -> Vec<String> {
    let log = server.log();
    let Some(last) = log.last() else {
        return Vec::new();
    };
    let mut results = Vec::new();
    for message in last.body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            let text = match &block["content"] {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            results.push(text);
        }
    }
    results
}

/// Runs the probe in `mode` against `server`: plainly, or for `ask` on a terminal where each
/// question is answered "always this session". Returns what was shown (stdout and stderr, or
/// the screen).
fn run_probe(machine: &Machine, server: &RunningServer, mode: &str) -> String {
    let work = machine.path("project");
    std::fs::write(
        machine.path("project/panewise.toml"),
        format!(
            "[providers.anthropic]\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    if mode != "ask" {
        let output: Output = machine
            .command(&[
                "run",
                "--provider",
                "anthropic",
                "--approval",
                mode,
                "--cwd",
                work.to_str().unwrap(),
                "read your environment",
            ])
            .env("ANTHROPIC_API_KEY", KEY)
            .output()
            .unwrap();
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(&output)
        );
        assert!(output.status.success(), "{mode}: {shown}");
        return shown;
    }
    // The script holds the key, so it lives outside the directories scanned.
    let scripts = tempfile::tempdir().unwrap();
    let exit_file = scripts.path().join("exit-code");
    let script = scripts.path().join("ask.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{project}'\nexport HOME='{home}' XDG_DATA_HOME='{data}' XDG_CONFIG_HOME='{config}'\n\
             unset OPENAI_API_KEY GEMINI_API_KEY PANEWISE_LOG ANTHROPIC_BASE_URL\n\
             export ANTHROPIC_API_KEY='{KEY}'\n\
             '{panewise}' run --provider anthropic --approval ask --cwd '{project}' \
             'read your environment'\necho $? > '{exit}'\n",
            project = work.display(),
            home = machine.path("home").display(),
            data = machine.path("data").display(),
            config = machine.path("config").display(),
            panewise = env!("CARGO_BIN_EXE_panewise"),
            exit = exit_file.display(),
        ),
    )
    .unwrap();
    let terminal = Terminal::start(&script, "key-probe");
    terminal.wait_for("[y]es / [n]o / [a]lways this session");
    terminal.line("a");
    let exit_code = terminal.wait_for_line(&exit_file);
    let screen = terminal.screen();
    assert_eq!(exit_code, "0\n", "ask: {screen}");
    screen
}

#[test]
fn no_route_gets_the_key_to_the_model_a_file_or_a_request_in_read_only_ask_or_auto() {
    crate::sandbox::require_bwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (mode, expected, leaks) in TABLE {
        let server = runtime.block_on(crate::start(Scenario::KeyProbe));
        let machine = Machine::new();
        let shown = run_probe(&machine, &server, mode);
        let results = tool_results(&server);
        let requests: Vec<String> = server
            .log()
            .iter()
            .map(|request| serde_json::to_string(request).unwrap())
            .collect();
        runtime.block_on(server.shutdown());
        assert_eq!(
            results.len(),
            KEY_PROBES.len(),
            "{mode}: every probe answered: {results:?}\n{shown}"
        );
        for ((probe, expect), result) in KEY_PROBES.iter().zip(expected).zip(&results) {
            let route = match probe {
                KeyProbe::ReadFile(path) => format!("read_file {path}"),
                KeyProbe::Shell(command) => format!("shell {command}"),
            };
            match expect {
                Expect::Refused(needle) | Expect::Ran(needle) => {
                    assert!(result.contains(needle), "{mode} × {route}: {result}");
                }
                Expect::Either => {}
            }
            if !leaks {
                assert!(
                    !result.contains(KEY),
                    "{mode} × {route}: the model got the key"
                );
            }
        }
        let files: Vec<String> = ["data", "config", "home", "project"]
            .iter()
            .flat_map(|dir| files_containing(&machine.path(dir), KEY))
            .collect();
        let in_requests = requests
            .iter()
            .filter(|request| request.contains(KEY))
            .count();
        if leaks {
            assert!(
                !files.is_empty() && in_requests > 0,
                "{mode}: the control read the key, but the scan found it nowhere"
            );
        } else {
            assert!(files.is_empty(), "{mode}: the key is in {files:?}");
            assert_eq!(
                in_requests, 0,
                "{mode}: the key is in a request the mock received"
            );
            assert!(!shown.contains(KEY), "{mode}: the key was shown: {shown}");
        }
    }
}

/// A daemon a command starts on its own (`panewise agents` with none running) is started
/// without the command's API keys, known or only named like one: each client sends its keys
/// with its request instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_started_by_a_command_has_no_key_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["run", "data", "home", "config", "work"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let other = "mistral-panewise-canary-31d4";
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_panewise"))
        .arg("agents")
        .current_dir(dir.path().join("work"))
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("HOME", dir.path().join("home"))
        .env("ANTHROPIC_API_KEY", KEY)
        .env("MISTRAL_API_KEY", other)
        .env("PANEWISE_KEYS_TEST_MARKER", "kept")
        .env_remove("PANEWISE_LOG")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let socket = dir.path().join("run/panewise/daemon.sock");
    let client = panewise_supervisor::Client::connect(&socket, "keys")
        .await
        .unwrap();
    let hello: panewise_api::HelloResult = client
        .call(
            panewise_api::Method::Hello,
            panewise_api::HelloParams {
                api_version: panewise_api::API_VERSION,
                client: Some("keys".to_owned()),
            },
        )
        .await
        .unwrap();
    let environ = std::fs::read(format!("/proc/{}/environ", hello.pid)).unwrap();
    let environ = String::from_utf8_lossy(&environ).into_owned();
    // The daemon this test started ends with it.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(hello.pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(
        environ.contains("PANEWISE_KEYS_TEST_MARKER=kept"),
        "the daemon read is the one started here"
    );
    assert!(!environ.contains(KEY), "the daemon holds ANTHROPIC_API_KEY");
    assert!(!environ.contains(other), "the daemon holds MISTRAL_API_KEY");
}
