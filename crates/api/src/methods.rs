//! One params struct and one result struct per method, and the notifications.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::summary::SessionSummary;

/// Every method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `hello`: the versions; [`HelloParams`] → [`HelloResult`].
    Hello,
    /// `session/list`: every session; [`ListParams`] → [`ListResult`].
    List,
    /// `session/create`: start a session; [`CreateParams`] → [`CreateResult`].
    Create,
    /// `session/prompt`: send a prompt; [`PromptParams`] → [`Ack`].
    Prompt,
    /// `session/approve`: answer the approval asked; [`ApproveParams`] → [`ApproveResult`].
    Approve,
    /// `session/answer`: answer the question asked; [`AnswerParams`] → [`Ack`].
    Answer,
    /// `session/interrupt`: stop the running turn; [`SessionParams`] → [`Ack`].
    Interrupt,
    /// `session/stop`: end the session; [`SessionParams`] → [`Ack`].
    Stop,
    /// `session/resume`: continue a recorded session; [`ResumeParams`] → [`CreateResult`].
    Resume,
    /// `session/remove`: forget an ended session; [`SessionParams`] → [`RemoveResult`].
    Remove,
    /// `session/rename`: give a session a new name; [`RenameParams`] → [`Ack`].
    Rename,
    /// `session/set_budget`: raise (or cut) a session's spend caps; [`SetBudgetParams`] →
    /// [`SetBudgetResult`].
    SetBudget,
    /// `session/subscribe`: the session's log lines from an offset, then live;
    /// [`SubscribeParams`] → [`SubscribeResult`], then [`LineNotice`]s and an [`EndNotice`].
    Subscribe,
    /// `session/unsubscribe`: no more lines of that session; [`SessionParams`] → [`Ack`].
    Unsubscribe,
    /// `sessions/subscribe`: the session list as it changes; [`ListParams`] →
    /// [`ListResult`], then [`ChangedNotice`]s and [`RemovedNotice`]s.
    SubscribeList,
    /// `daemon/set_budget`: raise (or cut) the daemon's spend caps over all its sessions;
    /// [`DaemonBudgetParams`] → [`DaemonBudgetResult`].
    SetDaemonBudget,
    /// `daemon/shutdown`: stop every session as `session/stop` does, then exit;
    /// [`Empty`] → [`Ack`].
    Shutdown,
}

impl Method {
    /// Every method, in the order `docs/API.md` lists them.
    pub const ALL: [Method; 17] = [
        Method::Hello,
        Method::List,
        Method::Create,
        Method::Prompt,
        Method::Approve,
        Method::Answer,
        Method::Interrupt,
        Method::Stop,
        Method::Resume,
        Method::Remove,
        Method::Rename,
        Method::SetBudget,
        Method::Subscribe,
        Method::Unsubscribe,
        Method::SubscribeList,
        Method::SetDaemonBudget,
        Method::Shutdown,
    ];

    /// The name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Method::Hello => "hello",
            Method::List => "session/list",
            Method::Create => "session/create",
            Method::Prompt => "session/prompt",
            Method::Approve => "session/approve",
            Method::Answer => "session/answer",
            Method::Interrupt => "session/interrupt",
            Method::Stop => "session/stop",
            Method::Resume => "session/resume",
            Method::Remove => "session/remove",
            Method::Rename => "session/rename",
            Method::SetBudget => "session/set_budget",
            Method::Subscribe => "session/subscribe",
            Method::Unsubscribe => "session/unsubscribe",
            Method::SubscribeList => "sessions/subscribe",
            Method::SetDaemonBudget => "daemon/set_budget",
            Method::Shutdown => "daemon/shutdown",
        }
    }

    /// The method a name on the wire names.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|method| method.name() == name)
    }
}

/// No params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// A result that says only that the request was done.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// Always true.
    pub ok: bool,
}

impl Ack {
    /// Done.
    pub const OK: Ack = Ack { ok: true };
}

/// `hello`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloParams {
    /// The API version the client speaks ([`crate::API_VERSION`]).
    pub api_version: u32,
    /// The client's name, recorded as who answered an approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// `hello`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloResult {
    /// The API version the daemon speaks.
    pub api_version: u32,
    /// panewise's version.
    pub panewise_version: String,
    /// The daemon's process id.
    pub pid: u32,
}

