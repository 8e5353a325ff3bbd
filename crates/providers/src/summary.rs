//! The summary `panewise decode` prints last: the pane a person would see after a stream, and
//! the tally of the tools it started, which holds each name once so that a stream of any
//! length summarises in bounded memory.

use panewise_pane_state::State;
use panewise_protocol::{CostSource, Failure, FailureKind};
use serde::{Deserialize, Serialize};

use crate::event::ProviderEvent;
use crate::line::{DecodeCounts, Provider};
use crate::mapping::Mapper;

/// One tool of a [`ToolTally`]: its name (cut to [`ToolTally::MAX_NAME_CHARS`]) and how many
/// times it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCount {
    /// The tool's name as the stream gave it, cut when longer than a name can usefully be.
    pub name: String,
    /// How many times it started.
    pub calls: u64,
}

/// The tools a stream started, counted as they pass: each name kept once, in the order of its
/// first start, never an argument. A stream of a million calls to one tool is one entry; one
/// of a million distinct names keeps the first [`ToolTally::MAX_NAMES`] and counts the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolTally {
    names: Vec<ToolCount>,
    unlisted: u64,
}

impl ToolTally {
    /// Distinct names kept; a real agent has a few dozen tools.
    pub const MAX_NAMES: usize = 64;
    /// Characters of a name kept; real names are short identifiers.
    pub const MAX_NAME_CHARS: usize = 64;

    /// Counts `event` when it is a tool start.
    pub fn record(&mut self, event: &ProviderEvent) {
        if let ProviderEvent::ToolStarted { name, .. } = event {
            self.record_name(name);
        }
    }

    /// Counts one start of the tool `name`.
    pub fn record_name(&mut self, name: &str) {
        let name = crate::args::shorten(name, Self::MAX_NAME_CHARS);
        // A linear search: at most MAX_NAMES short names, and no hasher to seed in a pure crate.
        if let Some(entry) = self.names.iter_mut().find(|entry| entry.name == name) {
            entry.calls = entry.calls.saturating_add(1);
        } else if self.names.len() < Self::MAX_NAMES {
            self.names.push(ToolCount {
                name: name.into_owned(),
                calls: 1,
            });
        } else {
            self.unlisted = self.unlisted.saturating_add(1);
        }
    }

    /// The tools counted, in the order of their first start.
    pub fn names(&self) -> &[ToolCount] {
        &self.names
    }

    /// Starts of tools whose names did not fit.
    pub fn unlisted(&self) -> u64 {
        self.unlisted
    }
}

/// What `panewise decode --json` prints last: the pane a person would see after the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaneSummary {
    /// The provider whose stream was decoded.
    pub provider: Provider,
    /// Events decoded, unknown ones included.
    pub events: u64,
    /// Events of a type the decoder does not know.
    pub unknown_events: u64,
    /// Lines that could not be decoded.
    pub decode_errors: u64,
    /// The final turn phase: `idle`, `submitting`, `streaming`, `interrupting`, `done` or
    /// `disconnected`.
    pub turn_phase: String,
    /// Turns that completed successfully.
    pub turns_completed: u64,
    /// Each tool that started, once, in the order of its first start, with its number of
    /// calls; at most [`ToolTally::MAX_NAMES`] names (the calls of any others are in
    /// `tools_unlisted`).
    pub tools: Vec<ToolCount>,
    /// Calls of tools whose names did not fit in `tools`.
    #[serde(default)]
    pub tools_unlisted: u64,
    /// Session total of uncached input tokens.
    pub input_tokens: Option<u64>,
    /// Session total of output tokens.
    pub output_tokens: Option<u64>,
    /// Session total of input tokens read from the cache.
    pub cached_input_tokens: Option<u64>,
    /// Session total of input tokens written to the cache.
    pub cache_write_input_tokens: Option<u64>,
    /// Session total of reasoning tokens (part of the output tokens).
    pub reasoning_tokens: Option<u64>,
    /// Session cost in US dollars; `None` when it cannot be known.
    pub cost_usd: Option<f64>,
    /// Where the cost comes from: `reported` by the CLI, `estimated` from the price table, or
    /// `unknown` (then `cost_usd` is `None`).
    pub cost_source: CostSource,
    /// The model in use, as the stream named it or as assumed.
    pub model: Option<String>,
    /// True when the stream never named the model (Codex `exec --json`): the window and price
    /// are those of a model taken from configuration or the model table's default.
    pub model_assumed: bool,
    /// The agent's newest plan.
    pub plan: Vec<panewise_protocol::PlanStep>,
    /// Warnings for the person (a model without a price, …).
    pub warnings: Vec<String>,
    /// Tokens in context, as the meter shows them.
    pub context_tokens: Option<u64>,
    /// The context window the meter uses: the reading's, or without a reading the window
    /// reported for the model in use (the model table's, for a provider that reports none).
    pub context_window: Option<u64>,
    /// Compactions seen, reported or detected by the token-drop heuristic.
    pub compactions: u64,
    /// The failure shown, if any.
    pub failure: Option<SummaryFailure>,
}

