//! panewise's own agent loop as a session backend: the model is called through a
//! [`ModelClient`], its tool calls are run by panewise's own [`tools`](crate::tools), and the
//! window stage visits the conversation before every call.
//!
//! One iteration: visit the window stage ([`WindowRunner`], the summarizer a
//! [`ModelSummarizer`] over the same client), apply the plan to the conversation and replay it
//! onto the messages rendered for the API ([`LoopHistory`]: each message rendered once, when
//! it was appended; an edit re-renders only what it changed), file the visit in the window
//! ledger ([`ledger`]) and report a compaction to the reducer, assemble the request's body
//! from the kept fragments (byte for byte what [`request::api_messages`] and `ApiKind::body`
//! render, refusing an orphan call or result as they do), stream the call
//! ([`ModelClient::stream_rendered`]), then run each requested tool as [`approval::decide`] says (`Ask` goes through
//! the reducer's approval queue, which the session engine answers; a denial goes back to the
//! model as the call's error result). The turn ends when the model answers without tools, or
//! at the iteration limit. The model's events reach the reducer through the engine's
//! [`Mapper`](panewise_providers::Mapper), as a supervised CLI's do, so `panewise replay`
//! replays this loop's logs too.
//!
//! [`approval::decide`]: crate::approval::decide
//! [`ledger`]: crate::agent_loop::ledger
//! [`request::api_messages`]: crate::agent_loop::request::api_messages

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use panewise_pane_state::reducer::accumulate;
use panewise_pane_state::Msg;
use panewise_providers::transport::{CancellationToken, EventStream, ModelClient};
use panewise_providers::{
    ApiError, ApiKind, CompactionTrigger, Failure, FailureKind, Provider, ProviderEvent,
    RequestError, RequestHead, SessionStats, ToolDefinition, ToolStatus,
};
use panewise_window::cache::{CachePricing, CacheRules};
use panewise_window::{Measured, Message, StrategyConfig, Usage, VisitContext, WindowRecord};

use super::Produced;
use crate::agent_loop::history::LoopHistory;
use crate::agent_loop::ledger::{self, WindowLedger};
use crate::agent_loop::resume::Rebuilt;
use crate::approval::{decide, ApprovalMode, Decision, ToolRequest};
use crate::clock::SessionClock;
use crate::error::SessionError;
use crate::journal::transcript;
use crate::session::Outlet;
use crate::summarize::{ModelSummarizer, Summarizer, WindowRunner};
use crate::tools::{ToolCall, ToolContext, ToolLimits, ToolOutcome};
use panewise_pane_state::log::{ToolCallStatus, TranscriptEntry};

/// The most model calls one turn may make unless configured otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;

/// The most output tokens one call may produce unless configured otherwise.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8_192;

/// What one run of the loop needs.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// The provider's name as configured (`mock`, `anthropic`, `openai`, `gemini`), for the
    /// log header and the window records.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The working directory: tools run in it and approvals are decided against it.
    pub cwd: PathBuf,
    /// How tool calls are approved.
    pub approval: ApprovalMode,
    /// The window strategy.
    pub strategy: StrategyConfig,
    /// The session log; the window ledger goes beside it ([`ledger::ledger_path`]).
    pub log: PathBuf,
    /// The most model calls per turn.
    pub max_iterations: u32,
    /// The most output tokens per call.
    pub max_output_tokens: u32,
    /// The limits every tool run is held to.
    pub tool_limits: ToolLimits,
    /// The variables the tools' processes do not get (the API keys,
    /// [`crate::secrets::EnvPolicy::tool_removals`]).
    pub tool_env_remove: Vec<String>,
    /// Whether requests ask for the provider's prompt cache (on by default; `prompt_cache =
    /// false` under the provider's table in `panewise.toml` turns it off). See
    /// [`RequestHead::prompt_cache`] for what each API is sent.
    pub prompt_cache: bool,
    /// The session's prompt-cache key (OpenAI `prompt_cache_key`): stable over the session,
    /// [`session_cache_key`] of the log by default.
    pub cache_key: Option<String>,
}

/// The prompt-cache key of the session logged at `log`: `panewise-` and a fixed-seed hash of
/// the log's path. The log names the session, so the key is stable over its calls and differs
/// between sessions; the path itself, which may name the person, never reaches the provider.
pub fn session_cache_key(log: &std::path::Path) -> String {
    let path = log.to_string_lossy();
    format!(
        "panewise-{:016x}",
        panewise_window::cache::block_hash(&[&path])
    )
}

