//! The dashboard's state: the session list as the daemon last said it, the selection, the
//! subscribed session's fold, what the person is typing, and the notices shown.

use std::collections::{BTreeMap, BTreeSet};

use panewise_api::{AgentState, SessionSummary, SessionView};
use panewise_pane_state::log::TranscriptEntry;
use panewise_pane_state::State;

/// The most notices kept.
pub const NOTICE_CAP: usize = 5;

/// Past this many sessions, the idle and finished groups are folded into one row each until
/// the person opens them (`z`).
pub const COLLAPSE_OVER: usize = 12;

/// What the dashboard starts with: settings from `panewise.toml`, read by the shell.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// Ring the terminal bell on a notice (`[notify] bell`).
    pub bell: bool,
    /// The provider a new session gets unless changed.
    pub provider: String,
    /// The model, when one is configured.
    pub model: String,
    /// The approval mode.
    pub approval: String,
    /// The working directory.
    pub cwd: String,
    /// The remote hosts whose daemons are listed too (`--remote`, `[remote] hosts`): the
    /// list gets a host column.
    pub remote_hosts: Vec<String>,
}

/// The host of a session's key: a remote host's session is keyed `HOST:ID` (the shell
/// prefixes every id and session field a remote daemon sends, and strips it from the effects
/// it routes there; the CLI names it the same way); this machine's ids (UUIDv7s) hold no
/// colon, so `None` is the local daemon.
pub fn host_of(key: &str) -> Option<&str> {
    key.split_once(':').map(|(host, _)| host)
}

/// The name a host's column shows: the host, or `local`.
pub fn host_label(key: &str) -> &str {
    host_of(key).unwrap_or("local")
}

/// The group a session is listed in, in the order the list shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// An approval or a question waits.
    NeedsInput,
    /// A turn runs.
    Working,
    /// A turn finished and nobody looked yet.
    Done,
    /// Nothing runs.
    Idle,
    /// Failed, stopped or exited.
    Finished,
}

impl Group {
    /// Every group, in list order.
    pub const ALL: [Group; 5] = [
        Group::NeedsInput,
        Group::Working,
        Group::Done,
        Group::Idle,
        Group::Finished,
    ];

    /// The group of a state.
    pub fn of(state: AgentState) -> Group {
        match state {
            AgentState::NeedsInput => Group::NeedsInput,
            AgentState::Working => Group::Working,
            AgentState::Done => Group::Done,
            AgentState::Idle | AgentState::Interrupted => Group::Idle,
            AgentState::Failed | AgentState::Stopped | AgentState::Exited => Group::Finished,
        }
    }

    /// Its heading.
    pub fn title(self) -> &'static str {
        match self {
            Group::NeedsInput => "needs input",
            Group::Working => "working",
            Group::Done => "done",
            Group::Idle => "idle",
            Group::Finished => "failed / stopped / exited",
        }
    }

    /// Whether it folds once the list is long.
    pub fn folds(self) -> bool {
        matches!(self, Group::Idle | Group::Finished)
    }
}

/// The subscribed session: its log lines folded by the client model ([`SessionView`]), as
/// `panewise attach` and `panewise replay` fold them.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The session's id.
    pub session: String,
    /// Subscribed with `attach` (a person looks at the whole transcript).
    pub attached: bool,
    /// The fold: the state, the conversation (newest last, at most
    /// [`panewise_api::view::TRANSCRIPT_CAP`] entries), the next line expected.
    pub view: SessionView,
    /// The session ended and every line arrived.
    pub ended: bool,
}

impl Watched {
    /// A fresh fold of `session`.
    pub fn new(session: &str, attached: bool) -> Watched {
        Watched {
            session: session.to_owned(),
            attached,
            view: SessionView::new(),
            ended: false,
        }
    }

    /// Folds the log line `index`; a line out of order is skipped.
    pub fn fold(&mut self, index: u64, line: &str) {
        self.view.fold_line(index, line);
    }

