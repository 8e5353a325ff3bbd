//! The own loop's decisions as a pure state machine: [`OwnLoop::step`] folds one [`LoopInput`]
//! (a prompt, a model event, a tool's end, a person's answer, the window stage's plan) into the
//! loop's state and returns the [`Effect`]s to carry out, as comparable data — visit the window
//! stage, call the model with this request, run this tool, ask a person, append this ledger
//! line, emit this event, end the turn. The session backend (the host's `panewise_host::backend::model`) is the
//! thin shell that carries them out: it owns the HTTP stream, the running tool's future, the
//! ledger file, the clock and the window stage's summarizer, and feeds what they produce back
//! in as inputs.
//!
//! Invariants, as absences: this module does no I/O, reads no clock (every input that needs a
//! time carries it), spawns nothing and has no `async`; the purity check scans this file
//! (`cargo xtask ci`). A model call's request is rendered here, byte for byte the body the
//! shell sends. Nothing here is reached by a wildcard arm: every input and every effect is
//! matched by name.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use panewise_pane_state::log::{ToolCallStatus, TranscriptEntry};
use panewise_pane_state::reducer::accumulate;
use panewise_pane_state::Msg;
use panewise_providers::RenderedRequest;
use panewise_providers::{
    ApiError, ApiKind, CompactionTrigger, Failure, FailureKind, PriceTable, ProviderEvent,
    RequestError, RequestHead, SessionStats, ToolStatus,
};
use panewise_window::cache::{CachePricing, CacheRules};
use panewise_window::provider::{cleared_spans, reconcile};
use panewise_window::{
    openai, AppliedContextEdit, ArchivedSpan, Measured, Message, Usage, VisitContext, WindowError,
    WindowPlan, WindowRecord,
};

use crate::agent_loop::config::{LoopConfig, ToolRun};
use crate::agent_loop::history::{LoopHistory, PROVIDER_COMPACTION};
use crate::agent_loop::ledger::{call_entry, ArchivedEntry, LedgerLine, PrefixBreak};
use crate::agent_loop::resume::{Rebuilt, INTERRUPTED_RESULT};
use crate::agent_loop::tool_catalog::{answer_here, ToolCatalog, ToolListCost};
use crate::approval::{decide, paths_to_resolve, Decision, PathFacts, ToolRequest};
use crate::error::LoopError;
use crate::journal::transcript;
use crate::sandbox::ShellApproval;
use crate::tools::recall::SpanArchive;
use crate::tools::{ToolCall, ToolOutcome};

/// One thing that happened to the loop, with the time it happened where the loop records it.
#[derive(Debug)]
pub enum LoopInput {
    /// The person's prompt starts a turn.
    Prompt {
        /// What they asked.
        text: String,
        /// When.
        at_ms: u64,
    },
    /// Everything before is folded: do what is due (the next tool call, the next model call,
    /// the end of the turn). `turn_working` is the reducer's view: false when it ended the turn
    /// (a deadline, a failure), which stops whatever is still under way.
    Settle {
        /// Whether the reducer's turn is still working.
        turn_working: bool,
        /// The session is held at its budget (R112): no model call starts until it is
        /// released; a tool already asked for and the turn's end still go on.
        held: bool,
        /// When.
        at_ms: u64,
    },
    /// The window stage's answer to [`Effect::VisitWindow`].
    Visited {
        /// The plan, `None` when the strategy did not engage, or the stage's error (boxed: a
        /// plan is large beside the other inputs).
        plan: Box<Result<Option<WindowPlan<Message>>, WindowError>>,
        /// When the visit (and its summary call, if any) ended.
        at_ms: u64,
    },
    /// An event of the model call under way.
    ModelEvent {
        /// The event.
        event: ProviderEvent,
        /// When it arrived.
        at_ms: u64,
    },
    /// The model call failed (its request could not start, or its stream broke).
    ModelFailed {
        /// Why.
        error: ApiError,
    },
    /// The model call's stream ended.
    ModelEnded {
        /// When.
        at_ms: u64,
    },
    /// The running tool finished.
    ToolDone {
        /// What it produced.
        outcome: ToolOutcome,
        /// When.
        at_ms: u64,
    },
    /// The shell's answer to [`Effect::ResolvePaths`] for call `id`.
    PathsResolved {
        /// The call.
        id: String,
        /// What it found for each path.
        facts: PathFacts,
        /// When.
        at_ms: u64,
    },
    /// A person answered the approval asked for call `id`.
    Approval {
        /// The call.
        id: String,
        /// Whether it may run.
        approved: bool,
        /// Why not, when it may not: the model is told.
        reason: String,
        /// When.
        at_ms: u64,
    },
    /// The person answered the question an `ask_user` call put (`answers` empty: nobody
    /// could).
    Answered {
        /// The call (the question set's id).
        id: String,
        /// One answer per question.
        answers: Vec<String>,
        /// When.
        at_ms: u64,
    },
    /// The person stopped the turn.
    Interrupt {
        /// When.
        at_ms: u64,
    },
}

