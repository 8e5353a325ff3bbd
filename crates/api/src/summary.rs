//! What the list says about a session, and its state class derived from the pane state.

use panewise_pane_state::{
    BudgetCaps, State, TurnOutcome, TurnPhase, WindowSource, WindowStandDown,
};
use panewise_protocol::{CostSource, FailureKind, SessionStats};
use serde::{Deserialize, Serialize};

/// The version of a [`SessionSummary`]'s fields (`v`), as `agents --json` prints it.
pub const SUMMARY_VERSION: u32 = 1;

/// A session's state, as a person scanning the list needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// A turn is running.
    Working,
    /// An approval or a question waits for someone.
    NeedsInput,
    /// Nothing runs and nothing new was finished since someone last looked.
    Idle,
    /// A turn finished, and nobody has looked at it yet.
    Done,
    /// The last turn failed, or the session's task did.
    Failed,
    /// Someone interrupted the last turn; the session is still open for a prompt.
    Interrupted,
    /// Someone stopped the session: it has ended.
    Stopped,
    /// The session ended on its own.
    Exited,
}

impl AgentState {
    /// Every state, `needs_input` first: the order the list sorts by.
    pub const ALL: [AgentState; 8] = [
        AgentState::NeedsInput,
        AgentState::Done,
        AgentState::Failed,
        AgentState::Working,
        AgentState::Idle,
        AgentState::Interrupted,
        AgentState::Stopped,
        AgentState::Exited,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Working => "working",
            AgentState::NeedsInput => "needs_input",
            AgentState::Idle => "idle",
            AgentState::Done => "done",
            AgentState::Failed => "failed",
            AgentState::Interrupted => "interrupted",
            AgentState::Stopped => "stopped",
            AgentState::Exited => "exited",
        }
    }

    /// Where the list puts it: `needs_input` first.
    pub fn rank(self) -> usize {
        AgentState::ALL
            .iter()
            .position(|state| *state == self)
            .unwrap_or(AgentState::ALL.len())
    }
}

/// How a session's task ended, as the daemon saw it (not in the pane state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum Ending {
    /// It ran to its end.
    Ended,
    /// Someone stopped it (`session/stop`, the daemon's shutdown).
    Stopped,
    /// Its task failed (an error, a panic), with why.
    Failed {
        /// Why.
        reason: String,
    },
}

/// What the daemon knows beside the pane state that decides the class.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observed {
    /// Turns completed when a client last looked (attached, or waited for it).
    pub turns_seen: u64,
    /// How the session's task ended, once it has.
    pub ending: Option<Ending>,
}

/// The state class of a session whose pane state is `state`.
pub fn classify(state: &State, observed: &Observed) -> AgentState {
    match &observed.ending {
        Some(Ending::Failed { .. }) => return AgentState::Failed,
        Some(Ending::Stopped) => return AgentState::Stopped,
        Some(Ending::Ended) if state.failure.is_some() => return AgentState::Failed,
        Some(Ending::Ended) => return AgentState::Exited,
        None => {}
    }
    if !state.pending_approvals.is_empty()
        || !state.pending_questions.is_empty()
        || state.budget_hold.is_some()
    {
        return AgentState::NeedsInput;
    }
    match &state.turn_phase {
        TurnPhase::Submitting { .. }
        | TurnPhase::Streaming { .. }
        | TurnPhase::Interrupting { .. }
        | TurnPhase::Disconnected { .. } => AgentState::Working,
        TurnPhase::Idle => AgentState::Idle,
        TurnPhase::Done { outcome, .. } => match outcome {
            _ if state.failure.is_some() => AgentState::Failed,
            TurnOutcome::Errored => AgentState::Failed,
            // The turn, not the session: an interrupted session still takes prompts.
            TurnOutcome::Stopped | TurnOutcome::Interrupted => AgentState::Interrupted,
            TurnOutcome::Completed if state.turns_completed > observed.turns_seen => {
                AgentState::Done
            }
            TurnOutcome::Completed => AgentState::Idle,
        },
    }
}

/// What a `needs_input` session waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WaitingFor {
    /// An approval of a tool call.
    Approval {
        /// The request's id (`session/approve`'s `request`).
        id: String,
        /// The tool.
        tool: String,
        /// What it wants to do: the command, the path.
        argument: String,
    },
    /// A question of the agent.
    Question {
        /// The question set's id.
        id: String,
        /// The questions.
        questions: Vec<String>,
    },
    /// The session reached a spend cap and is held until it is raised (`session/set_budget`)
    /// or the session is stopped (R112).
    Budget {
        /// Why, as shown: `budget reached: $X of $Y`.
        reason: String,
    },
}

