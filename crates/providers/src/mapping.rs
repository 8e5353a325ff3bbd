//! From normalised events to the reducer's messages, and a fold of a whole captured stream into
//! the pane state a person would see.

use std::collections::{BTreeMap, BTreeSet};

use panewise_pane_state::state::{ContextInvalidation, WaitingReason};
use panewise_pane_state::{step, Msg, State};
use panewise_protocol::{CompactionTrigger, CostSource, FailureKind, SessionStats};
use panewise_window::AppliedContextEdit;
use serde::{Deserialize, Serialize};

use crate::args::chip_arg;
use crate::classify::{classify_failure, process_exited_failure};
use crate::event::{ProviderEvent, UsageScope};
use crate::line::Provider;
use crate::model_table::ModelTable;
use crate::price_table::PriceTable;

/// The model name Gemini CLI announces when its router picks the model per request.
const ROUTED_MODEL: &str = "auto";

/// Turns one stream's [`ProviderEvent`]s into reducer [`Msg`]s.
///
/// It keeps what the events alone do not carry: the model in use (for formats that name it only
/// once, or never), which context windows were already reported from the [`ModelTable`], and
/// the session id (a different one means the conversation was replaced).
#[derive(Debug, Clone)]
pub struct Mapper {
    provider: Provider,
    table: ModelTable,
    prices: PriceTable,
    model: Option<String>,
    /// Where `model` comes from: the stream named it, or it is assumed.
    model_source: ModelSource,
    /// Models already warned about for having no price.
    unpriced: BTreeSet<String>,
    warnings: Vec<String>,
    windows_sent: BTreeSet<String>,
    session_id: Option<String>,
    last_prompt: Option<String>,
    turn_open: bool,
    /// What the stream showed of the current turn, to tell whether a turn-scoped usage sum is
    /// the prompt of a single model call.
    turn_calls: TurnCalls,
}

/// What a turn showed of its model calls, counted from [`ProviderEvent::TurnStarted`].
///
/// A format that reports usage only summed over a turn (Codex, Gemini CLI) does not say how
/// many calls the sum covers. Each tool round costs one more call (calls = tool rounds + 1), so
/// a turn that was seen from its start and showed no tool call and no retry made exactly one
/// call, and only then is the sum that call's prompt.
#[derive(Debug, Clone, Copy, Default)]
struct TurnCalls {
    /// The turn's start was seen, so the counts below cover the whole turn.
    seen_from_start: bool,
    /// Tool calls started in the turn.
    tools: u64,
    /// The CLI retried or reconnected during the turn.
    retried: bool,
}

/// Where the mapper's idea of the model in use comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// No model is known.
    None,
    /// The model table's default for the provider (the stream names none).
    TableDefault,
    /// The configuration the CLI was started with (the stream names none).
    Configured,
    /// The stream named it.
    Stream,
}

impl ModelSource {
    /// Whether the model is an assumption rather than the stream's own word.
    pub fn is_assumed(self) -> bool {
        matches!(self, ModelSource::TableDefault | ModelSource::Configured)
    }
}

impl TurnCalls {
    fn exactly_one_call(&self) -> bool {
        self.seen_from_start && self.tools == 0 && !self.retried
    }
}

impl Mapper {
    /// A mapper for `provider`'s events, with `table` supplying windows the provider does not
    /// report. For a provider whose stream names no model (Codex), the table's default model for
    /// it is assumed until [`Mapper::with_model`] says otherwise.
    pub fn new(provider: Provider, table: ModelTable) -> Self {
        let model = table.default_model(provider).map(str::to_owned);
        Mapper {
            provider,
            table,
            prices: PriceTable::built_in(),
            model_source: if model.is_some() {
                ModelSource::TableDefault
            } else {
                ModelSource::None
            },
            model,
            unpriced: BTreeSet::new(),
            warnings: Vec::new(),
            windows_sent: BTreeSet::new(),
            session_id: None,
            last_prompt: None,
            turn_open: false,
            turn_calls: TurnCalls::default(),
        }
    }

