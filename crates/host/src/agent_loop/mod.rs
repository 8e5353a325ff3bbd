//! panewise's own agent loop: the model is called through a [`ModelClient`], its tool calls
//! are run by panewise's own [`tools`](crate::tools), and the window stage visits the
//! conversation before every call.
//!
//! It is driven like the supervised runner ([`crate::runner`]): one loop over a closed
//! `Input` enum (a model event, the end of a call, a tool's result, a deadline, the watchdog
//! tick, Ctrl-C, a line the person typed), each input stamped with the session's clock,
//! recorded in the session log and folded with `step`, and one `match` over the reducer's
//! `Cmd`s: `SendPrompt` starts a turn, `ResolveApproval` runs or refuses an asked call,
//! `InterruptAgent` cancels the call's token and the running tool. The model's events reach
//! the reducer through the same [`Mapper`] the runner uses, so `panewise replay` replays
//! this loop's logs too.
//!
//! One iteration: visit the window stage ([`WindowRunner`], the summarizer a
//! [`ModelSummarizer`] over the same client), apply the plan, file the visit in the window
//! ledger ([`ledger`]) and report a compaction to the reducer, build the request from the
//! kept messages ([`request::api_messages`], which refuses an orphan call or result), stream
//! the call, then run each requested tool as [`approval::decide`] says (`Ask` goes through
//! the reducer's approval queue; a denial goes back to the model as the call's error result).
//! The turn ends when the model answers without tools, or at the iteration limit.
//!
//! [`approval::decide`]: crate::tools::approval::decide

pub mod ledger;
pub mod request;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use panewise_pane_state::cmd::DeadlineKind;
use panewise_pane_state::log::LogHeader;
use panewise_pane_state::{Cmd, Msg, State, TurnId, WATCHDOG_TICK_MS};
use panewise_providers::transport::{CancellationToken, EventStream, ModelClient};
use panewise_providers::{
    ApiError, ApiKind, CompactionTrigger, Failure, FailureKind, Mapper, ModelRequest, ModelTable,
    Provider, ProviderEvent, SessionStats, ToolDefinition, ToolStatus,
};
use panewise_window::{
    Conversation, Measured, Message, StrategyConfig, Usage, VisitContext, WindowRecord,
};
use tokio::time::{sleep_until, Duration, Instant};