impl WaitingFor {
    /// The id of what waits: a request's, or `budget` for a hold at the budget (one at a
    /// time).
    pub fn id(&self) -> &str {
        match self {
            WaitingFor::Approval { id, .. } | WaitingFor::Question { id, .. } => id,
            WaitingFor::Budget { .. } => "budget",
        }
    }
}

/// What the front of the pane state's queues waits for, if anything: the client model's
/// [`open_request`], the one reader of the reducer's open requests.
pub fn waiting_for(state: &State) -> Option<WaitingFor> {
    open_request(state)
}

/// The context in use as a percentage of the model's window, when both are known and the
/// reading is plausible.
pub fn context_pct(state: &State) -> Option<f64> {
    let reading = state.plausible_reading()?;
    let window = reading.window.filter(|window| *window > 0)?;
    // Counts far below 2^53: the conversion is exact enough for a percentage.
    #[allow(clippy::cast_precision_loss)]
    let pct = reading.tokens as f64 * 100.0 / window as f64;
    Some((pct * 10.0).round() / 10.0)
}

/// TOKENS: every token the session's calls processed, input (uncached, cache reads and cache
/// writes) and output ([`total_tokens`]).
pub fn tokens(state: &State) -> Option<u64> {
    total_tokens(state.session_totals.as_ref()?)
}

/// One session in the list: `agents --json` prints these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// [`SUMMARY_VERSION`].
    pub v: u32,
    /// The session's id (its log's file name without `.jsonl`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The provider as it was named.
    pub provider: String,
    /// The model, when known.
    pub model: Option<String>,
    /// The agent's working directory.
    pub cwd: String,
    /// The state class.
    pub state: AgentState,
    /// What a `needs_input` session waits for.
    pub waiting_for: Option<WaitingFor>,
    /// The tool running now.
    pub tool: Option<String>,
    /// Its argument.
    pub tool_arg: Option<String>,
    /// The context in use, in percent of the window.
    pub context_pct: Option<f64>,
    /// Where the window `context_pct` is measured against comes from: `model` is a guess
    /// from the model-name table (a dashboard marks it).
    #[serde(default)]
    pub context_window_source: Option<WindowSource>,
    /// Tokens processed so far: input (uncached, read from the prompt cache and written to
    /// it) plus output ([`tokens`]).
    pub tokens: Option<u64>,
    /// Cost so far, in US dollars.
    pub cost_usd: Option<f64>,
    /// Where the cost comes from.
    pub cost_source: Option<CostSource>,
    /// The session's spend caps, when it has any (R112): `max_cost_usd`, `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetCaps>,
    /// Since when a `needs_input` session has waited for what `waiting_for` names, ms since
    /// the Unix epoch (the time its request was recorded).
    #[serde(default)]
    pub waiting_since_ms: Option<u64>,
    /// The classified kind of the last turn's failure (`rate_limited`, `auth`…), while it
    /// stands.
    #[serde(default)]
    pub failure_kind: Option<FailureKind>,
    /// The own loop's window stage stood down on its floor (R110), while it does: what must
    /// stay and the threshold, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_stood_down: Option<WindowStandDown>,
    /// The session log.
    pub log: String,
    /// The approval mode.
    pub approval: String,
    /// When it started, ms since the Unix epoch.
    pub started_at_ms: u64,
    /// Turns completed.
    pub turns: u64,
    /// Clients attached now.
    pub attached: u32,
    /// Its git worktree, when it has one.
    pub worktree: Option<String>,
    /// Why it failed, when its task did.
    pub failure: Option<String>,
}

impl SessionSummary {
    /// The time the list orders a session by: since when it has waited, for a `needs_input`
    /// one (the longest waiting first), else its start.
    pub fn since_ms(&self) -> u64 {
        self.waiting_since_ms
            .filter(|_| self.state == AgentState::NeedsInput)
            .unwrap_or(self.started_at_ms)
    }
}