    /// The same mapper, told which model the CLI was started with.
    pub fn with_model(mut self, model: Option<String>) -> Self {
        if model.is_some() {
            self.model = model;
            self.model_source = ModelSource::Configured;
        }
        self
    }

    /// The same mapper, estimating costs the CLI does not report with `prices` (the built-in
    /// [`PriceTable`] otherwise).
    pub fn with_prices(mut self, prices: PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// The model the mapper takes to be in use, and where that comes from.
    pub fn model(&self) -> (Option<&str>, ModelSource) {
        (self.model.as_deref(), self.model_source)
    }

    /// Warnings for the person, such as a model without a price (each said once).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Which provider's events this mapper expects.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The messages that open a captured stream: history is loaded (there is none) and the
    /// stream is subscribed, so that the stream's turns count.
    pub fn prologue(&self, at: u64) -> Vec<Msg> {
        vec![Msg::InitReady { at }, Msg::StreamSubscribe { at }]
    }

    /// Appends the messages for `event`, which arrived at `at` (ms), to `out`.
    pub fn map(&mut self, event: &ProviderEvent, at: u64, out: &mut Vec<Msg>) {
        // Work of a turn means a turn is open, even when its start was not in the stream (a
        // capture begun mid-turn, a Claude stream without `system/init`): a stream ending then
        // ends that turn as a failure instead of leaving it working forever.
        if matches!(
            event,
            ProviderEvent::RequestStarted
                | ProviderEvent::TextDelta { .. }
                | ProviderEvent::ThinkingDelta { .. }
                | ProviderEvent::ToolStarted { .. }
                | ProviderEvent::ToolEnded { .. }
                | ProviderEvent::Usage { .. }
                | ProviderEvent::OutputTokens { .. }
        ) {
            self.turn_open = true;
        }
        match event {
            ProviderEvent::SessionStarted {
                session_id, model, ..
            } => {
                if let (Some(previous), Some(new)) = (&self.session_id, session_id) {
                    if previous != new {
                        out.push(Msg::ContextInvalidated {
                            reason: ContextInvalidation::FreshSession,
                        });
                    }
                }
                if session_id.is_some() {
                    self.session_id.clone_from(session_id);
                }
                if let Some(model) = model.as_deref().filter(|model| *model != ROUTED_MODEL) {
                    self.model = Some(model.to_owned());
                    self.model_source = ModelSource::Stream;
                }
                out.push(Msg::StreamSessionStarted);
            }
            ProviderEvent::TurnStarted { prompt } => {
                self.turn_open = true;
                self.turn_calls = TurnCalls {
                    seen_from_start: true,
                    ..TurnCalls::default()
                };
                self.last_prompt.clone_from(prompt);
                out.push(Msg::TurnStart {
                    at,
                    content: prompt.clone(),
                });
            }
            ProviderEvent::TurnEnded {
                stats,
                models,
                interrupted,
            } => {
                self.turn_open = false;
                self.turn_calls = TurnCalls::default();
                let stats = self.priced(stats, models);
                out.push(Msg::TurnEnd {
                    stats: (stats != SessionStats::default()).then_some(stats),
                    turn: None,
                    interrupted: *interrupted,
                })
            }
            ProviderEvent::TextDelta { text } | ProviderEvent::ThinkingDelta { text } => {
                out.push(Msg::OutputStreamed {
                    chars: text.chars().count() as u64,
                    turn: None,
                })
            }
            ProviderEvent::RequestStarted => out.push(Msg::RequestStarted { turn: None }),
            ProviderEvent::ToolStarted { name, arg, .. } => {
                self.turn_calls.tools = self.turn_calls.tools.saturating_add(1);
                out.push(Msg::ToolStart {
                    name: name.clone(),
                    // Only what the chip shows: the state and the log keep no whole input.
                    arg: arg.as_deref().map(|arg| chip_arg(arg).into_owned()),
                    turn: None,
                })
            }
            ProviderEvent::ToolEnded { .. } => out.push(Msg::ToolEnd { turn: None }),
            // A context reading is the prompt of one model call: what the model saw. A usage
            // summed over a turn of several calls adds each call's prompt, and every call
            // resends the conversation, so the sum grows with the number of calls rather than
            // with the context (Codex `tool-call`: calls of 2620 and 2710 tokens report 5330).
            // Taken as a reading, it overstates the meter, and a later turn with fewer calls
            // looks like a ≥50% drop to the reducer's compaction heuristic (R49), which then
            // counts a compaction that never happened. So a turn-scoped sum is a reading only
            // when the turn made exactly one call (see [`TurnCalls`]); otherwise the meter
            // keeps its previous reading (older, never larger than the context now). The
            // turn's token totals are unaffected: they arrive with its `TurnEnded` stats.
            ProviderEvent::Usage {
                scope,
                model,
                input_tokens,
                cached_input_tokens,
                cache_write_input_tokens,
                cache_write_1h_input_tokens,
                output_tokens,
                ..
            } => {
                if let Some(model) = model {
                    self.model = Some(model.clone());
                    self.model_source = ModelSource::Stream;
                }
                self.report_table_window(out);
                let is_reading = match scope {
                    UsageScope::Call => true,
                    UsageScope::Turn => self.turn_calls.exactly_one_call(),
                };
                if is_reading {
                    // The split is the call's when the format reports its cache figures: a
                    // write count (Claude Code's every usage), or reads. A format that says
                    // nothing of the cache leaves it absent, not a 0 that reads as "none".
                    let split_reported =
                        cache_write_input_tokens.is_some() || *cached_input_tokens > 0;
                    out.push(Msg::TokensIn {
                        input: input_tokens.saturating_add(*cached_input_tokens),
                        model: self.model.clone(),
                        cache_read: split_reported.then_some(*cached_input_tokens),
                        cache_write: split_reported
                            .then(|| cache_write_input_tokens.unwrap_or(0)),
                        cache_write_1h: *cache_write_1h_input_tokens,
                        turn: None,
                    });
                }
                if let Some(output) = output_tokens.filter(|output| *output > 0) {
                    out.push(Msg::TokensOut { output, turn: None });
                }
            }
            ProviderEvent::OutputTokens { output_tokens } => out.push(Msg::TokensOut {
                output: *output_tokens,
                turn: None,
            }),
            ProviderEvent::ContextWindows { windows } => {
                self.windows_sent.extend(windows.keys().cloned());
                out.push(Msg::ContextWindowsReported {
                    windows: windows.clone(),
                });
            }
            ProviderEvent::CompactionStarted { trigger } => out.push(Msg::CompactionStarted {
                trigger: trigger.unwrap_or_else(|| self.implied_trigger()),
                at,
            }),
            ProviderEvent::CompactionBoundary {
                trigger,
                pre_tokens,
                post_tokens,
                duration_ms,
            } => out.push(Msg::CompactionBoundary {
                trigger: *trigger,
                pre_tokens: *pre_tokens,
                post_tokens: *post_tokens,
                duration_ms: *duration_ms,
                at,
                frame_timestamp: None,
            }),
            ProviderEvent::ProviderRetrying {
                retry_delay_ms,
                http_status,
                reason,
                ..
            } => {
                self.turn_calls.retried = true;
                // The retry is classified like a failure; only the transient kinds are a wait
                // the person watching should see, anything else leaves the phase as it is.
                let kind =
                    classify_failure(*http_status, None, reason.as_deref().unwrap_or("")).kind;
                let waiting = match kind {
                    FailureKind::RateLimited => Some(WaitingReason::RateLimited),
                    FailureKind::Overloaded => Some(WaitingReason::Overloaded),
                    FailureKind::ServerError => Some(WaitingReason::ServerError),
                    _ => None,
                };
                if let Some(reason) = waiting {
                    // The retry notice is live output of the CLI: it moves a turn that is still
                    // submitting to streaming, the only phase that can show a wait (R42).
                    out.push(Msg::StreamFlushObserved { added_count: 1, at });
                    out.push(Msg::ProviderWaiting {
                        reason,
                        retry_after_ms: *retry_delay_ms,
                        at,
                    });
                }
            }
            ProviderEvent::ApprovalRequested {
                request_id,
                tool,
                arg,
                ..
            } => out.push(Msg::ApprovalRequested {
                id: request_id.clone(),
                tool: tool.clone(),
                summary: arg.clone().unwrap_or_default(),
                turn: None,
            }),
            ProviderEvent::ApprovalWithdrawn { request_id } => out.push(Msg::ApprovalWithdrawn {
                id: request_id.clone(),
            }),
            ProviderEvent::PlanUpdated { steps } => out.push(Msg::PlanUpdated {
                steps: steps.clone(),
            }),
            // An API call's own usage is a context reading, like a call-scoped `Usage`.
            ProviderEvent::CallEnded { model, stats, .. } => {
                if let Some(model) = model {
                    self.model = Some(model.clone());
                    self.model_source = ModelSource::Stream;
                }
                self.report_table_window(out);
                let prompt = [
                    stats.input_tokens,
                    stats.cached_input_tokens,
                    stats.cache_write_input_tokens,
                ];
                if prompt.iter().any(Option::is_some) {
                    let input = prompt
                        .iter()
                        .flatten()
                        .fold(0u64, |sum, count| sum.saturating_add(*count));
                    out.push(Msg::TokensIn {
                        input,
                        model: self.model.clone(),
                        cache_read: stats.cached_input_tokens,
                        cache_write: stats.cache_write_input_tokens,
                        cache_write_1h: stats.cache_write_1h_input_tokens,
                        turn: None,
                    });
                }
                if let Some(output) = stats.output_tokens.filter(|output| *output > 0) {
                    out.push(Msg::TokensOut { output, turn: None });
                }
            }
            // The provider's compaction shows as an agent's own: started, then its boundary.
            // Cleared tool results and thinking are not compactions: the own loop's window
            // ledger reconciles them (`panewise_window::provider::reconcile`).
            ProviderEvent::ContextManaged { edits } => {
                for edit in edits {
                    if let AppliedContextEdit::Compacted {
                        api,
                        input_tokens,
                        output_tokens,
                        ..
                    } = edit
                    {
                        self.provider_compacted(api, *input_tokens, *output_tokens, at, out);
                    }
                }
            }
            ProviderEvent::Failure { failure } => out.push(Msg::FailureObserved {
                failure: failure.clone(),
                at,
            }),
            // These inform a transcript view, not the pane state: the reasoning estimate
            // duplicates the reasoning text already counted, user text is not output, a
            // compaction's outcome arrives as its boundary, a quota snapshot is not a wait,
            // and unknown lines are counted by the decoder.
            ProviderEvent::ThinkingProgress { .. }
            | ProviderEvent::UserMessage { .. }
            | ProviderEvent::CompactionEnded { .. }
            | ProviderEvent::Warning { .. }
            // A loaded session's history is the transcript's, not the turn's.
            | ProviderEvent::HistoryReplayed { .. }
            | ProviderEvent::RateLimitsUpdated { .. }
            // The agent loop that runs the tool reports its start and end.
            | ProviderEvent::ToolCallRequested { .. }
            | ProviderEvent::Unknown { .. } => {}
        }
    }

    /// Appends the messages for the end of the CLI's output (`exit_code` when the host saw the
    /// process exit): a turn still open then will never end, so it is shown as a
    /// [`FailureKind::ProcessExited`] failure rather than as work in progress.
    pub fn end_of_stream(&mut self, exit_code: Option<i32>, at: u64, out: &mut Vec<Msg>) {
        if std::mem::take(&mut self.turn_open) {
            out.push(Msg::FailureObserved {
                failure: process_exited_failure(exit_code),
                at,
            });
        }
    }

    /// A turn's figures with their cost: the one the CLI reported, or else an estimate from the
    /// price table, per model where the CLI breaks the figures down. A turn that used a model
    /// without a price has no cost (`Unknown`), never a partial one, and the person is warned
    /// once per model.
    fn priced(
        &mut self,
        stats: &SessionStats,
        models: &BTreeMap<String, SessionStats>,
    ) -> SessionStats {
        let mut stats = stats.clone();
        if stats.cost_usd.is_some() {
            stats.cost_source.get_or_insert(CostSource::Reported);
            return stats;
        }
        if !used_tokens(&stats) {
            return stats;
        }
        let parts: Vec<(&str, &SessionStats)> = if models.is_empty() {
            self.model
                .as_deref()
                .map(|model| (model, &stats))
                .into_iter()
                .collect()
        } else {
            models
                .iter()
                .filter(|(_, usage)| used_tokens(usage))
                .map(|(model, usage)| (model.as_str(), usage))
                .collect()
        };
        let mut total = Some(0.0);
        let mut missing = Vec::new();
        for (model, usage) in &parts {
            match self.prices.estimate(model, usage) {
                Some(cost) => total = total.map(|sum| sum + cost),
                None => {
                    total = None;
                    missing.push((*model).to_owned());
                }
            }
        }
        if parts.is_empty() {
            total = None;
            self.warn_once(
                String::new(),
                "the stream names no model, so its cost cannot be estimated".to_owned(),
            );
        }
        for model in missing {
            let warning = format!(
                "no price for model `{model}`: the session's cost is unknown \
                 (a price table given with --prices can add it)"
            );
            self.warn_once(model, warning);
        }
        stats.cost_source = Some(if total.is_some() {
            CostSource::Estimated
        } else {
            CostSource::Unknown
        });
        stats.cost_usd = total;
        stats
    }

    /// A provider's compaction: its boundary when the provider reported the summarized and
    /// summary tokens, else (OpenAI reports neither) a warning once, never a made-up figure;
    /// the call's usage then gives the meter its new reading.
    fn provider_compacted(
        &mut self,
        api: &str,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        at: u64,
        out: &mut Vec<Msg>,
    ) {
        let trigger = CompactionTrigger::Auto;
        match (input_tokens, output_tokens) {
            (Some(pre_tokens), Some(post_tokens)) => {
                out.push(Msg::CompactionStarted { trigger, at });
                out.push(Msg::CompactionBoundary {
                    trigger,
                    pre_tokens,
                    post_tokens,
                    duration_ms: None,
                    at,
                    frame_timestamp: None,
                });
            }
            _ => self.warn_once(
                format!("compaction-tokens:{api}"),
                format!(
                    "the {api} API compacted the conversation without reporting its token counts; \
                     the context meter shows the next call's usage"
                ),
            ),
        }
    }

    fn warn_once(&mut self, key: String, warning: String) {
        if self.unpriced.insert(key) {
            self.warnings.push(warning);
        }
    }

    /// A compaction start without a trigger is manual only when the turn was `/compact`.
    fn implied_trigger(&self) -> CompactionTrigger {
        if self.last_prompt.as_deref().map(str::trim) == Some("/compact") {
            CompactionTrigger::Manual
        } else {
            CompactionTrigger::Auto
        }
    }

    /// Reports the table's window for the current model once, when the provider has not.
    fn report_table_window(&mut self, out: &mut Vec<Msg>) {
        let Some(model) = &self.model else { return };
        if self.windows_sent.contains(model) {
            return;
        }
        self.windows_sent.insert(model.clone());
        if let Some(window) = self.table.window_for(model) {
            out.push(Msg::ContextWindowsReported {
                windows: BTreeMap::from([(model.clone(), window)]),
            });
        }
    }
}

/// Whether `usage` reports any token at all.
fn used_tokens(usage: &SessionStats) -> bool {
    [
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_input_tokens,
        usage.output_tokens,
    ]
    .into_iter()
    .any(|count| count.unwrap_or(0) > 0)
}

/// The result of folding a captured stream: the final state and the messages that made it.
#[derive(Debug, Clone)]
pub struct Fold {
    /// The pane state after the last message.
    pub state: State,
    /// Every message folded, with the clock value it was folded at.
    pub messages: Vec<(u64, Msg)>,
}

/// Time of the first message of a replayed capture, and the spacing between events. Captures
/// carry no usable clock for every line, so a replay runs on a synthetic one.
pub const REPLAY_START_MS: u64 = 1_000_000;
/// See [`REPLAY_START_MS`].
pub const REPLAY_STEP_MS: u64 = 10;

/// Folds a whole captured stream's events through the reducer, opening it with
/// [`Mapper::prologue`], stepping a synthetic clock by [`REPLAY_STEP_MS`] per event, and closing
/// it with [`Mapper::end_of_stream`] (the capture ends where the CLI's output ended).
pub fn fold_events<'a>(
    mapper: &mut Mapper,
    events: impl IntoIterator<Item = &'a ProviderEvent>,
) -> Fold {
    let mut live = LiveFold::new(mapper.clone(), true);
    for event in events {
        live.push(event);
    }
    let (fold, finished) = live.finish();
    *mapper = finished;
    fold
}