impl LoopConfig {
    /// A configuration with the defaults: no system prompt beyond the working directory, the
    /// default limits.
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        cwd: PathBuf,
        strategy: StrategyConfig,
        log: PathBuf,
    ) -> Self {
        let system = format!(
            "You are a coding agent run by panewise. Working directory: {}\nUse the tools to \
             inspect and change files and to run commands; answer without tools when done.",
            cwd.display()
        );
        let cache_key = Some(session_cache_key(&log));
        Self {
            provider: provider.into(),
            model: model.into(),
            system: Some(system),
            cwd,
            approval: ApprovalMode::Ask,
            strategy,
            log,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            tool_limits: ToolLimits::default(),
            tool_env_remove: crate::secrets::tool_env_removals(&[]),
            prompt_cache: true,
            cache_key,
        }
    }
}

/// One tool call the loop ran or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// The tool's name as the model called it.
    pub name: String,
    /// What the call wanted (the command, the path).
    pub summary: String,
    /// Whether it ran (false: denied, bad arguments, interrupted).
    pub ran: bool,
    /// Whether its result is an error.
    pub is_error: bool,
    /// `shell`'s exit code.
    pub exit_code: Option<i32>,
}

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

/// What the loop does next, once nothing is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Wait for an input.
    Nothing,
    /// Start the next iteration: visit the window, call the model.
    Call,
    /// Run (or decide) the next pending tool call.
    Tools,
    /// End the turn.
    EndTurn { interrupted: bool },
}

/// What the call under way has produced so far.
#[derive(Debug, Default)]
struct CallInProgress {
    text: String,
    calls: Vec<panewise_window::ToolCall>,
    stats: Option<SessionStats>,
    failed: bool,
    sent_messages: usize,
}

/// A tool call waiting for its turn, parsed or not.
#[derive(Debug)]
struct PendingCall {
    id: String,
    name: String,
    parsed: Result<ToolCall, String>,
}

type ToolFuture = Pin<Box<dyn Future<Output = ToolOutcome> + Send>>;

struct Running {
    id: String,
    name: String,
    summary: String,
    future: ToolFuture,
}

/// panewise's own loop as a session backend.
pub struct ModelAgent {
    client: Arc<dyn ModelClient>,
    provider: Provider,
    window: WindowRunner<Message>,
    /// The window's conversation and, in step with it, each message rendered once for the
    /// API: a request's body is assembled from those fragments, not rendered again.
    history: LoopHistory,
    /// Call ids whose results are errors.
    errored: HashSet<String>,
    /// Every call id the session used.
    call_ids: HashSet<String>,
    ledger: WindowLedger,
    ledger_path: PathBuf,
    records: Vec<WindowRecord>,
    visits: u32,
    /// Model calls of the whole session: the window's iteration.
    iteration: u32,
    /// Model calls of the current turn, held to the limit.
    turn_iterations: u32,
    measured: Option<Measured>,
    /// What the person asked in the current turn: the window's current request.
    prompt: Option<String>,
    stream: Option<EventStream>,
    cancel: CancellationToken,
    call: CallInProgress,
    turn_stats: SessionStats,
    pending: VecDeque<PendingCall>,
    running: Option<Running>,
    /// The call whose approval the reducer's queue holds.
    asked: Option<PendingCall>,
    next: Next,
    clock: SessionClock,
    tools: ToolContext,
    tool_definitions: Vec<ToolDefinition<'static>>,
    tool_runs: Vec<ToolRun>,
    limit_reached: u32,
    /// Transcript lines the loop itself knows (a call's whole input, a refusal, the policy's
    /// answer), for the engine to record.
    transcript: Vec<(u64, TranscriptEntry)>,
    config: LoopConfig,
}