/// The pane-derived fields of a summary; the daemon fills in the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct PaneFields {
    /// [`classify`].
    pub state: AgentState,
    /// [`waiting_for`].
    pub waiting_for: Option<WaitingFor>,
    /// The current tool.
    pub tool: Option<String>,
    /// Its argument.
    pub tool_arg: Option<String>,
    /// [`context_pct`].
    pub context_pct: Option<f64>,
    /// Where that percentage's window comes from.
    pub context_window_source: Option<WindowSource>,
    /// The active failure's kind.
    pub failure_kind: Option<FailureKind>,
    /// The window stage's stand-down, while it holds (R110, R111).
    pub window_stood_down: Option<WindowStandDown>,
    /// [`tokens`].
    pub tokens: Option<u64>,
    /// The model the agent last reported ([`model_of`] with nothing asked).
    pub model: Option<String>,
    /// The cost so far.
    pub cost_usd: Option<f64>,
    /// Its source.
    pub cost_source: Option<CostSource>,
    /// The spend caps.
    pub budget: Option<BudgetCaps>,
    /// Turns completed.
    pub turns: u64,
}

impl PaneFields {
    /// What `state` says, with what the daemon `observed`.
    pub fn of(state: &State, observed: &Observed) -> PaneFields {
        let totals = state.session_totals.as_ref();
        let class = classify(state, observed);
        PaneFields {
            state: class,
            waiting_for: waiting_for(state).filter(|_| class == AgentState::NeedsInput),
            tool: state.current_tool.clone(),
            tool_arg: state.current_tool_arg.clone(),
            context_pct: context_pct(state),
            context_window_source: context_pct(state)
                .and_then(|_| state.plausible_reading())
                .and_then(|reading| reading.window_source),
            failure_kind: state.failure.as_ref().map(|failure| failure.failure.kind),
            window_stood_down: state.window_stood_down,
            tokens: tokens(state),
            model: model_of(state, None),
            cost_usd: totals.and_then(|totals| totals.cost_usd),
            cost_source: totals.and_then(|totals| totals.cost_source),
            budget: state.budget,
            turns: state.turns_completed,
        }
    }
}

/// Sorts a list as the API returns it: `needs_input` first (the longest waiting first), then
/// by start time ([`SessionSummary::since_ms`]).
pub fn sort_sessions(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| {
        (a.state.rank(), a.since_ms(), &a.id).cmp(&(b.state.rank(), b.since_ms(), &b.id))
    });
}

/// The name of a session given none: its id's last 8 characters (its first ones are the
/// start time, which sessions started together share). The daemon names its sessions so, and
/// `replay` and `resume` find a recorded session by it.
pub fn default_session_name(id: &str) -> String {
    let skip = id.chars().count().saturating_sub(8);
    id.chars().skip(skip).collect()
}

/// The full id `key` names among `sessions` (each an id and a name): the id itself, a name,
/// or a unique prefix of an id. The daemon resolves every request's session this way, and a
/// client holding a list can do the same.
pub fn resolve_session<'a>(
    sessions: impl Iterator<Item = (&'a str, &'a str)>,
    key: &str,
) -> Result<String, crate::RpcError> {
    use crate::{ErrorCode, RpcError};
    let sessions: Vec<(&str, &str)> = sessions.collect();
    if let Some((id, _)) = sessions.iter().find(|(id, _)| *id == key) {
        return Ok((*id).to_owned());
    }
    if let Some((id, _)) = sessions.iter().find(|(_, name)| *name == key) {
        return Ok((*id).to_owned());
    }
    let matches: Vec<(&str, &str)> = sessions
        .iter()
        .copied()
        .filter(|(id, _)| !key.is_empty() && id.starts_with(key))
        .collect();
    let shown = shown_key(key);
    match matches.as_slice() {
        [(one, _)] => Ok((*one).to_owned()),
        [] => Err(RpcError::new(
            ErrorCode::UnknownSession,
            format!("no session has the id, prefix or name {shown} (see `panewise agents`)"),
        )),
        many => Err(RpcError::new(
            ErrorCode::AmbiguousSession,
            format!(
                "{shown} is the start of {} session ids: {}; give more of it, or the name",
                many.len(),
                candidates(many)
            ),
        )),
    }
}

/// How many candidates an ambiguous prefix's error lists.
pub const CANDIDATES_LISTED: usize = 5;

/// The sessions an ambiguous prefix matches, `ID (NAME)`, the first [`CANDIDATES_LISTED`]
/// and how many more.
pub fn candidates(matches: &[(&str, &str)]) -> String {
    let mut listed: Vec<String> = matches
        .iter()
        .take(CANDIDATES_LISTED)
        .map(|(id, name)| format!("{id} ({})", shown_name(name)))
        .collect();
    if matches.len() > CANDIDATES_LISTED {
        listed.push(format!("and {} more", matches.len() - CANDIDATES_LISTED));
    }
    listed.join(", ")
}