    /// The index of the next line expected.
    pub fn next_line(&self) -> u64 {
        self.view.next_line()
    }

    /// The folded pane state.
    pub fn state(&self) -> &State {
        self.view.state()
    }

    /// The conversation, newest last.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        self.view.transcript()
    }

    /// Whether the model's window is a guess from the model-name table.
    pub fn window_is_guess(&self) -> bool {
        self.view.window_is_guess()
    }
}

/// What the person is typing into, and what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// A message for a denied approval (empty: none).
    DenyMessage {
        /// The session.
        session: String,
        /// The request denied.
        request: String,
    },
    /// The answer to a question.
    Answer {
        /// The session.
        session: String,
    },
    /// A prompt.
    Prompt {
        /// The session.
        session: String,
    },
    /// A new name.
    Rename {
        /// The session.
        session: String,
    },
    /// The list's filter.
    Filter,
}

/// The new-session form's fields, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The provider.
    Provider,
    /// The model.
    Model,
    /// The first prompt.
    Prompt,
    /// The working directory.
    Cwd,
    /// A worktree of its own (`y` / `n`).
    Worktree,
    /// The approval mode.
    Approval,
}

impl Field {
    /// Every field, in tab order.
    pub const ALL: [Field; 6] = [
        Field::Provider,
        Field::Model,
        Field::Prompt,
        Field::Cwd,
        Field::Worktree,
        Field::Approval,
    ];

    /// Its label.
    pub fn label(self) -> &'static str {
        match self {
            Field::Provider => "provider",
            Field::Model => "model",
            Field::Prompt => "prompt",
            Field::Cwd => "cwd",
            Field::Worktree => "worktree (y/n)",
            Field::Approval => "approval",
        }
    }
}

/// The new-session form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Form {
    /// The values, one per [`Field::ALL`].
    pub values: [String; 6],
    /// The field being typed in (an index into [`Field::ALL`]).
    pub focus: usize,
}

/// What has the keyboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The list, with the selected session peeked.
    List,
    /// The selected session's whole transcript, live, with a prompt line.
    Attached {
        /// The prompt being typed.
        prompt: String,
    },
    /// A one-line input.
    Input {
        /// What it is for.
        purpose: Purpose,
        /// The text so far.
        text: String,
    },
    /// The new-session form.
    New(Form),
    /// The list of keys.
    Help,
}

/// A line the dashboard shows at the bottom: a notice of the supervisor's edges, or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// When, ms since the epoch.
    pub at_ms: u64,
    /// The text (sanitised when shown).
    pub text: String,
    /// An error rather than a notice.
    pub error: bool,
    /// The remote host it is about (`unreachable, reconnecting`): it is taken back when the
    /// host answers again.
    pub host: Option<String>,
}

/// The dashboard's whole state.
#[derive(Debug, Clone)]
pub struct App {
    /// Settings from `panewise.toml`.
    pub settings: Settings,
    /// Every session by id, as the daemon last said it.
    pub sessions: BTreeMap<String, SessionSummary>,
    /// The selected session's id.
    pub selected: Option<String>,
    /// The person has pressed a key or clicked: the selection is theirs. Until then it
    /// follows the session that needs them (one may start waiting after the list arrived, or
    /// arrive waiting in a remote host's list, later than this machine's).
    pub chosen: bool,
    /// The subscribed session's fold.
    pub watched: Option<Watched>,
    /// What has the keyboard.
    pub mode: Mode,
    /// The list's filter: a session is shown when its name, provider or state contains it.
    pub filter: String,
    /// Groups the person opened (or closed) against the default.
    pub toggled: Vec<Group>,
    /// Notices, newest last.
    pub notices: Vec<Notice>,
    /// Now, from the last tick.
    pub now_ms: u64,
    /// The terminal's size.
    pub size: (u16, u16),
    /// The first list arrived.
    pub loaded: bool,
    /// The connection is gone.
    pub disconnected: bool,
    /// The remote hosts whose connection is down now (reconnecting): their sessions are
    /// shown `unreachable`, a view of the connection, not a session state.
    pub unreachable: BTreeSet<String>,
    /// The title last set, so it is set again only when it changes.
    pub title: String,
    /// The scroll of the attached transcript, in lines from the bottom.
    pub scroll: u16,
    /// Requests answered from here whose session's summary still shows them waiting (the
    /// daemon's word that they moved on has not arrived): `(session, request)`. A second key
    /// for one of them says so rather than sending the answer again.
    pub answered: BTreeSet<(String, String)>,
}