/// The fold of [`fold_events`], one event at a time, for a stream that is still arriving: the
/// state is current after every [`LiveFold::push`], and memory holds the state, not the stream
/// (the messages are kept only when asked for, to record them).
#[derive(Debug)]
pub struct LiveFold {
    mapper: Mapper,
    state: State,
    now: u64,
    batch: Vec<Msg>,
    keep_messages: bool,
    messages: Vec<(u64, Msg)>,
}

impl LiveFold {
    /// Starts a fold with `mapper`, keeping every folded message when `keep_messages`.
    pub fn new(mapper: Mapper, keep_messages: bool) -> Self {
        let mut live = LiveFold {
            state: State::new(mapper.provider().as_str()),
            mapper,
            now: REPLAY_START_MS,
            batch: Vec::new(),
            keep_messages,
            messages: Vec::new(),
        };
        live.batch = live.mapper.prologue(live.now);
        live.step_batch();
        live
    }

    /// Folds one more event.
    pub fn push(&mut self, event: &ProviderEvent) {
        self.now = self.now.saturating_add(REPLAY_STEP_MS);
        self.mapper.map(event, self.now, &mut self.batch);
        self.step_batch();
    }

    /// The state so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The messages folded since the last call (kept only when asked for), for a caller that
    /// records them as they come; [`LiveFold::finish`] returns the rest.
    pub fn take_messages(&mut self) -> Vec<(u64, Msg)> {
        std::mem::take(&mut self.messages)
    }

    /// The mapper, with what it learnt of the stream so far.
    pub fn mapper(&self) -> &Mapper {
        &self.mapper
    }

    /// Ends the stream (a turn still open ends as the process having exited) and returns the
    /// fold and the mapper.
    pub fn finish(mut self) -> (Fold, Mapper) {
        self.now = self.now.saturating_add(REPLAY_STEP_MS);
        self.mapper.end_of_stream(None, self.now, &mut self.batch);
        self.step_batch();
        let fold = Fold {
            state: self.state,
            messages: self.messages,
        };
        (fold, self.mapper)
    }

    fn step_batch(&mut self) {
        let state = std::mem::replace(&mut self.state, State::new(""));
        let mut state = state;
        for msg in self.batch.drain(..) {
            if self.keep_messages {
                self.messages.push((self.now, msg.clone()));
            }
            state = step(state, self.now, msg).0;
        }
        self.state = state;
    }
}
