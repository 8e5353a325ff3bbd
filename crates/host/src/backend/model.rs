//! panewise's own agent loop as a session backend: the thin shell around the pure
//! [`OwnLoop`] core, which decides everything (see [`crate::agent_loop::own_loop`]).
//!
//! One iteration, as the core asks: visit the window stage ([`WindowRunner`], the summarizer a
//! [`ModelSummarizer`] over the same client) and apply its plan to the conversation, replayed
//! onto the messages rendered for the API (`LoopHistory`: each message rendered once, when
//! it was appended; an edit re-renders only what it changed); file the visit in the window
//! ledger ([`ledger`]), and what left the window in the archive ([`archive`]), and report a
//! compaction to the reducer; stream the request the core assembled from the kept fragments
//! ([`ModelClient::stream_rendered`]); then run each requested tool as [`approval::decide`]
//! says (`Ask` goes through the reducer's approval queue, which the session engine answers; a
//! denial goes back to the model as the call's error result; an allowed `recall` the core
//! answers itself from its archive). The turn ends when the model answers without tools, or at the iteration
//! limit. This shell owns only what does I/O or waits: the stream and its cancellation, the
//! running tool's future, the ledger and archive files, the clock and the summarizer. The model's events
//! reach the reducer through the engine's [`Mapper`](panewise_providers::Mapper), as a
//! supervised CLI's do, so `panewise replay` replays this loop's logs too.
//!
//! [`approval::decide`]: crate::approval::decide
//! [`ledger`]: crate::agent_loop::ledger
//! [`archive`]: crate::agent_loop::archive

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use panewise_pane_state::log::TranscriptEntry;
use panewise_providers::{ApiError, ApiKind, Provider, ProviderEvent};
use panewise_transport::{CancellationToken, EventStream, ModelClient};
use panewise_window::{Message, WindowRecord};

use super::NoticeSink;
use super::Produced;
use crate::agent_loop::archive::{self, ArchiveFile};
use crate::agent_loop::ledger::{self, WindowLedger};
use crate::agent_loop::own_loop::{Effect, LoopInput, OwnLoop};
use crate::agent_loop::resume::Rebuilt;
use crate::approval::{ApprovalMode, ToolRequest};
use crate::clock::SessionClock;
use crate::error::SessionError;
use crate::summarize::{ModelSummarizer, Summarizer, WindowRunner};
use crate::tools::{ToolContext, ToolOutcome};

pub use panewise_core::agent_loop::config::{
    session_cache_key, LoopConfig, ToolRun, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_OUTPUT_TOKENS,
};

/// What the loop did over the session.
#[derive(Debug)]
pub struct ModelOutcome {
    /// Where the window ledger is.
    pub ledger: PathBuf,
    /// The records of the engaged visits, in order.
    pub records: Vec<WindowRecord>,
    /// Visits in all, engaged or not.
    pub visits: u32,
    /// Every tool call, in order.
    pub tool_runs: Vec<ToolRun>,
    /// The turns that stopped at the iteration limit.
    pub limit_reached: u32,
}

/// An input from the loop's own work.
pub enum Input {
    /// An event of the model call under way, or its error.
    Model(Result<ProviderEvent, ApiError>),
    /// The model call's stream ended.
    ModelEnded,
    /// The running tool finished.
    ToolDone(ToolOutcome),
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Model(event) => f.debug_tuple("Model").field(event).finish(),
            Input::ModelEnded => f.write_str("ModelEnded"),
            Input::ToolDone(outcome) => f.debug_tuple("ToolDone").field(outcome).finish(),
        }
    }
}

type ToolFuture = Pin<Box<dyn Future<Output = ToolOutcome> + Send>>;

/// panewise's own loop as a session backend: the shell around the pure [`OwnLoop`] that
/// carries out its effects.
pub struct ModelAgent {
    core: OwnLoop,
    client: Arc<dyn ModelClient>,
    provider: Provider,
    window: WindowRunner<Message>,
    ledger: WindowLedger,
    ledger_path: PathBuf,
    /// The archive beside the log (W75), created on its first span.
    archive: ArchiveFile,
    stream: Option<EventStream>,
    cancel: CancellationToken,
    running: Option<ToolFuture>,
    /// The core asked for a window visit, which the next [`ModelAgent::settle`] runs.
    visit_due: bool,
    clock: SessionClock,
    tools: ToolContext,
    /// Transcript lines the loop itself knows (a call's whole input, a refusal, the policy's
    /// answer), for the engine to record.
    transcript: Vec<(u64, TranscriptEntry)>,
    /// The session's MCP servers; dropped with the session, which ends them.
    mcp: Arc<panewise_mcp::client::McpClients>,
    /// Servers found gone by a call, to be said once each (shared with the call's future).
    mcp_gone: Arc<std::sync::Mutex<Vec<String>>>,
    /// Servers already said to be gone.
    mcp_said_gone: std::collections::BTreeSet<String>,
}

