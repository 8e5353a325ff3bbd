//! Which approval an answer answers: the requests a session has put to a person, read from
//! its folded state, and the choice among them ([`pick_approval`]) that `session/approve`
//! makes and `panewise approve` reports.
//!
//! Pure: no I/O, no clock, no lock.

use std::collections::BTreeMap;

use panewise_pane_state::log::Actor;
use panewise_pane_state::state::RequestClosed;
use panewise_pane_state::State;
use serde::{Deserialize, Serialize};

use crate::error::ErrorCode;
use crate::rpc::RpcError;

/// An approval request that waits for a person's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingApproval {
    /// The request's id (`request` in `session/approve`).
    pub id: String,
    /// The tool asking.
    pub tool: String,
    /// What it wants to do (the command, the path), as the agent sent it: unsanitised.
    pub summary: String,
}

/// The approvals `state` has put to a person, oldest first: the pending ones the session
/// recorded it asked about (R102). One still waiting for the approval mode is not among them:
/// a person's answer must not pre-empt the mode's (a denial the mode would give).
pub fn waiting_approvals(state: &State) -> Vec<WaitingApproval> {
    state
        .pending_approvals
        .iter()
        .filter(|pending| pending.asked)
        .map(|pending| WaitingApproval {
            id: pending.id.clone(),
            tool: pending.tool.clone(),
            summary: pending.summary.clone(),
        })
        .collect()
}

/// Why an answer answers no request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAnswered {
    /// No request waits for a person.
    NoneWaits,
    /// No request was named and several wait: the answer must name one.
    SeveralWait(Vec<WaitingApproval>),
    /// The request named (or, none named, the last one) was answered already.
    AlreadyAnswered {
        /// The request.
        id: String,
        /// Allowed or denied, when the fold has recorded it.
        approved: Option<bool>,
        /// Who answered, when known.
        by: Option<Actor>,
    },
    /// The request named no longer waits: the agent withdrew it, or a stop cleared it.
    Withdrawn(String),
    /// The request named waits for the approval mode, not yet for a person.
    NotAsked(String),
    /// No request of that id is or was waiting.
    Unknown(String),
}

impl NotAnswered {
    /// Why, in a sentence about the session named `session`.
    pub fn describe(&self, session: &str) -> String {
        match self {
            NotAnswered::NoneWaits => {
                format!("session {session} waits for no approval")
            }
            NotAnswered::SeveralWait(waiting) => {
                let mut text = format!(
                    "session {session} waits for {} approvals: name the one to answer \
                     (`request`; `--request ID` on the command line):",
                    waiting.len()
                );
                for request in waiting {
                    text.push_str(&format!(
                        "\n  {}  {} {}",
                        shown(&request.id),
                        shown(&request.tool),
                        shown(&request.summary)
                    ));
                }
                text
            }
            NotAnswered::AlreadyAnswered { id, approved, by } => {
                let what = match approved {
                    Some(true) => " (allowed)",
                    Some(false) => " (denied)",
                    None => "",
                };
                let who = by
                    .as_ref()
                    .map(|by| format!(" by {}", by.describe()))
                    .unwrap_or_default();
                format!("session {session}'s request {id} was already answered{what}{who}")
            }
            NotAnswered::Withdrawn(id) => format!(
                "session {session}'s request {id} no longer waits: the agent withdrew it, or \
                 the turn was stopped"
            ),
            NotAnswered::NotAsked(id) => format!(
                "session {session}'s request {id} waits for the approval mode, not yet for a \
                 person"
            ),
            NotAnswered::Unknown(id) => {
                format!("session {session} has no approval request {id}")
            }
        }
    }

    /// The API's error for it, about the session named `session`.
    pub fn to_rpc(&self, session: &str) -> RpcError {
        let code = match self {
            NotAnswered::SeveralWait(_) => ErrorCode::SeveralWaiting,
            NotAnswered::NoneWaits
            | NotAnswered::AlreadyAnswered { .. }
            | NotAnswered::Withdrawn(_)
            | NotAnswered::NotAsked(_)
            | NotAnswered::Unknown(_) => ErrorCode::NotWaiting,
        };
        RpcError::new(code, self.describe(session))
    }
}