/// What the shell carries out, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Visit the window stage over [`OwnLoop::conversation`] with [`OwnLoop::visit_context`],
    /// and answer with [`LoopInput::Visited`].
    VisitWindow,
    /// Stream this request; its events come back as [`LoopInput::ModelEvent`], then
    /// [`LoopInput::ModelEnded`].
    CallModel(RenderedRequest),
    /// Cancel the model call under way and drop its stream.
    CancelCall,
    /// Run this tool in the session's working directory; answer with [`LoopInput::ToolDone`].
    RunTool {
        /// The call's id.
        id: String,
        /// The parsed call.
        call: ToolCall,
    },
    /// Find on disk, from the working directory, the facts the approval policy needs about
    /// these paths of call `id` (`panewise_host::approval::resolve_paths`); answer with
    /// [`LoopInput::PathsResolved`].
    ResolvePaths {
        /// The call.
        id: String,
        /// The paths as the call names them ([`crate::approval::paths_to_resolve`]).
        paths: Vec<String>,
    },
    /// Stop the running tool (its process group is killed).
    CancelTool,
    /// Append this line to the window ledger.
    Ledger(LedgerLine),
    /// Append these spans, new to the loop's archive, to the archive file (W75).
    Archive(Vec<ArchivedSpan>),
    /// An agent event for the engine: shown, transcribed, mapped onto the reducer's messages.
    Emit(ProviderEvent),
    /// A reducer message the loop makes itself (an approval asked, a compaction).
    Reduce(Msg),
    /// A line for the person watching.
    Notice(String),
    /// A transcript line the loop itself knows, stamped.
    Transcript {
        /// When it happened.
        at_ms: u64,
        /// The line.
        entry: TranscriptEntry,
    },
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
    /// Where the call's request broke the previous request's prefix, for its ledger line.
    prefix_break: Option<PrefixBreak>,
    /// A provider's compaction of this call's context: joins the conversation before the
    /// answer, and goes back in the next request.
    compaction: Option<String>,
    /// What the request's tool list held and cost, for its ledger line.
    tool_list: ToolListCost,
}

/// A tool call waiting for its turn, parsed or not.
#[derive(Debug)]
struct PendingCall {
    id: String,
    name: String,
    parsed: Result<ToolCall, String>,
}

/// The one thing under way, if any: they never overlap.
#[derive(Debug)]
enum UnderWay {
    Nothing,
    /// The window stage is visiting (its summary call may take a while).
    Visit {
        started_at_ms: u64,
    },
    /// The model call is streaming.
    Call(CallInProgress),
    /// A tool runs.
    Tool {
        id: String,
        name: String,
        summary: String,
    },
    /// The shell finds the facts about a call's paths the policy decides over.
    Resolving(PendingCall),
    /// A person is asked to approve a call (the reducer's queue holds the request).
    Approval(PendingCall),
    /// A person is asked an `ask_user` call's question (the reducer's queue holds it).
    Question {
        id: String,
        name: String,
        args: crate::tools::ask_user::Args,
    },
}