/// `session/list`'s and `sessions/subscribe`'s params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {}

/// The session list, `needs_input` sessions first, then by start time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResult {
    /// The sessions.
    pub sessions: Vec<SessionSummary>,
}

/// `session/create`'s params. Every field but `prompt` may be left out; the defaults are
/// `panewise run`'s (no provider configured: the offline mock).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateParams {
    /// The provider (`panewise run --provider`'s names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The first prompt; none: the session waits for `session/prompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The agent's working directory, absolute (default: the daemon's choice as `run` makes
    /// it: a fresh directory for the mock, else the daemon's current directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A name, unique among the daemon's sessions (default: the id's first 8 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The approval mode (`read-only`, `ask`, `auto`, `full-access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// The window strategy, as `panewise window --config` reads it (a JSON object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Value>,
    /// Run in a git worktree of its own under the repository of `cwd`.
    #[serde(default)]
    pub worktree: bool,
    /// The built-in mock's scenario (`panewise mock-server --scenario`'s names, for example
    /// `sleeping-tool` or `rate-limit`), for a session of the `mock` provider on the
    /// daemon's own mock server; default `tool-then-answer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock_scenario: Option<String>,
    /// The session's cost cap in US dollars (`panewise.toml` `[limits] max_cost_usd`
    /// otherwise): reached, the session is held as `needs_input` until `session/set_budget`
    /// raises it or the session is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The session's token cap (`[limits] max_tokens` otherwise): the cap of a session whose
    /// cost is unknown, and held at as the cost cap is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Where the asking client is and what its environment holds: the session is made from
    /// this context, the daemon's own being the fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientContext>,
}

/// The context of the client that asks for a session: the session is made from where the
/// client is (its working directory, and the `panewise.toml` found from the session's
/// directory) and with the provider keys and endpoints of its environment, not the daemon's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientContext {
    /// The client's working directory, absolute: a relative `cwd` is taken from here, and a
    /// session given no `cwd` runs here.
    pub cwd: String,
    /// Provider keys, endpoints and agent executables from the client's environment.
    #[serde(default, skip_serializing_if = "ClientEnv::is_empty")]
    pub env: ClientEnv,
}

/// Environment variables a client sends with its request, variable name → value. Kept in
/// memory for the one session it is for: its `Debug` shows the names and never a value (a
/// value may be an API key).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientEnv(BTreeMap<String, String>);

impl ClientEnv {
    /// The variables given.
    pub fn new(variables: BTreeMap<String, String>) -> Self {
        Self(variables)
    }

    /// The value of `name`, when given and not blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|value| !value.trim().is_empty())
    }

    /// No variable is given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names given, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Every variable with its value, to hand to a process that needs it.
    pub fn variables(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

impl fmt::Debug for ClientEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|name| (name, "[redacted]")))
            .finish()
    }
}

/// `session/create`'s and `session/resume`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateResult {
    /// The new session.
    pub session: SessionSummary,
}

/// The params of a method on one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// The session's id, any unique prefix of it, or its name.
    pub session: String,
}

/// `session/prompt`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptParams {
    /// The session.
    pub session: String,
    /// The prompt: sent at once when the agent is idle, queued while a turn runs.
    pub text: String,
}

/// How an approval is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Allow this request.
    AllowOnce,
    /// Allow this request and every later one for the same tool in this session.
    AllowForSession,
    /// Deny it; the agent is told `message` when one is given.
    Deny {
        /// What the agent is told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// `session/approve`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApproveParams {
    /// The session.
    pub session: String,
    /// The request answered (`waiting_for.id`); none answers the one waiting now. Naming it
    /// makes sure the answer is not taken for a later request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The answer.
    #[serde(flatten)]
    pub decision: Decision,
}

/// `session/approve`'s result: the request the answer went to. It reads as an [`Ack`] too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApproveResult {
    /// Always true.
    pub ok: bool,
    /// The request answered.
    pub request: crate::approvals::WaitingApproval,
}

/// `session/answer`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerParams {
    /// The session.
    pub session: String,
    /// The answer's text.
    pub text: String,
}