/// A key as an error shows it: quoted, escaped, at most 64 characters of it.
pub fn shown_key(key: &str) -> String {
    const MOST: usize = 64;
    let count = key.chars().count();
    if count <= MOST {
        format!("{key:?}")
    } else {
        let head: String = key.chars().take(MOST).collect();
        format!("{head:?}… ({count} characters)")
    }
}

fn shown_name(name: &str) -> String {
    name.chars().filter(|c| !c.is_control()).take(40).collect()
}

/// What waits for a person in `state`: the oldest pending approval, else the oldest pending
/// question. The one reader of the reducer's open requests for every client.
pub fn open_request(state: &State) -> Option<WaitingFor> {
    if let Some(approval) = state.pending_approvals.front() {
        return Some(WaitingFor::Approval {
            id: approval.id.clone(),
            tool: approval.tool.clone(),
            argument: approval.summary.clone(),
        });
    }
    if let Some(questions) = state.pending_questions.front() {
        return Some(WaitingFor::Question {
            id: questions.id.clone(),
            questions: questions.questions.clone(),
        });
    }
    state.budget_hold.as_ref().map(|hold| WaitingFor::Budget {
        reason: hold.reason.clone(),
    })
}

/// Every input token the calls sent: uncached, read from the prompt cache and written to it.
/// `None` when no part was reported.
pub fn input_tokens(totals: &SessionStats) -> Option<u64> {
    sum(&[
        totals.input_tokens,
        totals.cached_input_tokens,
        totals.cache_write_input_tokens,
    ])
}

/// A session's model, the one rule every view names it by: the model the agent last reported
/// with a call's tokens (a CLI's own choice, or what the API answered with); else the only
/// model it reported a context window for (Gemini CLI over ACP names the model that did the
/// work only in its per-turn usage); else the one `asked` for at launch.
pub fn model_of(state: &State, asked: Option<&str>) -> Option<String> {
    let mut windows = state.reported_context_windows.keys();
    let only_reported = match (windows.next(), windows.next()) {
        (Some(model), None) => Some(model.clone()),
        (Some(_), Some(_)) | (None, _) => None,
    };
    state
        .last_context_model
        .clone()
        .or(only_reported)
        .or_else(|| asked.map(str::to_owned))
}

/// TOKENS: every token the calls processed, [`input_tokens`] plus output. `None` when no
/// part was reported.
pub fn total_tokens(totals: &SessionStats) -> Option<u64> {
    sum(&[input_tokens(totals), totals.output_tokens])
}

fn sum(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().any(Option::is_some).then(|| {
        parts
            .iter()
            .flatten()
            .fold(0u64, |total, n| total.saturating_add(*n))
    })
}

#[cfg(test)]
mod tests {
    use panewise_pane_state::{Msg, State};

    use super::model_of;

    #[test]
    fn the_model_is_the_last_reported_else_the_only_one_with_a_window_else_the_one_asked() {
        let windows = |models: &[&str]| Msg::ContextWindowsReported {
            windows: models
                .iter()
                .map(|model| ((*model).to_owned(), 1_000_000))
                .collect(),
        };
        // (what the agent reported, the model asked for, the model every view shows)
        let cases: [(Vec<Msg>, Option<&str>, Option<&str>); 5] = [
            (vec![], None, None),
            (vec![], Some("asked"), Some("asked")),
            (
                vec![windows(&["gemini-3.8-flash"])],
                Some("asked"),
                Some("gemini-3.8-flash"),
            ),
            (
                vec![windows(&["opus", "haiku"])],
                Some("asked"),
                Some("asked"),
            ),
            (
                vec![
                    windows(&["opus", "haiku"]),
                    Msg::TokensIn {
                        input: 10,
                        model: Some("opus".to_owned()),
                        cache_read: None,
                        cache_write: None,
                        cache_write_1h: None,
                        turn: None,
                    },
                ],
                Some("asked"),
                Some("opus"),
            ),
        ];
        for (messages, asked, expected) in cases {
            let mut state = State::new("agent");
            for message in messages.clone() {
                state = panewise_pane_state::step(state, 0, message).0;
            }
            assert_eq!(
                model_of(&state, asked).as_deref(),
                expected,
                "{messages:?} asked {asked:?}"
            );
        }
    }
}