/// An agent's `text` on one line of the listing: every control character escaped, so no
/// summary can break the list or act on a terminal.
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The request an answer naming `request` (none: "the one waiting") answers in `state`, or
/// why none. `forwarded` holds the requests an answer was already sent for that the fold does
/// not show closed yet, with who sent it: they count as answered, so of two answers arriving
/// before the session records the first, only the first goes through (R101).
pub fn pick_approval(
    state: &State,
    forwarded: &BTreeMap<String, Actor>,
    request: Option<&str>,
) -> Result<WaitingApproval, NotAnswered> {
    let mut waiting: Vec<WaitingApproval> = waiting_approvals(state)
        .into_iter()
        .filter(|waiting| !forwarded.contains_key(&waiting.id))
        .collect();
    match request {
        Some(id) => {
            if let Some(index) = waiting.iter().position(|waiting| waiting.id == id) {
                return Ok(waiting.swap_remove(index));
            }
            Err(why_not(state, forwarded, id))
        }
        None if waiting.len() > 1 => Err(NotAnswered::SeveralWait(waiting)),
        None => match waiting.pop() {
            Some(only) => Ok(only),
            // Nothing waits: say what became of the newest request, when one was answered.
            None => Err(forwarded
                .keys()
                .next()
                .map(String::as_str)
                .or_else(|| {
                    state
                        .closed_requests
                        .back()
                        .map(|closed| closed.id.as_str())
                })
                .map(|id| why_not(state, forwarded, id))
                .filter(|why| matches!(why, NotAnswered::AlreadyAnswered { .. }))
                .unwrap_or(NotAnswered::NoneWaits)),
        },
    }
}

