//! Tests of panewise's own agent loop: end to end against the workspace mock server in each
//! API format (Anthropic, OpenAI, Gemini), the approval modes, every built-in window strategy
//! with its ledger, the request-pairing property, and the `panewise run` binary offline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod cache_breakpoints;

mod pairing;
mod rendered;
mod resume;
mod round_trip;
mod strategies;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panewise_host::approval::ApprovalMode;
use panewise_host::backend::model::{LoopConfig, ModelAgent, ToolRun};
use panewise_host::backend::{Backend, BackendOutcome};
use panewise_host::session::lines::{drive, UserInput, View};
use panewise_host::session::{log_header, Session, SessionSpec};
use panewise_mock_server::{LoggedRequest, MockConfig, MockServer, RunningServer, Scenario};
use panewise_pane_state::State;
use panewise_providers::{ApiKey, ApiKind, ProviderEvent};
use panewise_transport::{ApiConfig, HttpModelClient};
use panewise_window::StrategyConfig;
use serde_json::Value;

/// A view that keeps what it was told.
#[derive(Default)]
pub(crate) struct RecordingView {
    pub(crate) notices: Vec<String>,
    pub(crate) asked: Vec<(String, String)>,
    pub(crate) events: Vec<&'static str>,
    /// The line the person types when asked, and where it goes.
    pub(crate) answer: Option<(tokio::sync::mpsc::Sender<String>, String)>,
}

impl View for RecordingView {
    fn agent_event(&mut self, event: &ProviderEvent) {
        self.events.push(event.kind_name());
    }
    fn state(&mut self, _state: &State) {}
    fn ask(&mut self, question: &panewise_host::session::lines::Question) {
        self.asked
            .push((question.tool.clone(), question.summary.clone()));
        if let Some((lines, answer)) = &self.answer {
            // The view is called from the front end's loop, which cannot wait: the queue
            // holds one line per question here, far from its bound.
            lines.try_send(answer.clone()).unwrap();
        }
    }
    fn notice(&mut self, text: &str) {
        self.notices.push(text.to_owned());
    }
}

/// One loop run against a mock server.
pub(crate) struct Run {
    pub(crate) outcome: LoopOutcome,
    pub(crate) view: RecordingView,
    pub(crate) requests: Vec<LoggedRequest>,
    pub(crate) log: PathBuf,
    pub(crate) cwd: PathBuf,
    _dir: tempfile::TempDir,
}

/// How a run of the loop ended: the session's state and what the loop did.
#[derive(Debug)]
pub(crate) struct LoopOutcome {
    pub(crate) state: State,
    pub(crate) records: Vec<panewise_window::WindowRecord>,
    pub(crate) tool_runs: Vec<ToolRun>,
}

/// Runs the loop through the session engine, driven by `user`'s lines, to its end.
pub(crate) async fn run_loop(
    config: LoopConfig,
    prompts: Vec<String>,
    client: Arc<dyn panewise_transport::ModelClient>,
    user: UserInput,
    view: &mut dyn View,
) -> Result<LoopOutcome, panewise_host::error::SessionError> {
    let header = log_header(
        &config.provider,
        Some(config.model.clone()),
        &config.cwd,
        None,
    );
    let spec = SessionSpec {
        prompts,
        approval: config.approval,
        can_ask: user.ask,
        stay_open: user.prompts,
        ..SessionSpec::new(header, config.log.clone(), config.cwd.clone())
    };
    let backend = ModelAgent::new(config, client)?;
    let (session, handle) = Session::new(spec, Backend::Model(Box::new(backend)))?;
    let outcome = drive(session, handle, user, None, view).await?;
    let BackendOutcome::Model(model) = outcome.backend else {
        panic!("the own loop ends with the loop's outcome");
    };
    Ok(LoopOutcome {
        state: outcome.state,
        records: model.records,
        tool_runs: model.tool_runs,
    })
}

/// What a run is given beyond the defaults.
pub(crate) struct Setup {
    pub(crate) api: ApiKind,
    pub(crate) scenario: Scenario,
    pub(crate) approval: ApprovalMode,
    pub(crate) strategy: &'static str,
    pub(crate) prompts: Vec<String>,
    pub(crate) view: RecordingView,
    pub(crate) max_iterations: u32,
    /// Overrides the working directory the system prompt states (the mock writes there).
    pub(crate) stated_cwd: Option<PathBuf>,
    pub(crate) user: UserInput,
}

