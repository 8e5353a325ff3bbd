//! What flows into [`crate::update()`] ([`Event`]) and out of it ([`Effect`]): plain data, so
//! a test builds events by hand and compares the effects whole.

use panewise_api::{CreateParams, Decision, SessionSummary};

/// A key, as the dashboard reads it (the shell converts crossterm's keys into these, so the
/// core does not link a terminal library).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// A character typed with Ctrl held.
    Ctrl(char),
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Up arrow.
    Up,
    /// Down arrow.
    Down,
    /// Left arrow.
    Left,
    /// Right arrow.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
}

/// What the mouse did, where (0-based terminal cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mouse {
    /// The left button went down on a cell.
    Click {
        /// The column.
        column: u16,
        /// The row.
        row: u16,
    },
    /// The wheel turned up.
    ScrollUp,
    /// The wheel turned down.
    ScrollDown,
}

/// Everything the dashboard reacts to. Time arrives as [`Event::Tick`]; nothing in
/// [`crate::update()`] reads a clock.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A key was pressed.
    Key(Key),
    /// The mouse did something.
    Mouse(Mouse),
    /// The terminal is now this size.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// The clock, in ms since the Unix epoch (ages are computed from it).
    Tick {
        /// Now.
        now_ms: u64,
    },
    /// The whole session list (the answer to `sessions/subscribe`).
    List(Vec<SessionSummary>),
    /// One session's summary changed, or it was created (`sessions/changed`).
    Changed(Box<SessionSummary>),
    /// A session was removed (`sessions/removed`).
    Removed {
        /// Its id.
        id: String,
    },
    /// One line of a subscribed session's log (`session/line`).
    Line {
        /// The session's id.
        session: String,
        /// The line's index in the log.
        index: u64,
        /// The line.
        line: String,
    },
    /// A subscribed session ended and every line was sent (`session/ended`).
    Ended {
        /// The session's id.
        session: String,
    },
    /// A request the shell made on the dashboard's behalf failed.
    Failed {
        /// What was asked (`approve`, `create`…).
        what: String,
        /// The daemon's or the connection's message.
        message: String,
    },
    /// The connection to the daemon closed.
    ConnectionLost,
    /// A remote host's whole list, on connecting and on every reconnection
    /// (`sessions/subscribe` there); its sessions keyed `HOST:ID` ([`crate::app::host_of`]).
    /// It replaces that host's sessions, and the watched one, when it is there, is
    /// subscribed again from the line after the last one folded.
    HostList {
        /// The host.
        host: String,
        /// Its sessions.
        sessions: Vec<SessionSummary>,
    },
    /// A remote host's connection dropped, or could not be made (the shell reconnects).
    HostLost {
        /// The host.
        host: String,
        /// Why, as ssh or the client said it.
        why: String,
    },
}

/// One thing the shell must do for the dashboard. Comparable data, executed by one exhaustive
/// match in the shell (`crates/cli/src/ui_cmd.rs`).
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// `session/approve`.
    Approve {
        /// The session's id.
        session: String,
        /// The request answered.
        request: String,
        /// The answer.
        decision: Decision,
    },
    /// `session/answer`.
    Answer {
        /// The session's id.
        session: String,
        /// The answer.
        text: String,
    },
    /// `session/prompt`.
    Prompt {
        /// The session's id.
        session: String,
        /// The prompt.
        text: String,
    },
    /// `session/interrupt`.
    Interrupt {
        /// The session's id.
        session: String,
    },
    /// `session/stop`.
    Stop {
        /// The session's id.
        session: String,
    },
    /// `session/remove`.
    Remove {
        /// The session's id.
        session: String,
    },
    /// `session/rename`.
    Rename {
        /// The session's id.
        session: String,
        /// The new name.
        name: String,
    },
    /// `session/create`.
    Create(Box<CreateParams>),
    /// `session/resume`.
    Resume {
        /// The session's id.
        session: String,
    },
    /// `session/subscribe`.
    Subscribe {
        /// The session's id.
        session: String,
        /// The first line wanted.
        from_line: u64,
        /// Whether a person looks at it (attached).
        attach: bool,
    },
    /// `session/unsubscribe`.
    Unsubscribe {
        /// The session's id.
        session: String,
    },
    /// Set the terminal's title (sanitised already).
    SetTitle(String),
    /// Ring the terminal bell.
    Bell,
    /// Leave the dashboard (every agent goes on running).
    Quit,
}