/// The own loop's state: the conversation, the turn's progress, what is under way.
#[derive(Debug)]
pub struct OwnLoop {
    config: LoopConfig,
    api: ApiKind,
    strategy_name: String,
    /// The tools offered: the built-ins (`recall` once the archive holds a span, W76), the
    /// MCP servers' loaded tools, and the search tool while a budget defers some.
    catalog: ToolCatalog,
    /// Every span the window (or the provider) let go of, which `recall` answers from.
    archive: SpanArchive,
    /// The window's conversation and, in step with it, each message rendered once for the
    /// API: a request's body is assembled from those fragments, not rendered again.
    history: LoopHistory,
    /// Call ids whose results are errors.
    errored: BTreeSet<String>,
    /// Every call id the session used.
    call_ids: BTreeSet<String>,
    records: Vec<WindowRecord>,
    /// The floor of the stage's stand-down in effect (W81, W82), in tokens: its idle visits
    /// say so, and the session is told when it ends (R110, R111). A new request clears it.
    stood_down_floor: Option<u64>,
    visits: u32,
    /// Model calls of the whole session: the window's iteration.
    iteration: u32,
    /// Model calls of the current turn, held to the limit.
    turn_iterations: u32,
    measured: Option<Measured>,
    /// What the person asked in the current turn: the window's current request.
    prompt: Option<String>,
    turn_stats: SessionStats,
    pending: VecDeque<PendingCall>,
    under_way: UnderWay,
    next: Next,
    /// Whether the session was told its `shell` commands run unboxed, and why (said once).
    said_unboxed: bool,
    tool_runs: Vec<ToolRun>,
    limit_reached: u32,
    /// The prices each call's cost is split with in the ledger: the client's, which priced
    /// the call.
    prices: Arc<PriceTable>,
}

impl OwnLoop {
    /// A loop over `api` with nothing said yet. `strategy_name` is the window stage's, for
    /// the ledger's idle lines.
    pub fn new(config: LoopConfig, api: ApiKind, strategy_name: impl Into<String>) -> Self {
        let history = LoopHistory::new(api);
        let catalog = ToolCatalog::of(&config, history.conversation());
        OwnLoop {
            config,
            api,
            strategy_name: strategy_name.into(),
            catalog,
            archive: SpanArchive::new(),
            history,
            errored: BTreeSet::new(),
            call_ids: BTreeSet::new(),
            records: Vec::new(),
            stood_down_floor: None,
            visits: 0,
            iteration: 0,
            turn_iterations: 0,
            measured: None,
            prompt: None,
            turn_stats: SessionStats::default(),
            pending: VecDeque::new(),
            under_way: UnderWay::Nothing,
            said_unboxed: false,
            next: Next::Nothing,
            tool_runs: Vec::new(),
            limit_reached: 0,
            prices: Arc::new(PriceTable::built_in()),
        }
    }

    /// The loop with the prices its client priced calls with.
    pub fn with_prices(mut self, prices: Arc<PriceTable>) -> Self {
        self.prices = prices;
        self
    }

    /// The loop's configuration.
    pub fn config(&self) -> &LoopConfig {
        &self.config
    }

    /// The conversation as the window stage sees it.
    pub fn conversation(&self) -> &panewise_window::Conversation<Message> {
        self.history.conversation()
    }

    /// The spans the window (or the provider) let go of, which `recall` answers from.
    pub fn archive(&self) -> &SpanArchive {
        &self.archive
    }

    /// A recorded session's archive becomes the start of this one's: its spans are
    /// recallable, and the effect writes them into this session's archive file. Call before
    /// the first prompt.
    pub fn load_archive(&mut self, spans: Vec<ArchivedSpan>) -> Vec<Effect> {
        self.archive_spans(spans, true)
    }

    /// Adds `spans` to the archive; the ones it did not hold yet are written to the archive
    /// file and named in the ledger.
    fn archive_spans(&mut self, spans: Vec<ArchivedSpan>, reloaded: bool) -> Vec<Effect> {
        let new: Vec<ArchivedSpan> = spans
            .into_iter()
            .filter(|span| self.archive.insert(span.clone()))
            .collect();
        if new.is_empty() {
            return Vec::new();
        }
        let line = LedgerLine::Archived {
            iteration: if reloaded { 0 } else { self.iteration },
            reloaded,
            spans: new.iter().map(ArchivedEntry::of).collect(),
        };
        vec![Effect::Archive(new), Effect::Ledger(line)]
    }

    /// The records of the engaged visits, in order.
    pub fn records(&self) -> &[WindowRecord] {
        &self.records
    }

