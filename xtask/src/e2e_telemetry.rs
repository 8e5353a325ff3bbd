//! The end-to-end cases of OpenTelemetry export, against a real trace backend: Arize Phoenix
//! (`phoenix serve`, pinned in `e2e/phoenix-requirements.txt`, installed with pip into a venv
//! under `target/e2e/phoenix/`), started on 127.0.0.1 on free ports with a fresh working
//! directory. A daemon exports its sessions' spans to Phoenix's OTLP/HTTP endpoint, or (the
//! `-grpc` case) to its OTLP/gRPC port; the spans are read back through Phoenix's own REST API
//! (`/v1/projects/{project}/spans`).
//!
//! Phoenix takes traces only (it answers `/v1/metrics` with 405), as MLflow's tracing server
//! does, and no OTLP-metrics store installs from the registries used here (what was checked
//! and why each fails: docs/TELEMETRY.md, "Tests"): the same daemon sends its metrics, over
//! the same protocol, to a real OpenTelemetry collector, Rotel (`e2e_metrics.rs`), and the
//! case reads them back from what Rotel printed it received.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::e2e_metrics::{free_ports, newest, rotel_agent, Rotel};
use crate::e2e_support::{cli_env, processes_with_env, start_mock, text, within, Cli, WRITE};

/// One telemetry case.
pub struct TelemetryCase {
    /// Its name (`cargo xtask e2e FILTER`).
    pub name: &'static str,
    /// The supervised CLI, or `None` for panewise's own loop on the mock model.
    pub cli: Option<Cli>,
    /// Export over OTLP/gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`) rather than OTLP/HTTP.
    pub grpc: bool,
}

/// The cases.
pub const CASES: &[TelemetryCase] = &[
    TelemetryCase {
        name: "telemetry-phoenix-own-loop",
        cli: None,
        grpc: false,
    },
    TelemetryCase {
        name: "telemetry-phoenix-own-loop-grpc",
        cli: None,
        grpc: true,
    },
    TelemetryCase {
        name: "telemetry-phoenix-claude-code",
        cli: Some(Cli::Claude),
        grpc: false,
    },
];

/// The Phoenix project the cases' spans go to (`openinference.project.name`).
const PROJECT: &str = "panewise-e2e";
/// How long Phoenix may take to start (it migrates its SQLite database first).
const STARTUP: Duration = Duration::from_secs(180);
/// How long each step of a session may take.
const DEADLINE: Duration = Duration::from_secs(180);
/// How long the spans may take to be queryable after the daemon flushed them.
const ARRIVAL: Duration = Duration::from_secs(60);

/// Installs Phoenix into `target/e2e/phoenix/venv` (once per pinned version) and returns its
/// `phoenix` executable.
pub fn install(root: &Path) -> Result<PathBuf> {
    let pins_path = root.join("e2e/phoenix-requirements.txt");
    let pins = std::fs::read_to_string(&pins_path)
        .with_context(|| format!("cannot read {}", pins_path.display()))?;
    let dir = root.join("target/e2e/phoenix");
    let venv = dir.join("venv");
    let stamp = dir.join("installed.txt");
    let phoenix = venv.join("bin/phoenix");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(pins.as_str()) && phoenix.exists() {
        return Ok(phoenix);
    }
    eprintln!("e2e: installing Arize Phoenix into {}", venv.display());
    if venv.exists() {
        std::fs::remove_dir_all(&venv)?;
    }
    std::fs::create_dir_all(&dir)?;
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context(
            "cannot run python3: Python 3.10 or later with venv is needed for the telemetry \
             e2e cases (Debian: apt-get install python3-venv)",
        )?;
    ensure!(
        made.success(),
        "python3 -m venv {} failed (Debian: apt-get install python3-venv)",
        venv.display()
    );
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--disable-pip-version-check", "--quiet", "-r"])
        .arg(&pins_path)
        .status()
        .context("cannot run the venv's pip")?;
    ensure!(
        installed.success() && phoenix.exists(),
        "pip install -r {} failed: Phoenix is not installed",
        pins_path.display()
    );
    std::fs::write(&stamp, &pins)?;
    Ok(phoenix)
}