impl std::fmt::Debug for ModelAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgent")
            .field("provider", &self.config.provider)
            .field("model", &self.config.model)
            .field("iteration", &self.iteration)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl ModelAgent {
    /// A backend over `client`; the window ledger is created beside `config.log`.
    pub fn new(config: LoopConfig, client: Arc<dyn ModelClient>) -> Result<Self, SessionError> {
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
        let tool_definitions = crate::tools::definitions()
            .into_iter()
            .map(|tool| ToolDefinition {
                name: Cow::Borrowed(tool.name),
                description: Cow::Borrowed(tool.description),
                parameters: Cow::Owned(tool.parameters),
            })
            .collect();
        Ok(ModelAgent {
            client,
            provider,
            window,
            history: LoopHistory::new(api),
            errored: HashSet::new(),
            call_ids: HashSet::new(),
            ledger,
            ledger_path,
            records: Vec::new(),
            visits: 0,
            iteration: 0,
            turn_iterations: 0,
            measured: None,
            prompt: None,
            stream: None,
            cancel: CancellationToken::new(),
            call: CallInProgress::default(),
            turn_stats: SessionStats::default(),
            pending: VecDeque::new(),
            running: None,
            asked: None,
            next: Next::Nothing,
            clock: SessionClock::start(),
            tools: ToolContext {
                cwd: config.cwd.clone(),
                limits: config.tool_limits,
                env_remove: config.tool_env_remove.clone(),
            },
            tool_definitions,
            tool_runs: Vec::new(),
            limit_reached: 0,
            transcript: Vec::new(),
            config,
        })
    }

    /// Continues a recorded session: its rebuilt conversation becomes the start of this one's
    /// (each message appended as the loop appends its own, and filed in the window ledger),
    /// so the next prompt is sent with it. Call before the first prompt.
    pub fn resume_from(&mut self, rebuilt: &Rebuilt) -> Result<(), SessionError> {
        self.errored.extend(rebuilt.errored.iter().cloned());
        for message in &rebuilt.messages {
            for call in &message.tool_calls {
                self.call_ids.insert(call.id.clone());
            }
            self.append(message.clone())?;
        }
        Ok(())
    }

    /// The provider whose event vocabulary the loop's API speaks.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The model.
    pub fn model(&self) -> String {
        self.config.model.clone()
    }

    /// The loop's configuration.
    pub fn config(&self) -> &LoopConfig {
        &self.config
    }

    /// What the loop did over the session.
    pub fn outcome(self) -> ModelOutcome {
        ModelOutcome {
            ledger: self.ledger_path,
            records: self.records,
            visits: self.visits,
            tool_runs: self.tool_runs,
            limit_reached: self.limit_reached,
        }
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
            (None, Some(running)) => Input::ToolDone(running.future.as_mut().await),
            (None, None) => std::future::pending().await,
        }
    }

    /// What one input produced.
    pub(crate) fn on_input(
        &mut self,
        input: Input,
        out: &Outlet,
    ) -> Result<Vec<Produced>, SessionError> {
        let mut produced = Vec::new();
        match input {
            Input::Model(Ok(event)) => {
                match &event {
                    ProviderEvent::TextDelta { text } => self.call.text.push_str(text),
                    ProviderEvent::ToolCallRequested {
                        call_id,
                        name,
                        arguments,
                    } => {
                        let id = self.unique_call_id(call_id);
                        // The call with its whole input, by the id the loop uses for it, when
                        // the model asks: a refused call still shows what it wanted.
                        let entry = TranscriptEntry::ToolCall {
                            call_id: id.clone(),
                            name: name.clone(),
                            input: Some(transcript::arguments_value(arguments)),
                            arg: None,
                        };
                        self.transcript.push((self.clock.now_ms(), entry));
                        self.call.calls.push(panewise_window::ToolCall {
                            id,
                            name: name.clone(),
                            args: arguments.clone(),
                        })
                    }
                    ProviderEvent::CallEnded { stats, .. } => {
                        let input = [
                            stats.input_tokens,
                            stats.cached_input_tokens,
                            stats.cache_write_input_tokens,
                        ];
                        if input.iter().any(Option::is_some) {
                            self.measured = Some(Measured {
                                usage: Usage {
                                    input: input
                                        .iter()
                                        .flatten()
                                        .fold(0u64, |sum, count| sum.saturating_add(*count)),
                                    output: stats.output_tokens.unwrap_or(0),
                                },
                                sent_messages: self.call.sent_messages,
                                iteration: self.iteration,
                            });
                        }
                        self.call.stats = Some(stats.clone());
                    }
                    ProviderEvent::Failure { .. } => self.call.failed = true,
                    _ => {}
                }
                produced.push(Produced::Event(event));
            }
            // The interrupt already ended the call and the turn.
            Input::Model(Err(ApiError::Cancelled { .. })) => {}
            Input::Model(Err(error)) => {
                self.call.failed = true;
                produced.push(Produced::Event(failure_event(&error)));
            }
            Input::ModelEnded => {
                self.stream = None;
                self.finish_call()?;
            }
            Input::ToolDone(outcome) => {
                if let Some(running) = self.running.take() {
                    produced.extend(self.tool_finished(running, outcome, out)?);
                }
            }
        }
        Ok(produced)
    }

    /// The reducer's prompt starts a turn: it joins the conversation, and the next step is a
    /// model call.
    pub(crate) fn send_prompt(&mut self, text: String) -> Result<(), SessionError> {
        let mut message = Message::user(text.clone());
        message.born_at_ms = Some(self.clock.now_ms());
        self.append(message)?;
        self.prompt = Some(text);
        self.turn_iterations = 0;
        self.turn_stats = SessionStats::default();
        self.next = Next::Call;
        Ok(())
    }

    /// The answer to the call whose approval was asked: it starts, or is refused with
    /// `reason`.
    pub(crate) fn resolve_approval(
        &mut self,
        id: &str,
        approved: bool,
        reason: &str,
        out: &Outlet,
    ) -> Result<Vec<Produced>, SessionError> {
        let Some(call) = self.asked.take_if(|asked| asked.id == id) else {
            return Ok(Vec::new());
        };
        match (&call.parsed, approved) {
            (Ok(parsed), true) => {
                let parsed = parsed.clone();
                Ok(self.start_tool(call.id, call.name, parsed))
            }
            _ => {
                self.refuse(call, reason.to_owned(), out)?;
                self.next = Next::Tools;
                Ok(Vec::new())
            }
        }
    }

    /// What the call whose approval is asked wants to do.
    pub(crate) fn request(&self, id: &str) -> Option<ToolRequest<'_>> {
        match &self.asked {
            Some(PendingCall {
                id: asked,
                parsed: Ok(parsed),
                ..
            }) if asked == id => Some(ToolRequest::Own(parsed)),
            _ => None,
        }
    }

    /// The transcript lines gathered since the last call.
    pub(crate) fn take_transcript(&mut self) -> Vec<(u64, TranscriptEntry)> {
        std::mem::take(&mut self.transcript)
    }

    /// Nothing is under way or due.
    pub(crate) fn is_idle(&self) -> bool {
        self.stream.is_none()
            && self.running.is_none()
            && self.asked.is_none()
            && self.next == Next::Nothing
    }

    /// One step of what is due once nothing is under way: the next tool call, the next
    /// iteration, the end of the turn. `None` when there is nothing to do now.
    pub(crate) async fn settle(
        &mut self,
        state: &panewise_pane_state::State,
        out: &Outlet,
    ) -> Result<Option<Vec<Produced>>, SessionError> {
        let under_way = self.stream.is_some() || self.running.is_some() || self.asked.is_some();
        if under_way && !state.turn_phase.is_working() {
            // The reducer ended the turn (a deadline, a failure): nothing may go on working
            // for it unseen.
            self.interrupt(out)?;
            return Ok(Some(Vec::new()));
        }
        if under_way {
            return Ok(None);
        }
        let produced = match std::mem::replace(&mut self.next, Next::Nothing) {
            Next::Nothing => return Ok(None),
            Next::Tools => match self.pending.pop_front() {
                Some(call) => self.next_tool(call, out)?,
                None if self.turn_iterations >= self.config.max_iterations => {
                    self.limit_reached = self.limit_reached.saturating_add(1);
                    let message = format!(
                        "stopped after {} model calls, the iteration limit of this turn",
                        self.turn_iterations
                    );
                    out.notice(message.clone());
                    vec![Produced::Event(ProviderEvent::Failure {
                        failure: Failure {
                            kind: FailureKind::Unknown,
                            retryable: false,
                            message,
                            http_status: None,
                        },
                    })]
                }
                None => {
                    self.next = Next::Call;
                    Vec::new()
                }
            },
            Next::Call => self.start_call(out).await?,
            Next::EndTurn { interrupted } => {
                self.prompt = None;
                vec![Produced::Event(ProviderEvent::TurnEnded {
                    stats: std::mem::take(&mut self.turn_stats),
                    models: BTreeMap::new(),
                    interrupted,
                })]
            }
        };
        Ok(Some(produced))
    }

    /// Stops the turn: the call's token is cancelled, the running tool's process group is
    /// killed (its future dropped), and every call left without a result gets one saying it
    /// was interrupted, so the next request pairs every call with its result.
    pub(crate) fn interrupt(&mut self, _out: &Outlet) -> Result<(), SessionError> {
        let nothing_under_way = self.stream.is_none()
            && self.running.is_none()
            && self.asked.is_none()
            && self.pending.is_empty();
        if nothing_under_way && matches!(self.next, Next::Nothing | Next::EndTurn { .. }) {
            // Idle, or already stopped and ending its turn: a second stop changes nothing.
            return Ok(());
        }
        self.cancel.cancel();
        if self.stream.take().is_some() {
            let call = std::mem::take(&mut self.call);
            if let Some(stats) = &call.stats {
                self.add_call_stats(stats);
            }
            if !call.text.is_empty() {
                let mut message = Message::assistant(call.text);
                message.born_at_ms = Some(self.clock.now_ms());
                self.append(message)?;
            }
        }
        let reason = crate::agent_loop::resume::INTERRUPTED_RESULT.to_owned();
        if let Some(running) = self.running.take() {
            self.add_result(&running.id, &running.name, reason.clone(), true)?;
        }
        let mut left: Vec<PendingCall> = self.asked.take().into_iter().collect();
        left.extend(self.pending.drain(..));
        for call in left {
            self.add_result(&call.id, &call.name, reason.clone(), true)?;
        }
        self.next = Next::EndTurn { interrupted: true };
        Ok(())
    }

    /// One call's figures added into the turn's, by the reducer's own arithmetic (R61): each
    /// call counts as one round trip.
    fn add_call_stats(&mut self, call: &SessionStats) {
        let turn = std::mem::take(&mut self.turn_stats);
        self.turn_stats = accumulate(Some(turn), Some(call)).unwrap_or_default();
    }

    fn ledger_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Ledger {
            path: self.ledger_path.clone(),
            source,
        }
    }

    /// Appends a message to the conversation and to the ledger.
    fn append(&mut self, message: Message) -> Result<(), SessionError> {
        self.ledger
            .message(&message)
            .map_err(|source| self.ledger_error(source))?;
        self.history.push(message, &self.errored);
        Ok(())
    }

    /// The call's id, or, when the session already used it (some APIs number calls per
    /// answer, `call_0` every time), the id with a suffix: the request carries both the call
    /// and its result, so the renamed pair still matches, and no two calls share an id.
    fn unique_call_id(&mut self, given: &str) -> String {
        let mut id = given.to_owned();
        let mut suffix = 1u32;
        while self.call_ids.contains(&id) {
            suffix = suffix.saturating_add(1);
            id = format!("{given}_{suffix}");
        }
        self.call_ids.insert(id.clone());
        id
    }

    /// The call's stream ended: its text and calls join the conversation (a failed call's
    /// calls do not: they would have no results), then its tools run or the turn ends.
    fn finish_call(&mut self) -> Result<(), SessionError> {
        let call = std::mem::take(&mut self.call);
        if let Some(stats) = &call.stats {
            self.add_call_stats(stats);
        }
        let calls = if call.failed { Vec::new() } else { call.calls };
        if !call.text.is_empty() || !calls.is_empty() {
            let mut message = Message::assistant(call.text);
            message.born_at_ms = Some(self.clock.now_ms());
            for tool_call in &calls {
                self.pending.push_back(PendingCall {
                    id: tool_call.id.clone(),
                    name: tool_call.name.clone(),
                    parsed: ToolCall::parse(
                        &tool_call.name,
                        &serde_json::Value::String(if tool_call.args.trim().is_empty() {
                            "{}".to_owned()
                        } else {
                            tool_call.args.clone()
                        }),
                    )
                    .map_err(|error| error.to_string()),
                });
            }
            message.tool_calls = calls;
            self.append(message)?;
        }
        self.next = if call.failed {
            // The failure ended the turn in the reducer.
            Next::Nothing
        } else if self.pending.is_empty() {
            Next::EndTurn { interrupted: false }
        } else {
            Next::Tools
        };
        Ok(())
    }

    /// A tool's result joins the conversation; the pane sees the tool end.
    fn tool_finished(
        &mut self,
        running: Running,
        outcome: ToolOutcome,
        out: &Outlet,
    ) -> Result<Vec<Produced>, SessionError> {
        let status = if outcome.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        };
        let event = ProviderEvent::ToolEnded {
            call_id: running.id.clone(),
            status,
            exit_code: outcome.exit_code.map(i64::from),
            output: Some(outcome.content.clone()),
        };
        let exit = match (outcome.exit_code, outcome.timed_out) {
            (_, true) => " (timed out)".to_owned(),
            (Some(code), _) => format!(" (exit {code})"),
            (None, _) if outcome.is_error => " (error)".to_owned(),
            (None, _) => String::new(),
        };
        out.notice(format!("ran {} `{}`{exit}", running.name, running.summary));
        self.tool_runs.push(ToolRun {
            name: running.name.clone(),
            summary: running.summary.clone(),
            ran: true,
            is_error: outcome.is_error,
            exit_code: outcome.exit_code,
        });
        self.add_result(
            &running.id,
            &running.name,
            outcome.content,
            outcome.is_error,
        )?;
        self.next = Next::Tools;
        Ok(vec![Produced::Event(event)])
    }

    fn add_result(
        &mut self,
        id: &str,
        name: &str,
        content: String,
        is_error: bool,
    ) -> Result<(), SessionError> {
        let mut message = Message::tool_result(id, content);
        message.tool_name = Some(name.to_owned());
        message.born_at_ms = Some(self.clock.now_ms());
        if is_error {
            self.errored.insert(id.to_owned());
        }
        self.append(message)
    }

    /// A call that does not run: its reason goes back to the model as an error result.
    fn refuse(
        &mut self,
        call: PendingCall,
        reason: String,
        out: &Outlet,
    ) -> Result<(), SessionError> {
        let summary = match &call.parsed {
            Ok(parsed) => parsed.summary(),
            Err(_) => String::new(),
        };
        out.notice(format!("did not run {} `{summary}`: {reason}", call.name));
        let entry = TranscriptEntry::ToolOutput {
            call_id: call.id.clone(),
            status: ToolCallStatus::Declined,
            exit_code: None,
            output: Some(reason.clone()),
            cut_bytes: 0,
        };
        self.transcript.push((self.clock.now_ms(), entry));
        self.tool_runs.push(ToolRun {
            name: call.name.clone(),
            summary,
            ran: false,
            is_error: true,
            exit_code: None,
        });
        self.add_result(&call.id, &call.name, reason, true)
    }

    /// Starts a call the policy or the person allowed; the pane sees the tool start.
    fn start_tool(&mut self, id: String, name: String, parsed: ToolCall) -> Vec<Produced> {
        let summary = parsed.summary();
        let context = self.tools.clone();
        let future: ToolFuture =
            Box::pin(async move { crate::tools::run(&parsed, &context).await });
        let event = ProviderEvent::ToolStarted {
            name: name.clone(),
            call_id: id.clone(),
            arg: Some(summary.clone()),
            // The call and its whole input were recorded when the model asked.
            input: None,
        };
        self.running = Some(Running {
            id,
            name,
            summary,
            future,
        });
        vec![Produced::Event(event)]
    }

    /// Decides the next pending call: runs it, asks through the reducer's queue, or refuses.
    fn next_tool(
        &mut self,
        call: PendingCall,
        out: &Outlet,
    ) -> Result<Vec<Produced>, SessionError> {
        let parsed = match &call.parsed {
            Ok(parsed) => parsed.clone(),
            Err(reason) => {
                let reason = reason.clone();
                self.refuse(call, reason, out)?;
                self.next = Next::Tools;
                return Ok(Vec::new());
            }
        };
        let decision = decide(
            self.config.approval,
            &ToolRequest::Own(&parsed),
            &self.tools.cwd,
        );
        let entry = transcript::policy_entry(
            &call.id,
            &call.name,
            &parsed.summary(),
            &decision,
            self.config.approval,
        );
        self.transcript.push((self.clock.now_ms(), entry));
        match decision {
            Decision::Run => Ok(self.start_tool(call.id, call.name, parsed)),
            Decision::Deny { reason } => {
                self.refuse(call, reason, out)?;
                self.next = Next::Tools;
                Ok(Vec::new())
            }
            Decision::Ask => {
                let msg = Msg::ApprovalRequested {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: parsed.summary(),
                    turn: None,
                };
                self.asked = Some(call);
                Ok(vec![Produced::Msg(msg)])
            }
        }
    }

    /// One iteration's start: the window visit, the ledger, the request, the call.
    async fn start_call(&mut self, out: &Outlet) -> Result<Vec<Produced>, SessionError> {
        self.iteration = self.iteration.saturating_add(1);
        self.turn_iterations = self.turn_iterations.saturating_add(1);
        let now = self.clock.now_ms();
        let mut context = VisitContext::new(self.iteration, now);
        context.provider = &self.config.provider;
        context.measured = self.measured;
        context.current_request = self.prompt.as_deref();
        context.previous_records = &self.records;
        // The stage judges each edit by what it costs in this provider's prompt cache (its
        // record says, and a `paybackCalls` guard holds back one that does not pay); without
        // the cache asked for, Anthropic caches nothing and an edit breaks nothing there.
        context.cache_pricing = match (self.client.api(), self.config.prompt_cache) {
            (ApiKind::Anthropic, false) => None,
            (ApiKind::Anthropic, true) => CachePricing::for_rules(CacheRules::anthropic()),
            (ApiKind::OpenAi, _) => CachePricing::for_rules(CacheRules::openai()),
            (ApiKind::Gemini, _) => CachePricing::for_rules(CacheRules::gemini()),
        };
        let plan = self
            .window
            .visit(self.history.conversation(), context)
            .await?;
        self.visits = self.visits.saturating_add(1);
        let mut produced = Vec::new();
        match plan {
            None => self
                .ledger
                .idle(
                    self.iteration,
                    self.window.strategy_name(),
                    self.measured.map(|measured| measured.usage.input),
                    self.config.strategy.threshold_tokens(),
                )
                .map_err(|source| self.ledger_error(source))?,
            Some(mut plan) => {
                let conversation = self.history.conversation();
                let before = conversation.tokens_in(0..conversation.len());
                self.history.apply(&mut plan, &self.errored)?;
                let conversation = self.history.conversation();
                let after = conversation.tokens_in(0..conversation.len());
                self.ledger
                    .visit(&plan.record)
                    .map_err(|source| self.ledger_error(source))?;
                if let Some(warning) = &plan.warning {
                    out.notice(format!("window: {warning}"));
                }
                if plan.edit.is_some() {
                    // The pane shows the window's compaction as it shows an agent's own.
                    let trigger = CompactionTrigger::Auto;
                    produced.push(Produced::Msg(Msg::CompactionStarted { trigger, at: now }));
                    produced.push(Produced::Msg(Msg::CompactionBoundary {
                        trigger,
                        pre_tokens: before,
                        post_tokens: after,
                        duration_ms: Some(self.clock.now_ms().saturating_sub(now)),
                        at: self.clock.now_ms(),
                        frame_timestamp: None,
                    }));
                }
                self.records.push(plan.record);
            }
        }
        // A request that breaks the pairing rule is never sent (the session stops, as the
        // rule is the loop's own); one the API cannot take (a call's arguments are not JSON)
        // fails the call, as the client's own rendering would.
        let head = RequestHead {
            model: &self.config.model,
            system: self.config.system.as_deref(),
            tools: &self.tool_definitions,
            max_output_tokens: self.config.max_output_tokens,
            prompt_cache: self.config.prompt_cache,
            cache_key: self.config.cache_key.as_deref(),
        };
        let request = match self.history.request(&head) {
            Ok(request) => Ok(request),
            Err(RequestError::Pairing(pairing)) => return Err(SessionError::Pairing(pairing)),
            Err(other) => Err(ApiError::Request(other)),
        };
        self.call = CallInProgress {
            sent_messages: self.history.conversation().len(),
            ..CallInProgress::default()
        };
        self.cancel = CancellationToken::new();
        // The stream's own first event says the request started.
        let cancel = self.cancel.clone();
        match request.and_then(|request| self.client.stream_rendered(request, cancel)) {
            Ok(stream) => self.stream = Some(stream),
            Err(error) => {
                self.call.failed = true;
                produced.push(Produced::Event(failure_event(&error)));
            }
        }
        Ok(produced)
    }
}

/// A call's error as the failure event the reducer folds.
fn failure_event(error: &ApiError) -> ProviderEvent {
    ProviderEvent::Failure {
        failure: error.failure().cloned().unwrap_or_else(|| Failure {
            kind: FailureKind::Unknown,
            retryable: false,
            message: error.to_string(),
            http_status: None,
        }),
    }
}