impl App {
    /// A dashboard with nothing loaded yet.
    pub fn new(settings: Settings, now_ms: u64, size: (u16, u16)) -> App {
        App {
            settings,
            sessions: BTreeMap::new(),
            selected: None,
            chosen: false,
            watched: None,
            mode: Mode::List,
            filter: String::new(),
            toggled: Vec::new(),
            notices: Vec::new(),
            now_ms,
            size,
            loaded: false,
            disconnected: false,
            unreachable: BTreeSet::new(),
            title: String::new(),
            scroll: 0,
            answered: BTreeSet::new(),
        }
    }

    /// Whether `session`'s host cannot be reached now.
    pub fn is_unreachable(&self, session: &SessionSummary) -> bool {
        host_of(&session.id).is_some_and(|host| self.unreachable.contains(host))
    }

    /// Whether `group` is folded now.
    pub fn is_folded(&self, group: Group) -> bool {
        let default = group.folds() && self.sessions.len() > COLLAPSE_OVER;
        default != self.toggled.contains(&group)
    }

    /// Whether a session passes the filter.
    pub fn passes(&self, session: &SessionSummary) -> bool {
        if self.filter.is_empty() {
            return true;
        }
        let wanted = self.filter.to_lowercase();
        session.name.to_lowercase().contains(&wanted)
            || host_label(&session.id).to_lowercase().contains(&wanted)
            || session.provider.to_lowercase().contains(&wanted)
            || session.state.as_str().contains(&wanted)
    }

    /// The sessions shown, grouped, each group in the API's order (the longest waiting
    /// first, by `waiting_since_ms`).
    pub fn grouped(&self) -> Vec<(Group, Vec<&SessionSummary>)> {
        let mut shown: Vec<&SessionSummary> = self
            .sessions
            .values()
            .filter(|session| self.passes(session))
            .collect();
        shown.sort_by(|a, b| {
            (Group::of(a.state), a.state.rank(), a.since_ms(), &a.id).cmp(&(
                Group::of(b.state),
                b.state.rank(),
                b.since_ms(),
                &b.id,
            ))
        });
        Group::ALL
            .into_iter()
            .map(|group| {
                let members: Vec<&SessionSummary> = shown
                    .iter()
                    .copied()
                    .filter(|session| Group::of(session.state) == group)
                    .collect();
                (group, members)
            })
            .filter(|(_, members)| !members.is_empty())
            .collect()
    }

    /// The ids the selection moves over, in list order (folded groups' members left out).
    pub fn selectable(&self) -> Vec<String> {
        self.grouped()
            .into_iter()
            .filter(|(group, _)| !self.is_folded(*group))
            .flat_map(|(_, members)| members.into_iter().map(|session| session.id.clone()))
            .collect()
    }

    /// The selected session's summary.
    pub fn selected_session(&self) -> Option<&SessionSummary> {
        self.selected.as_ref().and_then(|id| self.sessions.get(id))
    }

    /// How many sessions are in each state.
    pub fn counts(&self) -> Vec<(AgentState, usize)> {
        AgentState::ALL
            .into_iter()
            .map(|state| {
                let count = self
                    .sessions
                    .values()
                    .filter(|session| session.state == state)
                    .count();
                (state, count)
            })
            .filter(|(_, count)| *count > 0)
            .collect()
    }

    /// The fold of `session`, when it is the watched one.
    pub fn watched_of(&self, session: &str) -> Option<&Watched> {
        self.watched
            .as_ref()
            .filter(|watched| watched.session == session)
    }
}