/// A running Phoenix, stopped when dropped.
struct Phoenix {
    child: Child,
    http: u16,
    grpc: u16,
    log: PathBuf,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

impl Phoenix {
    /// Starts `phoenix serve` on 127.0.0.1, its data in `dir`, and waits until it is healthy.
    fn start(program: &Path, dir: &Path) -> Result<Phoenix> {
        std::fs::create_dir_all(dir)?;
        let [http, grpc] = free_ports()?;
        let log = dir.join("phoenix.log");
        let child = Command::new(program)
            .arg("serve")
            .current_dir(dir)
            .env("PHOENIX_WORKING_DIR", dir)
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(dir.join("phoenix.stderr"))?)
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let mut phoenix = Phoenix {
            child,
            http,
            grpc,
            log,
        };
        let until = Instant::now() + STARTUP;
        loop {
            if phoenix.healthy() {
                return Ok(phoenix);
            }
            if let Some(status) = phoenix.child.try_wait()? {
                bail!(
                    "phoenix serve exited ({status}) before it was healthy: see {}",
                    phoenix.log.display()
                );
            }
            if Instant::now() > until {
                bail!(
                    "phoenix serve was not healthy after {STARTUP:?}: see {}",
                    phoenix.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn traces_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.http)
    }

    /// Its OTLP/gRPC receiver (`PHOENIX_GRPC_PORT`): no path, the service is in the request.
    fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc)
    }

    /// `/healthz` answers 200 (its body is plain text, not JSON).
    fn healthy(&self) -> bool {
        let url = format!("http://127.0.0.1:{}/healthz", self.http);
        ureq::get(&url)
            .call()
            .is_ok_and(|response| response.status().is_success())
    }

    fn get(&self, path: &str) -> Result<Value> {
        let url = format!("http://127.0.0.1:{}{path}", self.http);
        let mut response = ureq::get(&url)
            .call()
            .with_context(|| format!("GET {url}"))?;
        let body = response.body_mut().read_to_string()?;
        serde_json::from_str(&body).with_context(|| format!("GET {url}: {body}"))
    }