/// Why the request `id`, not among those waiting, cannot be answered.
fn why_not(state: &State, forwarded: &BTreeMap<String, Actor>, id: &str) -> NotAnswered {
    if let Some(by) = forwarded.get(id) {
        return NotAnswered::AlreadyAnswered {
            id: id.to_owned(),
            approved: None,
            by: Some(by.clone()),
        };
    }
    if state
        .pending_approvals
        .iter()
        .any(|pending| pending.id == id)
    {
        return NotAnswered::NotAsked(id.to_owned());
    }
    match state
        .closed_requests
        .iter()
        .rev()
        .find(|closed| closed.id == id)
        .map(|closed| &closed.closed)
    {
        Some(RequestClosed::Answered { approved, by }) => NotAnswered::AlreadyAnswered {
            id: id.to_owned(),
            approved: Some(*approved),
            by: by.clone(),
        },
        Some(RequestClosed::Withdrawn) => NotAnswered::Withdrawn(id.to_owned()),
        None => NotAnswered::Unknown(id.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panewise_pane_state::Msg;

    /// What a session recorded, in order: requested (`r`), asked (`a`), answered (`y`/`n`, by
    /// the client "one"), withdrawn (`w`).
    fn state(recorded: &[(&str, char)]) -> State {
        let mut state = State::new("mock");
        for (at, (id, what)) in (1u64..).zip(recorded) {
            let id = (*id).to_owned();
            let msg = match what {
                'r' => Msg::ApprovalRequested {
                    tool: "shell".to_owned(),
                    summary: format!("echo {id}"),
                    id,
                    turn: None,
                },
                'a' => Msg::ApprovalAsked { id },
                'y' | 'n' => Msg::ApprovalAnswered {
                    id: Some(id),
                    approved: *what == 'y',
                    for_session: false,
                    by: Some(one()),
                    reason: None,
                },
                _ => Msg::ApprovalWithdrawn { id },
            };
            state = panewise_pane_state::step(state, at, msg).0;
        }
        state
    }

    fn one() -> Actor {
        Actor::Api {
            client: Some("one".to_owned()),
        }
    }

    fn waiting(id: &str) -> WaitingApproval {
        WaitingApproval {
            id: id.to_owned(),
            tool: "shell".to_owned(),
            summary: format!("echo {id}"),
        }
    }

    type Row = (
        &'static str,
        &'static [(&'static str, char)],
        &'static [&'static str],
        Option<&'static str>,
        Result<WaitingApproval, NotAnswered>,
    );

    /// Each rule of the choice: (rule, what the session recorded, ids forwarded but not yet
    /// recorded, the request named, the outcome).
    #[test]
    fn an_answer_goes_to_the_one_request_waiting_or_names_one_of_several() {
        let answered_by_one = |id: &str, approved| NotAnswered::AlreadyAnswered {
            id: id.to_owned(),
            approved: Some(approved),
            by: Some(one()),
        };
        let table: Vec<Row> = vec![
            (
                "nothing recorded: none waits",
                &[],
                &[],
                None,
                Err(NotAnswered::NoneWaits),
            ),
            (
                "the one asked is answered",
                &[("r1", 'r'), ("r1", 'a')],
                &[],
                None,
                Ok(waiting("r1")),
            ),
            (
                "the one asked, named, is answered",
                &[("r1", 'r'), ("r1", 'a')],
                &[],
                Some("r1"),
                Ok(waiting("r1")),
            ),
            (
                "a request the mode has not decided waits for no person",
                &[("r1", 'r')],
                &[],
                None,
                Err(NotAnswered::NoneWaits),
            ),
            (
                "named, it is not answered ahead of the mode",
                &[("r1", 'r')],
                &[],
                Some("r1"),
                Err(NotAnswered::NotAsked("r1".to_owned())),
            ),
            (
                "two asked, none named: both listed, oldest first",
                &[("r1", 'r'), ("r2", 'r'), ("r1", 'a'), ("r2", 'a')],
                &[],
                None,
                Err(NotAnswered::SeveralWait(vec![waiting("r1"), waiting("r2")])),
            ),
            (
                "two asked, one named: that one",
                &[("r1", 'r'), ("r2", 'r'), ("r1", 'a'), ("r2", 'a')],
                &[],
                Some("r2"),
                Ok(waiting("r2")),
            ),
            (
                "two asked, one forwarded: the other is the one waiting",
                &[("r1", 'r'), ("r2", 'r'), ("r1", 'a'), ("r2", 'a')],
                &["r1"],
                None,
                Ok(waiting("r2")),
            ),
            (
                "forwarded, not yet recorded: answered already, by who sent it",
                &[("r1", 'r'), ("r1", 'a')],
                &["r1"],
                None,
                Err(NotAnswered::AlreadyAnswered {
                    id: "r1".to_owned(),
                    approved: None,
                    by: Some(one()),
                }),
            ),
            (
                "forwarded and named: the same",
                &[("r1", 'r'), ("r1", 'a')],
                &["r1"],
                Some("r1"),
                Err(NotAnswered::AlreadyAnswered {
                    id: "r1".to_owned(),
                    approved: None,
                    by: Some(one()),
                }),
            ),
            (
                "recorded answered, none named: the last one was answered, by whom, how",
                &[("r1", 'r'), ("r1", 'a'), ("r1", 'y')],
                &[],
                None,
                Err(answered_by_one("r1", true)),
            ),
            (
                "recorded denied, named: the same",
                &[("r1", 'r'), ("r1", 'a'), ("r1", 'n')],
                &[],
                Some("r1"),
                Err(answered_by_one("r1", false)),
            ),
            (
                "withdrawn, named: withdrawn",
                &[("r1", 'r'), ("r1", 'a'), ("r1", 'w')],
                &[],
                Some("r1"),
                Err(NotAnswered::Withdrawn("r1".to_owned())),
            ),
            (
                "withdrawn, none named: none waits",
                &[("r1", 'r'), ("r1", 'a'), ("r1", 'w')],
                &[],
                None,
                Err(NotAnswered::NoneWaits),
            ),
            (
                "an id never seen: unknown",
                &[("r1", 'r'), ("r1", 'a')],
                &[],
                Some("r9"),
                Err(NotAnswered::Unknown("r9".to_owned())),
            ),
        ];
        for (rule, recorded, forwarded, request, expected) in table {
            let forwarded: BTreeMap<String, Actor> = forwarded
                .iter()
                .map(|id| ((*id).to_owned(), one()))
                .collect();
            assert_eq!(
                pick_approval(&state(recorded), &forwarded, request),
                expected,
                "{rule}"
            );
        }
    }

    /// What each refusal says, and the code it carries.
    #[test]
    fn each_refusal_says_why_with_its_code() {
        let table: [(&str, NotAnswered, ErrorCode, &str); 6] = [
            (
                "none waits",
                NotAnswered::NoneWaits,
                ErrorCode::NotWaiting,
                "session s waits for no approval",
            ),
            (
                "several: each listed, and how to name one",
                NotAnswered::SeveralWait(vec![waiting("r1"), waiting("r2")]),
                ErrorCode::SeveralWaiting,
                "session s waits for 2 approvals: name the one to answer (`request`; \
                 `--request ID` on the command line):\n  r1  shell echo r1\n  r2  shell echo r2",
            ),
            (
                "an agent's control characters are escaped: no summary breaks the list",
                NotAnswered::SeveralWait(vec![
                    WaitingApproval {
                        id: "r1".to_owned(),
                        tool: "shell".to_owned(),
                        summary: "echo\n  r9  shell \u{1b}[2J".to_owned(),
                    },
                    waiting("r2"),
                ]),
                ErrorCode::SeveralWaiting,
                "session s waits for 2 approvals: name the one to answer (`request`; \
                 `--request ID` on the command line):\n  r1  shell echo\\n  r9  shell \\u{1b}[2J\n  \
                 r2  shell echo r2",
            ),
            (
                "answered: how and by whom",
                NotAnswered::AlreadyAnswered {
                    id: "r1".to_owned(),
                    approved: Some(false),
                    by: Some(one()),
                },
                ErrorCode::NotWaiting,
                "session s's request r1 was already answered (denied) by one",
            ),
            (
                "withdrawn",
                NotAnswered::Withdrawn("r1".to_owned()),
                ErrorCode::NotWaiting,
                "session s's request r1 no longer waits: the agent withdrew it, or the turn \
                 was stopped",
            ),
            (
                "unknown",
                NotAnswered::Unknown("r9".to_owned()),
                ErrorCode::NotWaiting,
                "session s has no approval request r9",
            ),
        ];
        for (rule, refusal, code, text) in table {
            assert_eq!(refusal.to_rpc("s"), RpcError::new(code, text), "{rule}");
        }
    }
}