/// The failure part of a [`PaneSummary`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryFailure {
    /// Its kind.
    pub kind: FailureKind,
    /// Whether retrying may succeed.
    pub retryable: bool,
    /// The provider's message.
    pub message: String,
}

impl From<&Failure> for SummaryFailure {
    fn from(failure: &Failure) -> Self {
        SummaryFailure {
            kind: failure.kind,
            retryable: failure.retryable,
            message: failure.message.clone(),
        }
    }
}

/// The summary of a folded stream, from its events (see [`summarize_tally`] for a stream too
/// long to keep its events).
pub fn summarize<'a>(
    mapper: &Mapper,
    counts: DecodeCounts,
    events: impl IntoIterator<Item = &'a ProviderEvent>,
    state: &State,
) -> PaneSummary {
    let mut tally = ToolTally::default();
    for event in events {
        tally.record(event);
    }
    summarize_tally(mapper, counts, &tally, state)
}

/// The summary of a folded stream whose tool starts were counted in `tally` as they passed.
pub fn summarize_tally(
    mapper: &Mapper,
    counts: DecodeCounts,
    tally: &ToolTally,
    state: &State,
) -> PaneSummary {
    let totals = state.session_totals.as_ref();
    let reading = state.plausible_reading();
    let (model, model_source) = mapper.model();
    PaneSummary {
        provider: mapper.provider(),
        events: counts.events,
        unknown_events: counts.unknown_events,
        decode_errors: counts.decode_errors,
        turn_phase: state.turn_phase.kind_name().to_owned(),
        turns_completed: state.turns_completed,
        tools: tally.names.clone(),
        tools_unlisted: tally.unlisted,
        input_tokens: totals.and_then(|totals| totals.input_tokens),
        output_tokens: totals.and_then(|totals| totals.output_tokens),
        cached_input_tokens: totals.and_then(|totals| totals.cached_input_tokens),
        cache_write_input_tokens: totals.and_then(|totals| totals.cache_write_input_tokens),
        reasoning_tokens: totals.and_then(|totals| totals.reasoning_tokens),
        cost_usd: totals.and_then(|totals| totals.cost_usd),
        cost_source: totals
            .and_then(|totals| totals.cost_source)
            .unwrap_or(CostSource::Unknown),
        model: model.map(str::to_owned),
        model_assumed: model_source.is_assumed(),
        plan: state.plan.clone(),
        warnings: mapper.warnings().to_vec(),
        context_tokens: reading.map(|reading| reading.tokens),
        context_window: match reading {
            Some(reading) => reading.window,
            None => known_window(state),
        },
        compactions: state.compactions,
        failure: state
            .failure
            .as_ref()
            .map(|failure| SummaryFailure::from(&failure.failure)),
    }
}

/// The window of the model in use when there is no reading to take it from: the last model a
/// reading named, or else the only model a window was reported for (the mapper reports the model
/// table's window for the model it assumes as soon as usage arrives). More than one candidate
/// and no reading to choose between them gives none.
fn known_window(state: &State) -> Option<u64> {
    let windows = &state.reported_context_windows;
    if let Some(model) = &state.last_context_model {
        if let Some(window) = windows.get(model) {
            return Some(*window);
        }
    }
    let mut only = windows.values();
    match (only.next(), only.next()) {
        (Some(window), None) => Some(*window),
        _ => None,
    }
}
