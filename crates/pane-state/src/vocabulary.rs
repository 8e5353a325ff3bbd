//! The words the messages, the commands, the state and the reducer share, in a leaf none of
//! them reaches back from: who acted ([`Actor`]), what a deadline is for ([`DeadlineKind`]),
//! what a confirmation confirms ([`ConfirmAction`]), and the watchdog's thresholds. Each is
//! re-exported where it was first named (`log::Actor`, `cmd::DeadlineKind`,
//! `reducer::STUCK_THRESHOLD_MS`, …).

use serde::{Deserialize, Serialize};

/// Who answered an approval or a question, or asked for an interrupt: written as `"by"` with
/// the variant's own fields beside it (`{"by":"policy","mode":"auto"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Actor {
    /// The approval mode answered as the person configured it.
    Policy {
        /// The mode (`read-only`, `ask`, `auto`, `full-access`).
        mode: String,
    },
    /// The person, at a terminal (a line typed, Ctrl-C).
    Person,
    /// A client of the session's API (a supervisor), by the name it gave.
    Api {
        /// The client's name, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
    },
    /// panewise itself, with nobody asked: the person's input ended, the session is
    /// shutting down.
    Session,
    /// The agent, on its own (a CLI that interrupted its own turn).
    Agent,
}

impl Actor {
    /// Who, in words for a sentence such as "denied by …": the API client by the name it
    /// gave (`panewise approve`), the person, the approval mode.
    pub fn describe(&self) -> String {
        match self {
            Actor::Policy { mode } => format!("approval mode {mode}"),
            Actor::Person => "the person at the terminal".to_owned(),
            Actor::Api {
                client: Some(client),
            } => client.clone(),
            Actor::Api { client: None } => "an API client".to_owned(),
            Actor::Session => "panewise, as the session ended".to_owned(),
            Actor::Agent => "the agent".to_owned(),
        }
    }
}

/// A deadline the reducer arms (R24, R27).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineKind {
    /// A submitted turn must show activity in time, or it ends as errored (R35).
    Submit,
    /// An interrupt must take effect in time, or the turn ends as interrupted (R35).
    Interrupt,
}

/// A destructive action the user confirms in a modal before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfirmAction {
    /// Clear the conversation.
    Clear,
    /// Quit while a turn is running.
    Quit,
}

/// Idle time after which the watchdog reports a stuck stream (R24).
pub const STUCK_THRESHOLD_MS: u64 = 45_000;

/// Deadline for a submitted turn to show activity (R24).
pub const SUBMIT_TIMEOUT_MS: u64 = 30_000;