    /// Every span of the project, as Phoenix's REST API gives them.
    fn spans(&self) -> Result<Vec<Value>> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v1/projects/{PROJECT}/spans?limit=100");
            if let Some(cursor) = &cursor {
                path.push_str(&format!("&cursor={cursor}"));
            }
            let page = match self.get(&path) {
                Ok(page) => page,
                // The project exists once its first span arrived.
                Err(_) if spans.is_empty() && cursor.is_none() => return Ok(Vec::new()),
                Err(error) => return Err(error),
            };
            spans.extend(page["data"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(spans),
            }
        }
    }

    /// Waits until the project holds a span satisfying `done`; returns every span then.
    fn spans_until(&self, done: impl Fn(&[Value]) -> bool) -> Result<Vec<Value>> {
        let until = Instant::now() + ARRIVAL;
        loop {
            let spans = self.spans()?;
            if done(&spans) {
                return Ok(spans);
            }
            if Instant::now() > until {
                bail!(
                    "Phoenix did not show the session's spans within {ARRIVAL:?}: {}",
                    names(&spans)
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn names(spans: &[Value]) -> String {
    spans
        .iter()
        .filter_map(|span| span["name"].as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `case` in `dir`: a daemon session asking to run a tool, approved from outside, its
/// spans read back from Phoenix. `program` is the case's CLI, when it has one.
pub fn run_case(
    panewise: &Path,
    phoenix: &Path,
    program: Option<&Path>,
    dir: &Path,
    case: &TelemetryCase,
) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let home = dir.join("home");
    let work = dir.join("work");
    for sub in [&home, &work, &dir.join("run"), &dir.join("data")] {
        std::fs::create_dir_all(sub)?;
    }
    let rotel = Rotel::start(&rotel_agent(phoenix)?, &dir.join("rotel"))?;
    let phoenix = Phoenix::start(phoenix, &dir.join("phoenix"))?;
    // The case's CLI talks to the mock model; panewise's own loop has one in the daemon.
    let mock = match case.cli {
        Some(_) => Some(start_mock(panewise, "file-write", dir)?),
        None => None,
    };
    let mut env = match (case.cli, &mock) {
        (Some(cli), Some(mock)) => cli_env(cli, &home, &mock.url)?,
        _ => vec![("HOME".to_owned(), home.display().to_string())],
    };
    let provider = match (case.cli, program) {
        (Some(cli), Some(program)) => {
            env.push(("PANEWISE_CLAUDE".to_owned(), program.display().to_string()));
            Some(cli.provider())
        }
        _ => None,
    };
    let key_in_env = "sk-ant-e2e-never-exported-0123";
    env.extend(
        [
            ("XDG_RUNTIME_DIR", dir.join("run").display().to_string()),
            ("XDG_DATA_HOME", dir.join("data").display().to_string()),
            (
                "XDG_CONFIG_HOME",
                home.join(".config").display().to_string(),
            ),
            // Traces to Phoenix; it takes no metrics: they go to Rotel.
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                if case.grpc {
                    phoenix.grpc_endpoint()
                } else {
                    phoenix.traces_endpoint()
                },
            ),
            (
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                if case.grpc {
                    rotel.grpc_endpoint()
                } else {
                    rotel.metrics_endpoint()
                },
            ),
            (
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                if case.grpc { "grpc" } else { "http/protobuf" }.to_owned(),
            ),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                format!("openinference.project.name={PROJECT}"),
            ),
            ("OTEL_SERVICE_NAME", "panewise-e2e".to_owned()),
        ]
        .map(|(key, value)| (key.to_owned(), value)),
    );
    if case.cli.is_none() {
        // The own loop's tools never get it, and no export carries it.
        env.push(("ANTHROPIC_API_KEY".to_owned(), key_in_env.to_owned()));
    }
    let run = |args: &[&str]| -> Result<Output> {
        let mut command = Command::new(panewise);
        command
            .args(args)
            .current_dir(&work)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null());
        within(command, DEADLINE)
    };
    let work_text = work.display().to_string();
    let mut create = vec!["new", "--approval", "ask", "--name", case.name];
    if let Some(provider) = provider {
        create.extend(["--provider", provider, "--cwd", &work_text, WRITE]);
    } else {
        create.push("run the tool");
    }
    let created = run(&create)?;
    ensure!(created.status.success(), "panewise new: {}", text(&created));
    let waited = run(&["wait", case.name, "--until", "needs-input"])?;
    ensure!(
        waited.status.code() == Some(0),
        "the agent did not ask: {}",
        text(&waited)
    );
    // The CLI was given the session span's context.
    let traceparent = match case.cli {
        Some(_) => Some(cli_traceparent(&home)?),
        None => None,
    };
    let approved = run(&["approve", case.name])?;
    ensure!(approved.status.success(), "approve: {}", text(&approved));
    let done = run(&["wait", case.name, "--until", "done"])?;
    ensure!(done.status.code() == Some(0), "not done: {}", text(&done));
    let stopped = run(&["stop", case.name])?;
    ensure!(stopped.status.success(), "stop: {}", text(&stopped));
    // SIGTERM: the daemon ends its sessions and flushes their spans, within its deadline.
    stop_daemon(dir)?;
    let spans = phoenix.spans_until(|spans| {
        spans.iter().any(|span| span["name"] == "invoke_agent")
            && spans
                .iter()
                .any(|span| span["name"] == "panewise.approval.wait")
            && spans.iter().any(|span| {
                span["name"]
                    .as_str()
                    .is_some_and(|name| name.starts_with("execute_tool "))
            })
    })?;
    check_spans(&spans, case, traceparent.as_deref())?;
    check_metrics(&rotel, &spans, case.name)?;
    let everything = serde_json::to_string(&spans)?;
    ensure!(
        !everything.contains(key_in_env) && !everything.contains("sk-e2e-not-a-real-key"),
        "an API key reached Phoenix"
    );
    drop(mock);
    Ok(())
}

/// The session's metrics as Rotel received them (pushed at the daemon's exit): the model
/// calls' input and output tokens — the same totals as the `chat` spans Phoenix holds — their
/// duration, the approval answered by a client, its wait, and the session counted.
fn check_metrics(rotel: &Rotel, spans: &[Value], name: &str) -> Result<()> {
    let usage = "gen_ai.client.token.usage";
    let points = rotel.points_until(ARRIVAL, |points| {
        newest(points, usage, &[("gen_ai.token.type", "input")]).is_some()
            && newest(points, "panewise.approvals", &[]).is_some()
    })?;
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"].as_str().is_some_and(|n| n.starts_with("chat")))
        .collect();
    let total = |key: &str| -> f64 {
        chats
            .iter()
            .filter_map(|span| span["attributes"][key].as_f64())
            .sum()
    };
    for (token_type, attribute) in [
        ("input", "gen_ai.usage.input_tokens"),
        ("output", "gen_ai.usage.output_tokens"),
    ] {
        let point = newest(&points, usage, &[("gen_ai.token.type", token_type)])
            .with_context(|| format!("no {usage} point of {token_type} tokens: {points:?}"))?;
        let spans_total = total(attribute);
        ensure!(
            spans_total > 0.0 && point.value == Some(spans_total),
            "{usage} ({token_type}) received {:?}, the chat spans' {attribute} add up to              {spans_total}: {point:?}",
            point.value
        );
        ensure!(
            point.attribute("gen_ai.operation.name") == Some("chat")
                && point.attribute("gen_ai.provider.name").is_some(),
            "{usage} ({token_type}): {point:?}"
        );
    }
    let duration = newest(&points, "gen_ai.client.operation.duration", &[])
        .context("no gen_ai.client.operation.duration point")?;
    ensure!(
        duration.count.is_some_and(|count| count >= 1),
        "gen_ai.client.operation.duration: {duration:?}"
    );
    let approvals = newest(
        &points,
        "panewise.approvals",
        &[("panewise.approval.decision", "approved")],
    )
    .with_context(|| format!("no approved panewise.approvals point: {points:?}"))?;
    ensure!(
        approvals.value == Some(1.0)
            && approvals.attribute("panewise.approval.by") == Some("client"),
        "panewise.approvals: {approvals:?}"
    );
    let wait = newest(&points, "panewise.approval.wait.duration", &[])
        .context("no panewise.approval.wait.duration point")?;
    ensure!(
        wait.count == Some(1),
        "panewise.approval.wait.duration: {wait:?}"
    );
    let sessions = newest(
        &points,
        "panewise.sessions",
        &[("panewise.session.state", "started")],
    )
    .context("no panewise.sessions point")?;
    ensure!(
        sessions.value == Some(1.0),
        "panewise.sessions: {sessions:?}"
    );
    let value = |metric: &str, with: &[(&str, &str)]| {
        newest(&points, metric, with)
            .and_then(|point| point.value)
            .unwrap_or(0.0)
    };
    eprintln!(
        "e2e: {name}: Rotel received gen_ai.client.token.usage input {} output {} (as the chat \
         spans), gen_ai.client.operation.duration ×{}, panewise.approvals approved by client {}, \
         panewise.approval.wait.duration ×1, panewise.sessions started {}",
        value(usage, &[("gen_ai.token.type", "input")]),
        value(usage, &[("gen_ai.token.type", "output")]),
        duration.count.unwrap_or(0),
        approvals.value.unwrap_or(0.0),
        sessions.value.unwrap_or(0.0),
    );
    Ok(())
}

/// The `TRACEPARENT` in the environment of the supervised CLI, the process of the case's
/// `HOME` that is not panewise.
fn cli_traceparent(home: &Path) -> Result<String> {
    let entry = format!("HOME={}", home.display());
    let processes = processes_with_env(&entry);
    for (pid, name) in &processes {
        if name == "panewise" {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if let Some(value) = environ
            .split(|byte| *byte == 0)
            .find_map(|item| item.strip_prefix(b"TRACEPARENT="))
        {
            return Ok(String::from_utf8_lossy(value).into_owned());
        }
    }
    bail!("no process of the case has TRACEPARENT in its environment: {processes:?}")
}

fn stop_daemon(dir: &Path) -> Result<()> {
    let entry = format!("XDG_RUNTIME_DIR={}", dir.join("run").display());
    let daemons: Vec<u32> = processes_with_env(&entry)
        .into_iter()
        .filter(|(_, name)| name == "panewise")
        .map(|(pid, _)| pid)
        .collect();
    for pid in &daemons {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let until = Instant::now() + Duration::from_secs(20);
    while processes_with_env(&entry)
        .iter()
        .any(|(_, name)| name == "panewise")
    {
        ensure!(Instant::now() < until, "the daemon did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// The session's trace as Phoenix shows it: the session span, a model call with its token
/// counts, the tool and the approval wait, each a child of the session span.
fn check_spans(spans: &[Value], case: &TelemetryCase, traceparent: Option<&str>) -> Result<()> {
    let agent = match case.cli {
        Some(cli) => cli.provider(),
        None => "panewise",
    };
    let root = spans
        .iter()
        .find(|span| span["name"] == "invoke_agent")
        .context("no invoke_agent span")?;
    let attributes = &root["attributes"];
    ensure!(
        attributes["gen_ai.agent.name"] == agent,
        "invoke_agent: {root}"
    );
    ensure!(
        attributes["gen_ai.operation.name"] == "invoke_agent",
        "invoke_agent: {root}"
    );
    let root_id = root["context"]["span_id"]
        .as_str()
        .context("the session span has no id")?;
    let trace_id = root["context"]["trace_id"]
        .as_str()
        .context("the session span has no trace id")?;
    let children: Vec<&Value> = spans
        .iter()
        .filter(|span| span["parent_id"] == root_id)
        .collect();
    let named = |prefix: &str| {
        children
            .iter()
            .copied()
            .find(|span| span["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .with_context(|| format!("no {prefix}… span under invoke_agent: {}", names(spans)))
    };
    let chat = children
        .iter()
        .copied()
        .find(|span| {
            span["name"].as_str().is_some_and(|n| n.starts_with("chat"))
                && span["attributes"]["gen_ai.usage.input_tokens"].as_i64() > Some(0)
        })
        .with_context(|| format!("no chat span with input tokens: {}", names(spans)))?;
    ensure!(
        chat["attributes"]["gen_ai.usage.output_tokens"].as_i64() > Some(0),
        "chat: {chat}"
    );
    ensure!(
        chat["attributes"]["gen_ai.provider.name"].is_string(),
        "chat: {chat}"
    );
    let tool = named("execute_tool ")?;
    ensure!(
        tool["attributes"]["gen_ai.tool.name"].is_string(),
        "tool: {tool}"
    );
    let wait = named("panewise.approval.wait")?;
    ensure!(
        wait["attributes"]["panewise.approval.decision"] == "approved",
        "wait: {wait}"
    );
    ensure!(
        wait["attributes"]["panewise.approval.by"] == "client",
        "wait: {wait}"
    );
    if let Some(traceparent) = traceparent {
        let expected = format!("00-{trace_id}-{root_id}-01");
        ensure!(
            traceparent == expected,
            "the CLI's TRACEPARENT {traceparent} is not the session span's {expected}"
        );
    }
    eprintln!(
        "e2e: {}: Phoenix shows {} spans: {}; {} {}+{} tokens",
        case.name,
        spans.len(),
        names(spans),
        chat["name"].as_str().unwrap_or("chat"),
        chat["attributes"]["gen_ai.usage.input_tokens"],
        chat["attributes"]["gen_ai.usage.output_tokens"],
    );
    Ok(())
}