/// `session/resume`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeParams {
    /// A session the daemon knows (id, prefix or name), or a recorded log's path.
    pub session: String,
    /// A prompt to send once it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The asking client's context (see [`CreateParams::client`]): its keys and endpoints
    /// are the resumed session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientContext>,
}

/// `session/remove`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveResult {
    /// The session removed.
    pub id: String,
    /// What became of its worktree, when it had one (`removed`, or why it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

/// `session/rename`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameParams {
    /// The session.
    pub session: String,
    /// Its new name.
    pub name: String,
}

/// `session/set_budget`'s params: each cap given replaces the session's; a cap left out
/// stays as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetBudgetParams {
    /// The session.
    pub session: String,
    /// The most the session may cost, in US dollars (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The most tokens it may process (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// `session/set_budget`'s result: the caps the session has now. A session held at its budget
/// goes on once its spend is within them (its summary's `waiting_for` then clears).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetBudgetResult {
    /// Always true.
    pub ok: bool,
    /// The caps now.
    pub budget: panewise_pane_state::BudgetCaps,
}

/// `daemon/set_budget`'s params: each cap given replaces the daemon's; one left out stays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonBudgetParams {
    /// What all the daemon's sessions may cost together, in US dollars (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// What they may cost in one day (UTC), in US dollars (above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_max_cost_usd: Option<f64>,
}

/// `daemon/set_budget`'s result: the daemon's caps now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonBudgetResult {
    /// Always true.
    pub ok: bool,
    /// The caps now.
    pub caps: panewise_pane_state::budget::DaemonCaps,
}

/// `session/subscribe`'s params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscribeParams {
    /// The session.
    pub session: String,
    /// The index of the first log line wanted (0: the header). A client that reconnects
    /// names the line after the last one it got, and loses nothing.
    #[serde(default)]
    pub from_line: u64,
    /// The client is attached (a person looks at it): the session counts as seen, and the
    /// daemon's notifications for it wait until no client is attached.
    #[serde(default)]
    pub attach: bool,
}

/// `session/subscribe`'s result; the lines follow as [`LineNotice`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeResult {
    /// The session's full id.
    pub id: String,
    /// The session log's path.
    pub log: String,
}

/// The notifications, by name.
pub const NOTIFICATIONS: [&str; 5] = [
    LineNotice::METHOD,
    EndNotice::METHOD,
    ChangedNotice::METHOD,
    RemovedNotice::METHOD,
    DroppedNotice::METHOD,
];

/// `session/line`: one complete line of a subscribed session's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineNotice {
    /// The session's full id.
    pub session: String,
    /// The line's index in the log (0: the header).
    pub index: u64,
    /// The line, as the log holds it, without its newline: fold it as `panewise replay` does.
    pub line: String,
}

impl LineNotice {
    /// The notification's name.
    pub const METHOD: &'static str = "session/line";
}

/// `session/ended`: a subscribed session ended and every line of its log was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndNotice {
    /// The session's full id.
    pub session: String,
    /// The number of lines its log holds.
    pub lines: u64,
}

impl EndNotice {
    /// The notification's name.
    pub const METHOD: &'static str = "session/ended";
}

/// `sessions/changed`: a session's summary changed (or it was created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedNotice {
    /// The summary now.
    pub session: SessionSummary,
}

impl ChangedNotice {
    /// The notification's name.
    pub const METHOD: &'static str = "sessions/changed";
}

/// `sessions/removed`: a session was removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemovedNotice {
    /// The session's full id.
    pub id: String,
}

impl RemovedNotice {
    /// The notification's name.
    pub const METHOD: &'static str = "sessions/removed";
}

/// `daemon/dropped`: the daemon closes this connection because the client stopped reading
/// (its queue stayed full past the daemon's stall limit). The last line the connection gets;
/// nothing is lost: each subscription says the line index to subscribe again from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedNotice {
    /// Why, as a sentence.
    pub reason: String,
    /// Where each of the connection's log subscriptions resumes (`session/subscribe`'s
    /// `from_line`).
    pub resume: Vec<ResumeAt>,
}

impl DroppedNotice {
    /// The notification's name.
    pub const METHOD: &'static str = "daemon/dropped";
}

/// A subscription's next line, for a client that subscribes again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeAt {
    /// The session's full id.
    pub session: String,
    /// The index of the first line it was not sent.
    pub from_line: u64,
}