impl Setup {
    pub(crate) fn new(api: ApiKind, scenario: Scenario) -> Self {
        Self {
            api,
            scenario,
            approval: ApprovalMode::FullAccess,
            strategy: r#"{"strategy":"token-budget","thresholdTokens":150000}"#,
            prompts: vec!["run the command".to_owned()],
            view: RecordingView::default(),
            max_iterations: 50,
            stated_cwd: None,
            user: UserInput::default(),
        }
    }
}

pub(crate) async fn start(scenario: Scenario) -> RunningServer {
    MockServer::start(MockConfig {
        scenario,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

/// Runs the loop once against a fresh mock server.
pub(crate) async fn run(setup: Setup) -> Run {
    let server = start(setup.scenario).await;
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let log = dir.path().join("session.jsonl");
    let strategy = StrategyConfig::from_json(setup.strategy).unwrap();
    let mut config = LoopConfig::new(
        setup.api.name(),
        "mock-model",
        cwd.clone(),
        strategy,
        log.clone(),
    );
    config.approval = setup.approval;
    config.max_iterations = setup.max_iterations;
    if let Some(stated) = &setup.stated_cwd {
        config.system = Some(format!("Working directory: {}", stated.display()));
    }
    let api = ApiConfig::new(setup.api, server.base_url(), ApiKey::new("test-key"));
    let client = Arc::new(HttpModelClient::new(api).unwrap());
    let mut view = setup.view;
    let outcome = run_loop(config, setup.prompts, client, setup.user, &mut view)
        .await
        .unwrap();
    let requests = server.log();
    server.shutdown().await;
    Run {
        outcome,
        view,
        requests,
        log,
        cwd,
        _dir: dir,
    }
}

/// The call ids of a logged request body, in order: `(id, is_result)`.
pub(crate) fn wire_calls(api: ApiKind, body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let text = |value: &Value, key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match api {
        ApiKind::Anthropic => {
            for message in body["messages"].as_array().into_iter().flatten() {
                for block in message["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("tool_use") => out.push((text(block, "id"), false)),
                        Some("tool_result") => out.push((text(block, "tool_use_id"), true)),
                        _ => {}
                    }
                }
            }
        }
        ApiKind::OpenAi => {
            for item in body["input"].as_array().into_iter().flatten() {
                match item["type"].as_str() {
                    Some("function_call") => out.push((text(item, "call_id"), false)),
                    Some("function_call_output") => out.push((text(item, "call_id"), true)),
                    _ => {}
                }
            }
        }
        ApiKind::Gemini => {
            for content in body["contents"].as_array().into_iter().flatten() {
                for part in content["parts"].as_array().into_iter().flatten() {
                    if let Some(call) = part.get("functionCall") {
                        out.push((text(call, "id"), false));
                    }
                    if let Some(response) = part.get("functionResponse") {
                        out.push((text(response, "id"), true));
                    }
                }
            }
        }
    }
    out
}

/// No request on the wire carried a result without its call before it, or a call without
/// its result after it.
pub(crate) fn assert_no_orphans(api: ApiKind, requests: &[LoggedRequest]) {
    for (index, request) in requests.iter().enumerate() {
        let calls = wire_calls(api, &request.body);
        for (position, (id, is_result)) in calls.iter().enumerate() {
            if *is_result {
                assert!(
                    calls[..position].iter().any(|(call, r)| call == id && !r),
                    "{api}: request {index}: result {id} without its call: {calls:?}"
                );
            } else {
                assert!(
                    calls[position..].iter().any(|(call, r)| call == id && *r),
                    "{api}: request {index}: call {id} without its result: {calls:?}"
                );
            }
        }
    }
}

/// The ledger of a run, parsed.
pub(crate) fn ledger(log: &Path) -> panewise_host::agent_loop::ledger::Ledger {
    panewise_host::agent_loop::ledger::read(&panewise_host::agent_loop::ledger::ledger_path(log))
        .unwrap()
}

/// The session log replays, and its checkpoint matches (the loop records what it folds).
pub(crate) fn assert_replays(log: &Path) {
    let bytes = std::fs::read(log).unwrap();
    let parsed = panewise_pane_state::parse_log_bytes(&bytes).unwrap();
    assert!(
        parsed.fold_checked().is_ok(),
        "{} does not replay",
        log.display()
    );
}