    /// Visits in all, engaged or not.
    pub fn visits(&self) -> u32 {
        self.visits
    }

    /// Every tool call, in order.
    pub fn tool_runs(&self) -> &[ToolRun] {
        &self.tool_runs
    }

    /// The turns that stopped at the iteration limit.
    pub fn limit_reached(&self) -> u32 {
        self.limit_reached
    }

    /// The context of the visit [`Effect::VisitWindow`] asked for. The stage judges each
    /// edit by what it costs in this provider's prompt cache (its record says, and a
    /// `paybackCalls` guard holds back one that does not pay); without the cache asked for,
    /// Anthropic caches nothing and an edit breaks nothing there.
    pub fn visit_context(&self) -> VisitContext<'_> {
        let started_at_ms = match self.under_way {
            UnderWay::Visit { started_at_ms } => started_at_ms,
            _ => 0,
        };
        let mut context = VisitContext::new(self.iteration, started_at_ms);
        context.provider = &self.config.provider;
        context.measured = self.measured;
        context.current_request = self.prompt.as_deref();
        context.previous_records = &self.records;
        context.cache_pricing = match (self.api, self.config.prompt_cache) {
            (ApiKind::Anthropic, false) => None,
            (ApiKind::Anthropic, true) => CachePricing::for_rules(CacheRules::anthropic()),
            (ApiKind::OpenAi, _) => CachePricing::for_rules(CacheRules::openai()),
            (ApiKind::Gemini, _) => CachePricing::for_rules(CacheRules::gemini()),
        };
        context
    }

    /// What the call whose approval is asked wants to do.
    pub fn request(&self, id: &str) -> Option<ToolRequest<'_>> {
        match &self.under_way {
            UnderWay::Approval(PendingCall {
                id: asked,
                parsed: Ok(parsed),
                ..
            }) if asked == id => Some(ToolRequest::Own(parsed)),
            _ => None,
        }
    }

    /// What the running turn's calls cost and processed so far: the session engine weighs it,
    /// with the finished turns, against the session's caps before the next call (R112).
    pub fn turn_stats(&self) -> &SessionStats {
        &self.turn_stats
    }

    /// Nothing is under way or due.
    pub fn is_idle(&self) -> bool {
        matches!(self.under_way, UnderWay::Nothing) && self.next == Next::Nothing
    }

    /// Whether a [`LoopInput::Settle`] would do anything now.
    pub fn is_due(&self, turn_working: bool, held: bool) -> bool {
        match self.under_way {
            UnderWay::Nothing => match self.next {
                Next::Nothing => false,
                // Held at the budget: the call waits for the release (R112).
                Next::Call => !held,
                _ => true,
            },
            _ => !turn_working,
        }
    }

    /// A recorded session's rebuilt conversation becomes the start of this one's (each
    /// message appended as the loop appends its own, and filed in the ledger). Call before
    /// the first prompt.
    pub fn resume_from(&mut self, rebuilt: &Rebuilt) -> Vec<Effect> {
        self.errored.extend(rebuilt.errored.iter().cloned());
        let mut effects = Vec::new();
        for message in &rebuilt.messages {
            for call in &message.tool_calls {
                self.call_ids.insert(call.id.clone());
            }
            effects.push(self.append(message.clone()));
        }
        effects
    }

    /// Folds one input; the effects to carry out, in order.
    pub fn step(&mut self, input: LoopInput) -> Result<Vec<Effect>, LoopError> {
        match input {
            LoopInput::Prompt { text, at_ms } => {
                let mut message = Message::user(text.clone());
                message.born_at_ms = Some(at_ms);
                let effect = self.append(message);
                self.prompt = Some(text);
                // The stage judges the new request afresh (W83); so does the session (R111).
                self.stood_down_floor = None;
                self.turn_iterations = 0;
                self.turn_stats = SessionStats::default();
                self.next = Next::Call;
                Ok(vec![effect])
            }
            LoopInput::Settle {
                turn_working,
                held,
                at_ms,
            } => self.settle(turn_working, held, at_ms),
            LoopInput::Visited { plan, at_ms } => self.visited((*plan)?, at_ms),
            LoopInput::ModelEvent { event, at_ms } => Ok(self.model_event(event, at_ms)),
            // The interrupt already ended the call and the turn.
            LoopInput::ModelFailed {
                error: ApiError::Cancelled { .. },
            } => Ok(Vec::new()),
            LoopInput::ModelFailed { error } => match &mut self.under_way {
                UnderWay::Call(call) => {
                    call.failed = true;
                    Ok(vec![Effect::Emit(failure_event(&error))])
                }
                _ => Ok(Vec::new()),
            },
            LoopInput::ModelEnded { at_ms } => Ok(self.finish_call(at_ms)),
            LoopInput::ToolDone { outcome, at_ms } => Ok(self.tool_finished(outcome, at_ms)),
            LoopInput::PathsResolved { id, facts, at_ms } => {
                Ok(self.paths_resolved(&id, &facts, at_ms))
            }
            LoopInput::Approval {
                id,
                approved,
                reason,
                at_ms,
            } => Ok(self.resolve_approval(&id, approved, reason, at_ms)),
            LoopInput::Answered { id, answers, at_ms } => Ok(self.answered(&id, &answers, at_ms)),
            LoopInput::Interrupt { at_ms } => Ok(self.interrupt(at_ms)),
        }
    }

    /// What is due once everything is folded.
    fn settle(
        &mut self,
        turn_working: bool,
        held: bool,
        at_ms: u64,
    ) -> Result<Vec<Effect>, LoopError> {
        if !matches!(self.under_way, UnderWay::Nothing) {
            // The reducer ended the turn (a deadline, a failure): nothing may go on working
            // for it unseen.
            return Ok(if turn_working {
                Vec::new()
            } else {
                self.interrupt(at_ms)
            });
        }
        if held && self.next == Next::Call {
            // Past the budget no call starts: it waits, due, for the release (R112).
            return Ok(Vec::new());
        }
        Ok(match std::mem::replace(&mut self.next, Next::Nothing) {
            Next::Nothing => Vec::new(),
            Next::Tools => match self.pending.pop_front() {
                Some(call) => self.next_tool(call, at_ms),
                None if self.turn_iterations >= self.config.max_iterations => {
                    self.limit_reached = self.limit_reached.saturating_add(1);
                    let message = format!(
                        "stopped after {} model calls, the iteration limit of this turn",
                        self.turn_iterations
                    );
                    vec![
                        Effect::Notice(message.clone()),
                        Effect::Emit(ProviderEvent::Failure {
                            failure: Failure {
                                kind: FailureKind::Unknown,
                                retryable: false,
                                message,
                                http_status: None,
                            },
                        }),
                    ]
                }
                None => {
                    self.next = Next::Call;
                    Vec::new()
                }
            },
            Next::Call => {
                // An MCP server that failed is said before the first call (once).
                let mut effects = mcp_notices(std::mem::take(&mut self.config.mcp_notices), at_ms);
                self.iteration = self.iteration.saturating_add(1);
                self.turn_iterations = self.turn_iterations.saturating_add(1);
                self.under_way = UnderWay::Visit {
                    started_at_ms: at_ms,
                };
                effects.push(Effect::VisitWindow);
                effects
            }
            Next::EndTurn { interrupted } => {
                self.prompt = None;
                vec![Effect::Emit(ProviderEvent::TurnEnded {
                    stats: std::mem::take(&mut self.turn_stats),
                    models: BTreeMap::new(),
                    interrupted,
                })]
            }
        })
    }

    /// The window stage answered: its plan is applied and filed, then the call's request is
    /// rendered and sent.
    fn visited(
        &mut self,
        plan: Option<WindowPlan<Message>>,
        at_ms: u64,
    ) -> Result<Vec<Effect>, LoopError> {
        let UnderWay::Visit { started_at_ms } = self.under_way else {
            // The turn was stopped while the stage visited: its plan is for a call not made.
            return Ok(Vec::new());
        };
        self.visits = self.visits.saturating_add(1);
        let mut effects = Vec::new();
        match plan {
            None => effects.push(Effect::Ledger(LedgerLine::Idle {
                iteration: self.iteration,
                strategy: self.strategy_name.clone(),
                measured_tokens: self.measured.map(|measured| measured.usage.input),
                threshold_tokens: self.config.strategy.threshold_tokens(),
                floor_tokens: self.stood_down_floor,
            })),
            Some(mut plan) => {
                let conversation = self.history.conversation();
                let before = conversation.tokens_in(0..conversation.len());
                // What leaves is read and hashed here, once, from the window the plan was made
                // for: the visit itself stays proportional to its edit.
                let archived = plan.archived_spans(conversation);
                self.history.apply(&mut plan, &self.errored)?;
                let conversation = self.history.conversation();
                let after = conversation.tokens_in(0..conversation.len());
                effects.push(Effect::Ledger(LedgerLine::Visit {
                    record: Box::new(plan.record.clone()),
                }));
                effects.extend(self.archive_spans(archived, false));
                if let Some(warning) = &plan.warning {
                    effects.push(Effect::Notice(format!("window: {warning}")));
                }
                match (&plan.record.floor, self.stood_down_floor) {
                    (Some(floor), _) => {
                        self.stood_down_floor = Some(floor.floor_tokens);
                        effects.push(Effect::Reduce(Msg::WindowStoodDown {
                            floor_tokens: floor.floor_tokens,
                            threshold_tokens: floor.threshold_tokens,
                            at: at_ms,
                        }));
                    }
                    (None, Some(_)) => {
                        self.stood_down_floor = None;
                        effects.push(Effect::Reduce(Msg::WindowResumed { at: at_ms }));
                    }
                    (None, None) => {}
                }
                if plan.edit.is_some() {
                    // The pane shows the window's compaction as it shows an agent's own.
                    let trigger = CompactionTrigger::Auto;
                    effects.push(Effect::Reduce(Msg::CompactionStarted {
                        trigger,
                        at: started_at_ms,
                    }));
                    effects.push(Effect::Reduce(Msg::CompactionBoundary {
                        trigger,
                        pre_tokens: before,
                        post_tokens: after,
                        duration_ms: Some(at_ms.saturating_sub(started_at_ms)),
                        at: at_ms,
                        frame_timestamp: None,
                    }));
                }
                self.records.push(plan.record);
            }
        }
        // A request that breaks the pairing rule is never sent (the session stops, as the
        // rule is the loop's own); one the API cannot take (a call's arguments are not JSON)
        // fails the call, as the client's own rendering would.
        let with_recall = !self.archive.is_empty();
        let (tools, tool_list) =
            (self.catalog).request_tools(with_recall, self.history.conversation());
        let head = RequestHead {
            model: &self.config.model,
            system: self.config.system.as_deref(),
            tools: &tools,
            max_output_tokens: self.config.max_output_tokens,
            prompt_cache: self.config.prompt_cache,
            cache_key: self.config.cache_key.as_deref(),
            context_management: self.config.strategy.provider_context(),
        };
        match self.history.request_placed(&head) {
            Ok((request, prefix_break)) => {
                self.under_way = UnderWay::Call(CallInProgress {
                    sent_messages: self.history.conversation().len(),
                    prefix_break,
                    tool_list,
                    ..CallInProgress::default()
                });
                effects.push(Effect::CallModel(request));
            }
            Err(RequestError::Pairing(pairing)) => return Err(LoopError::Pairing(pairing)),
            Err(other) => {
                // The failure ends the turn in the reducer.
                self.under_way = UnderWay::Nothing;
                effects.push(Effect::Emit(failure_event(&ApiError::Request(other))));
            }
        }
        Ok(effects)
    }

    /// An event of the call under way: its text and calls are gathered, its usage is the
    /// next visit's reading, and the engine sees it.
    fn model_event(&mut self, event: ProviderEvent, at_ms: u64) -> Vec<Effect> {
        let UnderWay::Call(call) = &mut self.under_way else {
            // A call stopped by an interrupt has no more say.
            return Vec::new();
        };
        let mut effects = Vec::new();
        match &event {
            ProviderEvent::TextDelta { text } => call.text.push_str(text),
            ProviderEvent::ToolCallRequested {
                call_id,
                name,
                arguments,
            } => {
                let id = unique_call_id(&mut self.call_ids, call_id);
                // The call with its whole input, by the id the loop uses for it, when the
                // model asks: a refused call still shows what it wanted.
                effects.push(Effect::Transcript {
                    at_ms,
                    entry: TranscriptEntry::ToolCall {
                        call_id: id.clone(),
                        name: name.clone(),
                        input: Some(transcript::arguments_value(arguments)),
                        arg: None,
                    },
                });
                call.calls.push(panewise_window::ToolCall {
                    id,
                    name: name.clone(),
                    args: arguments.clone(),
                })
            }
            ProviderEvent::CallEnded { stats, model, .. } => {
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
                        sent_messages: call.sent_messages,
                        iteration: self.iteration,
                    });
                }
                call.stats = Some(stats.clone());
                // Each call in the ledger: its tokens by kind, its cost split, and where its
                // request broke the cached prefix.
                let line = call_entry(self.iteration, model.as_deref(), stats, &self.prices);
                let line = line.with_request(call.prefix_break, call.tool_list.entry());
                effects.push(Effect::Ledger(line));
            }
            ProviderEvent::Failure { .. } => call.failed = true,
            ProviderEvent::ContextManaged { edits } => {
                let (edit_effects, cleared) = provider_edits(
                    &self.config,
                    self.history.conversation(),
                    self.iteration,
                    edits,
                    call,
                );
                effects.extend(edit_effects);
                effects.extend(self.archive_spans(cleared, false));
            }
            _ => {}
        }
        effects.push(Effect::Emit(event));
        effects
    }

    /// The call's stream ended: its text and calls join the conversation (a failed call's
    /// calls do not: they would have no results), then its tools run or the turn ends.
    fn finish_call(&mut self, at_ms: u64) -> Vec<Effect> {
        let UnderWay::Call(call) = std::mem::replace(&mut self.under_way, UnderWay::Nothing) else {
            return Vec::new();
        };
        if let Some(stats) = &call.stats {
            self.add_call_stats(stats);
        }
        let calls = if call.failed { Vec::new() } else { call.calls };
        let mut effects = Vec::new();
        if let (Some(summary), false) = (call.compaction, call.failed) {
            let mut compaction = Message::assistant(summary);
            compaction.injected_by = Some(PROVIDER_COMPACTION.to_owned());
            compaction.born_at_ms = Some(at_ms);
            effects.push(self.append(compaction));
        }
        if !call.text.is_empty() || !calls.is_empty() {
            let mut message = Message::assistant(call.text);
            message.born_at_ms = Some(at_ms);
            for tool_call in &calls {
                self.pending.push_back(PendingCall {
                    id: tool_call.id.clone(),
                    name: tool_call.name.clone(),
                    parsed: self.catalog.parse_call(&tool_call.name, &tool_call.args),
                });
            }
            message.tool_calls = calls;
            effects.push(self.append(message));
        }
        self.next = if call.failed {
            // The failure ended the turn in the reducer.
            Next::Nothing
        } else if self.pending.is_empty() {
            Next::EndTurn { interrupted: false }
        } else {
            Next::Tools
        };
        effects
    }

    /// Starts a call the policy or the person allowed; the pane sees the tool start. A
    /// `recall` is answered here and now from the archive (W76): its result is a pure
    /// function of it, so nothing is run.
    fn start_tool(
        &mut self,
        id: String,
        name: String,
        parsed: ToolCall,
        at_ms: u64,
    ) -> Vec<Effect> {
        let summary = parsed.summary();
        let started = ProviderEvent::ToolStarted {
            name: name.clone(),
            call_id: id.clone(),
            arg: Some(summary.clone()),
            // The call and its whole input were recorded when the model asked.
            input: None,
        };
        self.under_way = UnderWay::Tool {
            id: id.clone(),
            name,
            summary,
        };
        let cap = self.config.tool_limits.output_bytes;
        if let Some(outcome) = answer_here(&mut self.catalog, &self.archive, cap, &parsed) {
            let mut effects = vec![Effect::Emit(started)];
            effects.extend(self.tool_finished(outcome, at_ms));
            return effects;
        }
        if let ToolCall::AskUser(args) = parsed {
            return self.ask(args, started);
        }
        vec![Effect::RunTool { id, call: parsed }, Effect::Emit(started)]
    }

    /// A tool's result joins the conversation; the pane sees the tool end.
    fn tool_finished(&mut self, outcome: ToolOutcome, at_ms: u64) -> Vec<Effect> {
        let UnderWay::Tool { id, name, summary } =
            std::mem::replace(&mut self.under_way, UnderWay::Nothing)
        else {
            return Vec::new();
        };
        let status = if outcome.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        };
        let ended = ProviderEvent::ToolEnded {
            call_id: id.clone(),
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
        let notice = Effect::Notice(format!("ran {name} `{summary}`{exit}"));
        self.tool_runs.push(ToolRun {
            name: name.clone(),
            summary,
            ran: true,
            is_error: outcome.is_error,
            exit_code: outcome.exit_code,
        });
        let result = self.add_result(&id, &name, outcome.content, outcome.is_error, at_ms);
        self.next = Next::Tools;
        vec![notice, result, Effect::Emit(ended)]
    }

    /// Stops the turn: the call is cancelled, the running tool stopped, and every call left
    /// without a result gets one saying it was interrupted, so the next request pairs every
    /// call with its result.
    fn interrupt(&mut self, at_ms: u64) -> Vec<Effect> {
        let nothing_under_way =
            matches!(self.under_way, UnderWay::Nothing) && self.pending.is_empty();
        if nothing_under_way && matches!(self.next, Next::Nothing | Next::EndTurn { .. }) {
            // Idle, or already stopped and ending its turn: a second stop changes nothing.
            return Vec::new();
        }
        let mut effects = Vec::new();
        let mut left: Vec<PendingCall> = Vec::new();
        match std::mem::replace(&mut self.under_way, UnderWay::Nothing) {
            UnderWay::Nothing | UnderWay::Visit { .. } => {}
            UnderWay::Call(call) => {
                effects.push(Effect::CancelCall);
                if let Some(stats) = &call.stats {
                    self.add_call_stats(stats);
                }
                if !call.text.is_empty() {
                    let mut message = Message::assistant(call.text);
                    message.born_at_ms = Some(at_ms);
                    effects.push(self.append(message));
                }
            }
            UnderWay::Tool { id, name, .. } => {
                effects.push(Effect::CancelTool);
                effects.push(self.add_result(
                    &id,
                    &name,
                    INTERRUPTED_RESULT.to_owned(),
                    true,
                    at_ms,
                ));
            }
            UnderWay::Resolving(call) | UnderWay::Approval(call) => left.push(call),
            UnderWay::Question { id, name, .. } => {
                effects.push(self.add_result(
                    &id,
                    &name,
                    INTERRUPTED_RESULT.to_owned(),
                    true,
                    at_ms,
                ));
            }
        }
        left.extend(self.pending.drain(..));
        for call in left {
            effects.push(self.add_result(
                &call.id,
                &call.name,
                INTERRUPTED_RESULT.to_owned(),
                true,
                at_ms,
            ));
        }
        self.next = Next::EndTurn { interrupted: true };
        effects
    }

    /// One call's figures added into the turn's, by the reducer's own arithmetic (R61): each
    /// call counts as one round trip.
    fn add_call_stats(&mut self, call: &SessionStats) {
        let turn = std::mem::take(&mut self.turn_stats);
        self.turn_stats = accumulate(Some(turn), Some(call)).unwrap_or_default();
    }

    /// Appends a message to the conversation; the effect files it in the ledger.
    fn append(&mut self, message: Message) -> Effect {
        let line = LedgerLine::Message {
            message: openai::to_value(&message),
        };
        self.history.push(message, &self.errored);
        Effect::Ledger(line)
    }

    fn add_result(
        &mut self,
        id: &str,
        name: &str,
        content: String,
        is_error: bool,
        at_ms: u64,
    ) -> Effect {
        let mut message = Message::tool_result(id, content);
        message.tool_name = Some(name.to_owned());
        message.born_at_ms = Some(at_ms);
        if is_error {
            self.errored.insert(id.to_owned());
        }
        self.append(message)
    }
}

mod calls;
mod decide;
mod question;

pub use calls::{failure_event, mcp_notice, mcp_notices};
use calls::{provider_edits, unique_call_id};

#[cfg(test)]
mod tests;