use crate::clock::{now_ms, SessionClock};
use crate::error::LoopError;
use crate::journal::transcript::{self, PromptSource, TranscriptRecorder};
use crate::runner::{ApprovalMode, UserInput, UserLines, View};
use crate::session_log::SessionLogFile;
use crate::summarize::{ModelSummarizer, Summarizer, WindowRunner};
use crate::tools::approval::{decide, Decision};
use crate::tools::{ToolCall, ToolContext, ToolLimits, ToolOutcome};
use ledger::WindowLedger;
use panewise_pane_state::log::{Actor, ToolCallStatus, TranscriptEntry};

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
    /// The prompts, in order, each a turn.
    pub prompts: Vec<String>,
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
        Self {
            provider: provider.into(),
            model: model.into(),
            system: Some(system),
            cwd,
            prompts: Vec::new(),
            approval: ApprovalMode::Ask,
            strategy,
            log,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            tool_limits: ToolLimits::default(),
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

/// How a run of the loop ended.
#[derive(Debug)]
pub struct LoopOutcome {
    /// The final pane state.
    pub state: State,
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

/// The header of the loop's session log.
pub fn log_header(config: &LoopConfig) -> LogHeader {
    LogHeader {
        agent_id: config.provider.clone(),
        started_at_ms: now_ms(),
        model: Some(config.model.clone()),
        cwd: Some(config.cwd.display().to_string()),
        cli_version: None,
        panewise_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        resumed_from: None,
        // transcript: `agent_id` already is the provider as the person named it.
        provider: None,
    }
}

/// Runs the loop over `client` until every prompt's turn has ended and the person can send
/// no more, recording the session log at `config.log` and the window ledger beside it.
pub async fn run_loop(
    config: LoopConfig,
    client: Arc<dyn ModelClient>,
    user: UserInput,
    view: &mut dyn View,
) -> Result<LoopOutcome, LoopError> {
    let log_error = |source| LoopError::Log {
        path: config.log.clone(),
        source,
    };
    let mut log = SessionLogFile::create(&config.log, &log_header(&config)).map_err(log_error)?;
    let ledger_path = ledger::ledger_path(&config.log);
    let ledger = WindowLedger::create(&ledger_path).map_err(|source| LoopError::Ledger {
        path: ledger_path.clone(),
        source,
    })?;
    let summarizer = config
        .strategy
        .needs_summarizer()
        .then(|| Box::new(ModelSummarizer::new(client.clone())) as Box<dyn Summarizer>);
    let window = WindowRunner::<Message>::from_config(&config.strategy, summarizer)?;
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
    let mut looper = Looper {
        client,
        mapper: Mapper::new(provider, ModelTable::built_in())
            .with_model(Some(config.model.clone())),
        window,
        conversation: Conversation::new(),
        errored: HashSet::new(),
        call_ids: HashSet::new(),
        ledger,
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
        deadlines: BTreeMap::new(),
        user_lines: user.lines,
        lines_are_prompts: user.prompts,
        can_ask: user.ask,
        asking: None,
        denial: None,
        clock: SessionClock::start(),
        tools: ToolContext {
            cwd: config.cwd.clone(),
            limits: config.tool_limits,
        },
        tool_definitions,
        tool_runs: Vec::new(),
        limit_reached: 0,
        config,
        transcript: TranscriptRecorder::new(PromptSource::Sent),
    };
    let prompts = std::mem::take(&mut looper.config.prompts);
    let ran = looper.run(&mut log, prompts, view).await;
    if let Err(error) = &ran {
        // transcript: the closing line says why the session ended (nothing if the log is gone).
        let _ignored =
            looper
                .transcript
                .finish(looper.clock.now_ms(), Some(error.to_string()), &mut log);
    }
    ran?;
    log.checkpoint()
        .map_err(|source| looper.log_error(source))?;
    // transcript: the closing line, after the final checkpoint.
    looper
        .transcript
        .finish(looper.clock.now_ms(), None, &mut log)
        .map_err(|source| looper.log_error(source))?;
    Ok(LoopOutcome {
        state: log.state().clone(),
        ledger: ledger_path,
        records: looper.records,
        visits: looper.visits,
        tool_runs: looper.tool_runs,
        limit_reached: looper.limit_reached,
    })
}

/// Every input the loop folds.
enum Input {
    /// An event of the model call under way, or its error.
    Model(Result<ProviderEvent, ApiError>),
    /// The model call's stream ended.
    ModelEnded,
    /// The running tool finished.
    ToolDone(ToolOutcome),
    /// A deadline the reducer armed fired.
    Deadline {
        turn: Option<TurnId>,
        kind: DeadlineKind,
        deadline_ms: u64,
    },
    /// The watchdog's tick.
    Tick,
    /// The person pressed Ctrl-C.
    Interrupt,
    /// The person typed a line: an answer to the question asked, or a prompt.
    UserLine(String),
    /// The person's input ended.
    UserClosed,
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

struct Looper {
    client: Arc<dyn ModelClient>,
    mapper: Mapper,
    window: WindowRunner<Message>,
    conversation: Conversation<Message>,
    /// Call ids whose results are errors.
    errored: HashSet<String>,
    /// Every call id the session used.
    call_ids: HashSet<String>,
    ledger: WindowLedger,
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
    deadlines: BTreeMap<(u8, Option<TurnId>), (Instant, DeadlineKind, u64)>,
    user_lines: Option<UserLines>,
    lines_are_prompts: bool,
    can_ask: bool,
    /// The approval the person was asked about, whose answer is their next line.
    asking: Option<String>,
    /// Why the loop itself denied the front approval (no terminal to ask on).
    denial: Option<String>,
    clock: SessionClock,
    tools: ToolContext,
    tool_definitions: Vec<ToolDefinition<'static>>,
    tool_runs: Vec<ToolRun>,
    limit_reached: u32,
    config: LoopConfig,
    /// transcript: the conversation's lines, queued until the next write to the log.
    transcript: TranscriptRecorder,
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

async fn next_event(stream: Option<&mut EventStream>) -> Option<Result<ProviderEvent, ApiError>> {
    match stream {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

async fn tool_done(running: Option<&mut Running>) -> ToolOutcome {
    match running {
        Some(running) => running.future.as_mut().await,
        None => std::future::pending().await,
    }
}

async fn next_line(lines: Option<&mut UserLines>) -> Option<String> {
    match lines {
        Some(lines) => lines.recv().await,
        None => std::future::pending().await,
    }
}

/// A deadline's kind as a map key (`DeadlineKind` has no order of its own).
fn deadline_key(kind: DeadlineKind) -> u8 {
    match kind {
        DeadlineKind::Submit => 0,
        DeadlineKind::Interrupt => 1,
        _ => 2,
    }
}

/// `add` summed into `total`, figure by figure, saturating; a figure absent from both stays
/// absent.
fn add_stats(total: &mut SessionStats, add: &SessionStats) {
    fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        }
    }
    total.input_tokens = sum(total.input_tokens, add.input_tokens);
    total.output_tokens = sum(total.output_tokens, add.output_tokens);
    total.cached_input_tokens = sum(total.cached_input_tokens, add.cached_input_tokens);
    total.cache_write_input_tokens =
        sum(total.cache_write_input_tokens, add.cache_write_input_tokens);
    total.reasoning_tokens = sum(total.reasoning_tokens, add.reasoning_tokens);
    total.num_turns = sum(total.num_turns, Some(1));
    total.duration_ms = sum(total.duration_ms, add.duration_ms);
    total.cost_usd = match (total.cost_usd, add.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    if add.cost_source.is_some() {
        total.cost_source = add.cost_source;
    }
}

impl Looper {
    async fn run(
        &mut self,
        log: &mut SessionLogFile,
        prompts: Vec<String>,
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        let mut batch = self.mapper.prologue(self.clock.now_ms());
        batch.extend(
            prompts
                .into_iter()
                .map(|text| Msg::PromptSubmitted { text }),
        );
        self.fold(log, batch, view).await?;
        self.advance(log, view).await?;
        let mut tick = tokio::time::interval(Duration::from_millis(WATCHDOG_TICK_MS));
        tick.tick().await;
        loop {
            if self.session_is_over(log) {
                break;
            }
            let next_deadline = self
                .deadlines
                .values()
                .map(|(at, kind, deadline_ms)| (*at, *kind, *deadline_ms))
                .zip(self.deadlines.keys().map(|(_, turn)| *turn))
                .min_by_key(|((at, ..), _)| *at);
            let input = tokio::select! {
                event = next_event(self.stream.as_mut()), if self.stream.is_some() => match event {
                    Some(event) => Input::Model(event),
                    None => Input::ModelEnded,
                },
                outcome = tool_done(self.running.as_mut()), if self.running.is_some() => Input::ToolDone(outcome),
                line = next_line(self.user_lines.as_mut()), if self.user_lines.is_some() => match line {
                    Some(line) => Input::UserLine(line),
                    None => Input::UserClosed,
                },
                _ = sleep_until(next_deadline.map_or_else(far_future, |((at, ..), _)| at)), if next_deadline.is_some() => {
                    match next_deadline {
                        Some(((_, kind, deadline_ms), turn)) => Input::Deadline { turn, kind, deadline_ms },
                        None => continue,
                    }
                }
                _ = tick.tick() => Input::Tick,
                _ = tokio::signal::ctrl_c() => Input::Interrupt,
            };
            let msgs = self.messages_for(input, log.state(), view)?;
            self.fold(log, msgs, view).await?;
            self.advance(log, view).await?;
        }
        Ok(())
    }

    /// Over when nothing is under way or due, no turn works, no prompt waits, and the person
    /// can send none.
    fn session_is_over(&self, log: &SessionLogFile) -> bool {
        self.stream.is_none()
            && self.running.is_none()
            && self.asked.is_none()
            && self.next == Next::Nothing
            && !(self.lines_are_prompts && self.user_lines.is_some())
            && !log.state().turn_phase.is_working()
            && log.state().queued_prompts.is_empty()
    }

    fn log_error(&self, source: std::io::Error) -> LoopError {
        LoopError::Log {
            path: self.config.log.clone(),
            source,
        }
    }

    fn ledger_error(&self, source: std::io::Error) -> LoopError {
        LoopError::Ledger {
            path: self.ledger.path().to_path_buf(),
            source,
        }
    }

    /// Appends a message to the conversation and to the ledger.
    fn append(&mut self, message: Message) -> Result<(), LoopError> {
        self.ledger
            .message(&message)
            .map_err(|source| self.ledger_error(source))?;
        self.conversation.push(message);
        Ok(())
    }

    /// The reducer messages for one input.
    fn messages_for(
        &mut self,
        input: Input,
        state: &State,
        view: &mut dyn View,
    ) -> Result<Vec<Msg>, LoopError> {
        let now = self.clock.now_ms();
        let mut msgs = Vec::new();
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
                        // transcript: the model's call with its whole input, by the id the
                        // loop uses for it.
                        self.transcript.record(
                            TranscriptEntry::ToolCall {
                                call_id: id.clone(),
                                name: name.clone(),
                                input: Some(transcript::arguments_value(arguments)),
                                arg: None,
                            },
                            now,
                        );
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
                view.agent_event(&event);
                // transcript: the model's text, thinking, retries and failures.
                self.transcript.on_event(&event, now);
                self.mapper.map(&event, now, &mut msgs);
            }
            // The interrupt already ended the call and the turn.
            Input::Model(Err(ApiError::Cancelled { .. })) => {}
            Input::Model(Err(error)) => {
                self.call.failed = true;
                let failure = error.failure().cloned().unwrap_or_else(|| Failure {
                    kind: FailureKind::Unknown,
                    retryable: false,
                    message: error.to_string(),
                    http_status: None,
                });
                let event = ProviderEvent::Failure { failure };
                view.agent_event(&event);
                // transcript: the call's failure.
                self.transcript.on_event(&event, now);
                self.mapper.map(&event, now, &mut msgs);
            }
            Input::ModelEnded => {
                self.stream = None;
                self.finish_call()?;
            }
            Input::ToolDone(outcome) => {
                if let Some(running) = self.running.take() {
                    msgs.extend(self.tool_finished(running, outcome, now, view)?);
                }
            }
            Input::Deadline {
                turn,
                kind,
                deadline_ms,
            } => {
                self.deadlines.remove(&(deadline_key(kind), turn));
                msgs.push(kind.elapsed(turn, deadline_ms));
            }
            Input::Tick => msgs.push(Msg::StreamWatchdogTick),
            Input::Interrupt if !state.turn_phase.is_working() => {
                view.notice("Ctrl-C between turns: ending the session");
                self.user_lines = None;
                msgs.extend(self.answer_asked(false));
            }
            Input::Interrupt => {
                // transcript: who asked for the interrupt.
                self.transcript
                    .record(TranscriptEntry::Interrupt { by: Actor::Person }, now);
                msgs.push(Msg::RequestStop { at: now });
            }
            Input::UserLine(line) => match self.asking.is_some() {
                true => {
                    let approved = matches!(line.trim(), "y" | "Y" | "yes" | "Yes");
                    if !approved {
                        view.notice(&format!("denied (you answered {:?})", line.trim()));
                    }
                    msgs.extend(self.answer_asked(approved));
                }
                false if self.lines_are_prompts => {
                    if !line.trim().is_empty() {
                        msgs.push(Msg::PromptSubmitted { text: line });
                    }
                }
                false => {
                    view.notice("no question is waiting for an answer; that line was not sent")
                }
            },
            Input::UserClosed => {
                self.user_lines = None;
                if self.asking.is_some() {
                    view.notice("your input ended before you answered: denied");
                }
                msgs.extend(self.answer_asked(false));
            }
        }
        Ok(msgs)
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

    fn answer_asked(&mut self, approved: bool) -> Option<Msg> {
        let request_id = self.asking.take()?;
        // transcript: the person's answer, or the session's when their input ended first.
        let (by, reason) = match self.user_lines {
            Some(_) => (Actor::Person, None),
            None => (
                Actor::Session,
                Some("the person's input ended before they answered".to_owned()),
            ),
        };
        self.transcript.record(
            TranscriptEntry::ApprovalAnswered {
                request_id: Some(request_id),
                approved,
                by,
                reason,
            },
            self.clock.now_ms(),
        );
        Some(Msg::ApprovalAnswered { approved })
    }

    /// The call's stream ended: its text and calls join the conversation (a failed call's
    /// calls do not: they would have no results), then its tools run or the turn ends.
    fn finish_call(&mut self) -> Result<(), LoopError> {
        let call = std::mem::take(&mut self.call);
        if let Some(stats) = &call.stats {
            add_stats(&mut self.turn_stats, stats);
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
        now: u64,
        view: &mut dyn View,
    ) -> Result<Vec<Msg>, LoopError> {
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
        view.agent_event(&event);
        // transcript: the tool's output (capped by the recorder).
        self.transcript.on_event(&event, now);
        let exit = match (outcome.exit_code, outcome.timed_out) {
            (_, true) => " (timed out)".to_owned(),
            (Some(code), _) => format!(" (exit {code})"),
            (None, _) if outcome.is_error => " (error)".to_owned(),
            (None, _) => String::new(),
        };
        view.notice(&format!("ran {} `{}`{exit}", running.name, running.summary));
        self.tool_runs.push(ToolRun {
            name: running.name.clone(),
            summary: running.summary.clone(),
            ran: true,
            is_error: outcome.is_error,
            exit_code: outcome.exit_code,
        });
        let mut msgs = Vec::new();
        self.mapper.map(&event, now, &mut msgs);
        self.add_result(
            &running.id,
            &running.name,
            outcome.content,
            outcome.is_error,
        )?;
        self.next = Next::Tools;
        Ok(msgs)
    }

    fn add_result(
        &mut self,
        id: &str,
        name: &str,
        content: String,
        is_error: bool,
    ) -> Result<(), LoopError> {
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
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        let summary = match &call.parsed {
            Ok(parsed) => parsed.summary(),
            Err(_) => String::new(),
        };
        view.notice(&format!("did not run {} `{summary}`: {reason}", call.name));
        // transcript: the call's result is the refusal.
        self.transcript.record(
            TranscriptEntry::ToolOutput {
                call_id: call.id.clone(),
                status: ToolCallStatus::Declined,
                exit_code: None,
                output: Some(reason.clone()),
                cut_bytes: 0,
            },
            self.clock.now_ms(),
        );
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
    fn start_tool(
        &mut self,
        id: String,
        name: String,
        parsed: ToolCall,
        view: &mut dyn View,
    ) -> Vec<Msg> {
        let summary = parsed.summary();
        let context = self.tools.clone();
        let future: ToolFuture =
            Box::pin(async move { crate::tools::run(&parsed, &context).await });
        let event = ProviderEvent::ToolStarted {
            name: name.clone(),
            call_id: id.clone(),
            arg: Some(summary.clone()),
            // transcript: the call and its whole input were recorded when the model asked.
            input: None,
        };
        view.agent_event(&event);
        let mut msgs = Vec::new();
        self.mapper.map(&event, self.clock.now_ms(), &mut msgs);
        self.running = Some(Running {
            id,
            name,
            summary,
            future,
        });
        msgs
    }

    /// Does what is due once nothing is under way: the next tool call, the next iteration,
    /// the end of the turn.
    async fn advance(
        &mut self,
        log: &mut SessionLogFile,
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        loop {
            if self.stream.is_some() || self.running.is_some() || self.asked.is_some() {
                return Ok(());
            }
            match std::mem::replace(&mut self.next, Next::Nothing) {
                Next::Nothing => return Ok(()),
                Next::Tools => match self.pending.pop_front() {
                    Some(call) => self.next_tool(call, log, view).await?,
                    None if self.turn_iterations >= self.config.max_iterations => {
                        self.limit_reached = self.limit_reached.saturating_add(1);
                        let message = format!(
                            "stopped after {} model calls, the iteration limit of this turn",
                            self.turn_iterations
                        );
                        view.notice(&message);
                        let event = ProviderEvent::Failure {
                            failure: Failure {
                                kind: FailureKind::Unknown,
                                retryable: false,
                                message,
                                http_status: None,
                            },
                        };
                        // transcript: the iteration limit ended the turn.
                        self.transcript.on_event(&event, self.clock.now_ms());
                        let mut msgs = Vec::new();
                        self.mapper.map(&event, self.clock.now_ms(), &mut msgs);
                        self.fold(log, msgs, view).await?;
                    }
                    None => self.next = Next::Call,
                },
                Next::Call => self.start_call(log, view).await?,
                Next::EndTurn { interrupted } => {
                    let event = ProviderEvent::TurnEnded {
                        stats: std::mem::take(&mut self.turn_stats),
                        models: BTreeMap::new(),
                        interrupted,
                    };
                    view.agent_event(&event);
                    // transcript: the turn's end closes the open line of text.
                    self.transcript.on_event(&event, self.clock.now_ms());
                    let mut msgs = Vec::new();
                    self.mapper.map(&event, self.clock.now_ms(), &mut msgs);
                    self.prompt = None;
                    self.fold(log, msgs, view).await?;
                }
            }
        }
    }

    /// Decides the next pending call: runs it, asks through the reducer's queue, or refuses.
    async fn next_tool(
        &mut self,
        call: PendingCall,
        log: &mut SessionLogFile,
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        let parsed = match &call.parsed {
            Ok(parsed) => parsed.clone(),
            Err(reason) => {
                let reason = reason.clone();
                self.refuse(call, reason, view)?;
                self.next = Next::Tools;
                return Ok(());
            }
        };
        let decision = decide(self.config.approval, &parsed, &self.tools.cwd);
        // transcript: what the policy table answered (an `Ask` is recorded as a request).
        let entry = transcript::policy_entry(
            &call.id,
            &call.name,
            &parsed.summary(),
            &decision,
            self.config.approval,
        );
        self.transcript.record(entry, self.clock.now_ms());
        match decision {
            Decision::Run => {
                let msgs = self.start_tool(call.id, call.name, parsed, view);
                self.fold(log, msgs, view).await?;
            }
            Decision::Deny { reason } => {
                self.refuse(call, reason, view)?;
                self.next = Next::Tools;
            }
            Decision::Ask => {
                let msg = Msg::ApprovalRequested {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: parsed.summary(),
                    turn: None,
                };
                self.asked = Some(call);
                self.fold(log, vec![msg], view).await?;
            }
        }
        Ok(())
    }

    /// One iteration's start: the window visit, the ledger, the request, the call.
    async fn start_call(
        &mut self,
        log: &mut SessionLogFile,
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        self.iteration = self.iteration.saturating_add(1);
        self.turn_iterations = self.turn_iterations.saturating_add(1);
        let now = self.clock.now_ms();
        let mut context = VisitContext::new(self.iteration, now);
        context.provider = &self.config.provider;
        context.measured = self.measured;
        context.current_request = self.prompt.as_deref();
        context.previous_records = &self.records;
        let plan = self.window.visit(&self.conversation, context).await?;
        self.visits = self.visits.saturating_add(1);
        let mut msgs = Vec::new();
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
                let before = self.conversation.tokens_in(0..self.conversation.len());
                self.conversation.apply(&mut plan)?;
                let after = self.conversation.tokens_in(0..self.conversation.len());
                self.ledger
                    .visit(&plan.record)
                    .map_err(|source| self.ledger_error(source))?;
                if let Some(warning) = &plan.warning {
                    view.notice(&format!("window: {warning}"));
                }
                if plan.edit.is_some() {
                    // The pane shows the window's compaction as it shows an agent's own.
                    let trigger = CompactionTrigger::Auto;
                    msgs.push(Msg::CompactionStarted { trigger, at: now });
                    msgs.push(Msg::CompactionBoundary {
                        trigger,
                        pre_tokens: before,
                        post_tokens: after,
                        duration_ms: Some(self.clock.now_ms().saturating_sub(now)),
                        at: self.clock.now_ms(),
                        frame_timestamp: None,
                    });
                }
                self.records.push(plan.record);
            }
        }
        let messages = request::api_messages(self.conversation.messages(), &self.errored)?;
        let request = ModelRequest {
            model: Cow::Borrowed(&self.config.model),
            system: self.config.system.as_deref().map(Cow::Borrowed),
            messages: Cow::Owned(messages),
            tools: Cow::Borrowed(&self.tool_definitions),
            max_output_tokens: self.config.max_output_tokens,
        };
        self.call = CallInProgress {
            sent_messages: self.conversation.len(),
            ..CallInProgress::default()
        };
        self.cancel = CancellationToken::new();
        // The stream's own first event says the request started.
        match self.client.stream(&request, self.cancel.clone()) {
            Ok(stream) => self.stream = Some(stream),
            Err(error) => {
                self.call.failed = true;
                let event = ProviderEvent::Failure {
                    failure: error.failure().cloned().unwrap_or_else(|| Failure {
                        kind: FailureKind::Unknown,
                        retryable: false,
                        message: error.to_string(),
                        http_status: None,
                    }),
                };
                view.agent_event(&event);
                // transcript: the request could not be sent.
                self.transcript.on_event(&event, self.clock.now_ms());
                self.mapper.map(&event, self.clock.now_ms(), &mut msgs);
            }
        }
        self.fold(log, msgs, view).await
    }

    /// Records and folds `msgs` one by one, executing each message's commands before the next.
    async fn fold(
        &mut self,
        log: &mut SessionLogFile,
        msgs: Vec<Msg>,
        view: &mut dyn View,
    ) -> Result<(), LoopError> {
        let mut queue: VecDeque<Msg> = msgs.into();
        while let Some(msg) = queue.pop_front() {
            // transcript: the conversation so far goes to disk before the next message.
            self.transcript
                .write_to(log)
                .map_err(|source| self.log_error(source))?;
            let cmds = log
                .record(self.clock.now_ms(), msg)
                .map_err(|source| self.log_error(source))?;
            for cmd in cmds {
                queue.extend(self.execute(cmd, view)?);
            }
            view.state(log.state());
            if let Some(asked) = &self.asking {
                if log.state().pending_approvals.front().map(|front| &front.id) != Some(asked) {
                    self.asking = None;
                    view.notice("the model no longer waits for that answer");
                }
            }
            if let Some(answer) = self.answer_front_approval(log.state(), view) {
                queue.push_back(answer);
            }
        }
        // transcript: what the commands recorded (a prompt sent, an answer) goes to disk now.
        self.transcript
            .write_to(log)
            .map_err(|source| self.log_error(source))
    }

    /// The one `match` over `Cmd`.
    fn execute(&mut self, cmd: Cmd, view: &mut dyn View) -> Result<Vec<Msg>, LoopError> {
        match cmd {
            Cmd::SendPrompt { text, .. } => {
                // transcript: the prompt, as sent.
                self.transcript.record(
                    TranscriptEntry::Prompt { text: text.clone() },
                    self.clock.now_ms(),
                );
                let mut message = Message::user(text.clone());
                message.born_at_ms = Some(self.clock.now_ms());
                self.append(message)?;
                self.prompt = Some(text);
                self.turn_iterations = 0;
                self.turn_stats = SessionStats::default();
                self.next = Next::Call;
            }
            Cmd::InterruptAgent { .. } | Cmd::KillAgent { .. } => self.interrupt(view)?,
            Cmd::ResolveApproval { id, approved } => {
                let asked = self.asked.take_if(|asked| asked.id == id);
                if let Some(call) = asked {
                    match (&call.parsed, approved) {
                        (Ok(parsed), true) => {
                            let parsed = parsed.clone();
                            return Ok(self.start_tool(call.id, call.name, parsed, view));
                        }
                        _ => {
                            let reason = self.denial.take().unwrap_or_else(|| {
                                format!(
                                    "denied by the person (approval mode {})",
                                    self.config.approval.name()
                                )
                            });
                            self.refuse(call, reason, view)?;
                            self.next = Next::Tools;
                        }
                    }
                }
            }
            Cmd::ScheduleDeadline {
                turn,
                kind,
                deadline_ms,
            } => {
                let wait = deadline_ms.saturating_sub(self.clock.now_ms());
                let at = Instant::now() + Duration::from_millis(wait);
                self.deadlines
                    .insert((deadline_key(kind), turn), (at, kind, deadline_ms));
            }
            Cmd::CancelDeadline { turn, kind } => {
                self.deadlines.remove(&(deadline_key(kind), turn));
            }
            // The loop has no other effects: the view shows what they change in the state.
            Cmd::CancelScope { .. }
            | Cmd::ResolveQuestion { .. }
            | Cmd::RunConfirmed { .. }
            | Cmd::AttachRequestContext { .. }
            | Cmd::Exit
            | Cmd::Emit(_) => {}
            _ => {}
        }
        Ok(Vec::new())
    }

    /// Stops the turn: the call's token is cancelled, the running tool's process group is
    /// killed (its future dropped), and every call left without a result gets one saying it
    /// was interrupted, so the next request pairs every call with its result.
    fn interrupt(&mut self, view: &mut dyn View) -> Result<(), LoopError> {
        if self.stream.is_none()
            && self.running.is_none()
            && self.asked.is_none()
            && self.pending.is_empty()
            && self.next == Next::Nothing
        {
            return Ok(());
        }
        self.cancel.cancel();
        if self.stream.take().is_some() {
            let call = std::mem::take(&mut self.call);
            if let Some(stats) = &call.stats {
                add_stats(&mut self.turn_stats, stats);
            }
            if !call.text.is_empty() {
                let mut message = Message::assistant(call.text);
                message.born_at_ms = Some(self.clock.now_ms());
                self.append(message)?;
            }
        }
        let reason = "interrupted by the person before it finished".to_owned();
        if let Some(running) = self.running.take() {
            self.add_result(&running.id, &running.name, reason.clone(), true)?;
        }
        let mut left: Vec<PendingCall> = self.asked.take().into_iter().collect();
        left.extend(self.pending.drain(..));
        for call in left {
            self.add_result(&call.id, &call.name, reason.clone(), true)?;
        }
        self.asking = None;
        view.notice("interrupted");
        self.next = Next::EndTurn { interrupted: true };
        Ok(())
    }

    /// Answers the front pending approval: asks the person when they can answer, else
    /// denies and says why.
    fn answer_front_approval(&mut self, state: &State, view: &mut dyn View) -> Option<Msg> {
        let front = state.pending_approvals.front()?;
        if self.asking.is_some() {
            return None;
        }
        if self.can_ask && self.user_lines.is_some() {
            view.ask(&front.tool, &front.summary);
            self.asking = Some(front.id.clone());
            return None;
        }
        let reason = format!(
            "denied: approval mode {} asks, and there is no terminal to ask on",
            self.config.approval.name()
        );
        // transcript: nobody could be asked, so the mode's answer stands.
        self.transcript.record(
            TranscriptEntry::ApprovalAnswered {
                request_id: Some(front.id.clone()),
                approved: false,
                by: transcript::by_policy(self.config.approval),
                reason: Some(reason.clone()),
            },
            self.clock.now_ms(),
        );
        self.denial = Some(reason);
        Some(Msg::ApprovalAnswered { approved: false })
    }
}