impl std::fmt::Debug for ModelAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgent")
            .field("provider", &self.core.config().provider)
            .field("model", &self.core.config().model)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl ModelAgent {
    /// A backend over `client`; the window ledger is created beside `config.log`.
    pub fn new(config: LoopConfig, client: Arc<dyn ModelClient>) -> Result<Self, SessionError> {
        // A strategy the provider applies is refused here when this API or model cannot,
        // before anything is written or sent: never silently ignored.
        if let Some(context) = config.strategy.provider_context() {
            panewise_providers::check_provider_context(client.api(), &config.model, context)?;
        }
        let ledger_path = ledger::ledger_path(&config.log);
        let ledger = WindowLedger::create(&ledger_path).map_err(|source| SessionError::Ledger {
            path: ledger_path.clone(),
            source,
        })?;
        let summarizer = config
            .strategy
            .needs_summarizer()
            .then(|| Box::new(ModelSummarizer::new(client.clone())) as Box<dyn Summarizer>);
        let window = WindowRunner::<Message>::from_config(&config.strategy, summarizer)?;
        // The events of each API are read the way the CLI built on it writes them.
        let api = client.api();

        let provider = match api {
            ApiKind::Anthropic => Provider::ClaudeCode,
            ApiKind::OpenAi => Provider::Codex,
            ApiKind::Gemini => Provider::GeminiCli,
        };
        let tools = ToolContext {
            cwd: config.cwd.clone(),
            limits: config.tool_limits,
            env_remove: config.tool_env_remove.clone(),
            shell_box: config.sandbox.plan(config.approval).boxed.map(|boxed| {
                crate::sandbox::ShellBox {
                    boxed,
                    mode: config.approval,
                }
            }),
            reach_system: config.approval == ApprovalMode::FullAccess,
        };
        let archive = ArchiveFile::new(archive::archive_path(&config.log));
        let core = OwnLoop::new(config, api, window.strategy_name()).with_prices(client.prices());
        Ok(ModelAgent {
            core,
            client,
            provider,
            window,
            ledger,
            ledger_path,
            archive,
            stream: None,
            cancel: CancellationToken::new(),
            running: None,
            visit_due: false,
            clock: SessionClock::start(),
            tools,
            transcript: Vec::new(),
            mcp: Arc::new(panewise_mcp::client::McpClients::none()),
            mcp_gone: Arc::new(std::sync::Mutex::new(Vec::new())),
            mcp_said_gone: std::collections::BTreeSet::new(),
        })
    }

    /// The backend calling the session's MCP servers through `clients` (whose tools the
    /// configuration's `mcp_tools` listed). The servers end when the backend is dropped.
    pub fn with_mcp(mut self, clients: Arc<panewise_mcp::client::McpClients>) -> Self {
        self.mcp = clients;
        self
    }

    /// Continues a recorded session: its rebuilt conversation becomes the start of this one's
    /// (each message appended as the loop appends its own, and filed in the window ledger),
    /// so the next prompt is sent with it. Call before the first prompt.
    pub fn resume_from(&mut self, rebuilt: &Rebuilt) -> Result<(), SessionError> {
        let effects = self.core.resume_from(rebuilt);
        self.carry_out(effects, None)?;
        Ok(())
    }

    /// Continues a recorded session's archive: the spans of `from_log`'s archive become
    /// recallable here and are written into this session's archive (W75). A torn last line is
    /// left out, as a kill leaves it. Call before the first prompt. How many spans it held.
    pub fn resume_archive(&mut self, from_log: &std::path::Path) -> Result<usize, SessionError> {
        let path = archive::archive_path(from_log);
        let loaded = archive::load(&path).map_err(|source| SessionError::Archive {
            action: "read",
            path: path.clone(),
            source,
        })?;
        let count = loaded.spans.len();
        let effects = self.core.load_archive(loaded.spans);
        self.carry_out(effects, None)?;
        Ok(count)
    }

    /// The provider whose event vocabulary the loop's API speaks.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The model.
    pub fn model(&self) -> String {
        self.core.config().model.clone()
    }

    /// The loop's configuration.
    pub fn config(&self) -> &LoopConfig {
        self.core.config()
    }

    /// What the loop did over the session.
    pub fn outcome(self) -> ModelOutcome {
        ModelOutcome {
            ledger: self.ledger_path,
            records: self.core.records().to_vec(),
            visits: self.core.visits(),
            tool_runs: self.core.tool_runs().to_vec(),
            limit_reached: self.core.limit_reached(),
        }
    }

    /// What the running turn's calls cost and processed so far (R112).
    pub(crate) fn turn_stats(&self) -> &panewise_protocol::SessionStats {
        self.core.turn_stats()
    }

    /// The session's clock, shared with the engine so the loop's stamps are the engine's.
    pub(crate) fn set_clock(&mut self, clock: SessionClock) {
        self.clock = clock;
    }

    /// The next input: the call's next event, or the running tool's end. Pending forever
    /// while neither is under way.
    pub(crate) async fn next_input(&mut self) -> Input {
        let stream = self.stream.as_mut();
        let running = self.running.as_mut();
        match (stream, running) {
            (Some(stream), _) => match stream.next().await {
                Some(event) => Input::Model(event),
                None => Input::ModelEnded,
            },
            (None, Some(running)) => Input::ToolDone(running.as_mut().await),
            (None, None) => std::future::pending().await,
        }
    }

    /// What one input produced.
    pub(crate) fn on_input(
        &mut self,
        input: Input,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        let at_ms = self.clock.now_ms();
        let input = match input {
            Input::Model(Ok(event)) => LoopInput::ModelEvent { event, at_ms },
            Input::Model(Err(error)) => LoopInput::ModelFailed { error },
            Input::ModelEnded => {
                self.stream = None;
                LoopInput::ModelEnded { at_ms }
            }
            Input::ToolDone(outcome) => {
                self.running = None;
                LoopInput::ToolDone { outcome, at_ms }
            }
        };
        let mut produced = self.step(input, out)?;
        // A server a call found gone is said in the pane, the log and the dashboard, once.
        let gone: Vec<String> = self
            .mcp_gone
            .lock()
            .map(|mut gone| std::mem::take(&mut *gone))
            .unwrap_or_default();
        for why in gone {
            if self.mcp_said_gone.insert(why.clone()) {
                let effects = crate::agent_loop::own_loop::mcp_notice(&why, at_ms);
                produced.extend(self.carry_out(effects, Some(out))?);
            }
        }
        Ok(produced)
    }

    /// The reducer's prompt starts a turn: it joins the conversation, and the next step is a
    /// model call.
    pub(crate) fn send_prompt(&mut self, text: String) -> Result<(), SessionError> {
        let at_ms = self.clock.now_ms();
        let effects = self.core.step(LoopInput::Prompt { text, at_ms })?;
        self.carry_out(effects, None)?;
        Ok(())
    }

    /// The answer to the call whose approval was asked: it starts, or is refused with
    /// `reason`.
    pub(crate) fn resolve_approval(
        &mut self,
        id: &str,
        approved: bool,
        reason: &str,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        let input = LoopInput::Approval {
            id: id.to_owned(),
            approved,
            reason: reason.to_owned(),
            at_ms: self.clock.now_ms(),
        };
        self.step(input, out)
    }

    /// The answers to the question an `ask_user` call put: the call's result.
    pub(crate) fn resolve_question(
        &mut self,
        id: &str,
        answers: &[String],
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        let input = LoopInput::Answered {
            id: id.to_owned(),
            answers: answers.to_vec(),
            at_ms: self.clock.now_ms(),
        };
        self.step(input, out)
    }

    /// What the call whose approval is asked wants to do.
    pub(crate) fn request(&self, id: &str) -> Option<ToolRequest<'_>> {
        self.core.request(id)
    }

    /// The transcript lines gathered since the last call.
    pub(crate) fn take_transcript(&mut self) -> Vec<(u64, TranscriptEntry)> {
        std::mem::take(&mut self.transcript)
    }

    /// Nothing is under way or due.
    pub(crate) fn is_idle(&self) -> bool {
        self.core.is_idle()
    }

    /// One step of what is due once nothing is under way: the next tool call, the next
    /// iteration (the window's visit, then the call), the end of the turn. `None` when there
    /// is nothing to do now.
    pub(crate) async fn settle(
        &mut self,
        state: &panewise_pane_state::State,
        out: &mut dyn NoticeSink,
    ) -> Result<Option<Vec<Produced>>, SessionError> {
        let turn_working = state.turn_phase.is_working();
        let held = state.budget_hold.is_some();
        if !self.core.is_due(turn_working, held) && !self.visit_due {
            return Ok(None);
        }
        let mut produced = Vec::new();
        if !self.visit_due {
            let input = LoopInput::Settle {
                turn_working,
                held,
                at_ms: self.clock.now_ms(),
            };
            produced = self.step(input, out)?;
        }
        if std::mem::take(&mut self.visit_due) {
            // The stage is pure; the summary call a summarizing strategy asks for is the one
            // thing awaited here.
            let plan = self
                .window
                .visit(self.core.conversation(), self.core.visit_context())
                .await;
            let input = LoopInput::Visited {
                plan: Box::new(plan),
                at_ms: self.clock.now_ms(),
            };
            produced.extend(self.step(input, out)?);
        }
        Ok(Some(produced))
    }

    /// Stops the turn: the call is cancelled, the running tool's process group killed (its
    /// future dropped), and every call left without a result gets one saying it was
    /// interrupted, so the next request pairs every call with its result.
    pub(crate) fn interrupt(&mut self, out: &mut dyn NoticeSink) -> Result<(), SessionError> {
        let at_ms = self.clock.now_ms();
        let effects = self.core.step(LoopInput::Interrupt { at_ms })?;
        // An interrupt's effects are cancellations, ledger lines and notices: nothing for
        // the engine to fold.
        self.carry_out(effects, Some(out))?;
        Ok(())
    }

    /// Folds `input` into the core and carries out what it returns.
    fn step(
        &mut self,
        input: LoopInput,
        out: &mut dyn NoticeSink,
    ) -> Result<Vec<Produced>, SessionError> {
        let effects = self.core.step(input)?;
        self.carry_out(effects, Some(out))
    }

    /// Carries out the core's effects in order; what the engine must fold is returned. A
    /// request that cannot start is folded back at once as the call's failure and end.
    fn carry_out(
        &mut self,
        effects: Vec<Effect>,
        mut out: Option<&mut dyn NoticeSink>,
    ) -> Result<Vec<Produced>, SessionError> {
        let mut produced = Vec::new();
        let mut queue: VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            match effect {
                Effect::VisitWindow => self.visit_due = true,
                Effect::CallModel(request) => {
                    self.cancel = CancellationToken::new();
                    match self.client.stream_rendered(request, self.cancel.clone()) {
                        Ok(stream) => self.stream = Some(stream),
                        Err(error) => {
                            let at_ms = self.clock.now_ms();
                            queue.extend(self.core.step(LoopInput::ModelFailed { error })?);
                            queue.extend(self.core.step(LoopInput::ModelEnded { at_ms })?);
                        }
                    }
                }
                Effect::CancelCall => {
                    self.cancel.cancel();
                    self.stream = None;
                }
                Effect::RunTool {
                    id: _,
                    call: crate::tools::ToolCall::Mcp(call),
                } => {
                    let running = self.mcp.call(&call.server, &call.tool, call.arguments);
                    let gone = self.mcp_gone.clone();
                    let cap = self.tools.limits.output_bytes;
                    self.running = Some(Box::pin(async move {
                        let outcome = running.await;
                        if let (Some(why), Ok(mut said)) = (outcome.server_gone, gone.lock()) {
                            said.push(why);
                        }
                        let content = crate::tools::output::cap_text(&outcome.text, cap);
                        if outcome.is_error {
                            ToolOutcome::error(content)
                        } else {
                            ToolOutcome::ok(content)
                        }
                    }));
                }
                Effect::RunTool { id: _, call } => {
                    let context = self.tools.clone();
                    self.running =
                        Some(Box::pin(
                            async move { crate::tools::run(&call, &context).await },
                        ));
                }
                Effect::ResolvePaths { id, paths } => {
                    let facts = crate::approval::resolve_paths(&self.tools.cwd, &paths);
                    let at_ms = self.clock.now_ms();
                    queue.extend(
                        self.core
                            .step(LoopInput::PathsResolved { id, facts, at_ms })?,
                    );
                }
                // Dropping the future kills the tool's process group.
                Effect::CancelTool => self.running = None,
                Effect::Ledger(line) => {
                    self.ledger
                        .write(&line)
                        .map_err(|source| SessionError::Ledger {
                            path: self.ledger_path.clone(),
                            source,
                        })?
                }
                Effect::Archive(spans) => {
                    for span in &spans {
                        self.archive
                            .write(span)
                            .map_err(|source| SessionError::Archive {
                                action: "write",
                                path: self.archive.path().to_path_buf(),
                                source,
                            })?;
                    }
                }
                Effect::Emit(event) => produced.push(Produced::Event(event)),
                Effect::Reduce(msg) => produced.push(Produced::Msg(msg)),
                Effect::Notice(text) => {
                    if let Some(out) = out.as_deref_mut() {
                        out.notice(text);
                    }
                }
                Effect::Transcript { at_ms, entry } => self.transcript.push((at_ms, entry)),
            }
        }
        Ok(produced)
    }
}
