//! What the page shows, folded from what the daemon says: the inbox (every request that waits
//! for a person, oldest first), whether the daemon is reachable or stale, and a transcript's
//! lines with the log index they came from (the SSE event id a reconnect resumes after).

use panewise_api::{Folded, SessionSummary, SessionView, WaitingFor};
use panewise_pane_state::log::TranscriptEntry;
use serde::Serialize;

/// How long the daemon may go unheard before the page says so and disables every action.
pub const STALE_AFTER_MS: u64 = 30_000;

/// One request waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InboxItem {
    /// The daemon's host (`local` for this machine's).
    pub host: String,
    /// The session's id.
    pub session: String,
    /// The session's name.
    pub name: String,
    /// The agent (the session's provider: `claude-code`, `codex`, `mock`…).
    pub agent: String,
    /// What waits: an approval or a question.
    pub waiting_for: WaitingFor,
    /// Since when, ms since the epoch.
    pub since_ms: Option<u64>,
}

/// Every waiting request of `sessions` on `host`, oldest first (a request of unknown age
/// last), then by session id so the order is total.
pub fn inbox<'a>(
    hosts: impl IntoIterator<Item = (&'a str, &'a [SessionSummary])>,
) -> Vec<InboxItem> {
    let mut items: Vec<InboxItem> = hosts
        .into_iter()
        .flat_map(|(host, sessions)| {
            sessions.iter().filter_map(move |session| {
                Some(InboxItem {
                    host: host.to_owned(),
                    session: session.id.clone(),
                    name: session.name.clone(),
                    agent: session.provider.clone(),
                    waiting_for: session.waiting_for.clone()?,
                    since_ms: session.waiting_since_ms,
                })
            })
        })
        .collect();
    items.sort_by(|a, b| {
        (a.since_ms.is_none(), a.since_ms, &a.host, &a.session).cmp(&(
            b.since_ms.is_none(),
            b.since_ms,
            &b.host,
            &b.session,
        ))
    });
    items
}

/// How the daemon looks from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Heard from within [`STALE_AFTER_MS`].
    Live,
    /// Connected once, unheard for longer: actions disabled.
    Stale,
    /// The last attempt failed: actions disabled.
    Unreachable,
}

/// Whether the daemon is live: `last_ok_ms` is when it last answered, `failing` whether the
/// last attempt failed.
pub fn reach(last_ok_ms: Option<u64>, failing: bool, now_ms: u64) -> Reach {
    match last_ok_ms {
        _ if failing => Reach::Unreachable,
        None => Reach::Unreachable,
        Some(at) if now_ms.saturating_sub(at) > STALE_AFTER_MS => Reach::Stale,
        Some(_) => Reach::Live,
    }
}

/// One transcript entry for the page, worded as `panewise attach` prints it: a label and the
/// text with its controls escaped (shown with `textContent` only; it may span lines).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptLine {
    /// `prompt`, `assistant`, `tool`, `output`, `asks`, `approval`…
    pub label: String,
    /// The text.
    pub text: String,
}

/// What one log line added to the transcript: one SSE event, its id the log line's index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptEvent {
    /// The log line's index (the SSE id a reconnect resumes after).
    pub index: u64,
    /// The entry as the page shows it (one labelled block, as `attach` prints it).
    pub lines: Vec<TranscriptLine>,
    /// The entry itself, as the log records it (what `panewise attach` prints, worded).
    pub entry: TranscriptEntry,
}

/// A session's log folded into transcript lines. Every line is folded from the header on (the
/// state needs them all), but only the entries of lines past `after` are given out: a page
/// reconnecting with `Last-Event-ID: N` gets each entry of index > N once, none twice.
#[derive(Debug, Default)]
pub struct TranscriptFold {
    view: SessionView,
    after: Option<u64>,
}

impl TranscriptFold {
    /// A fold that gives out the entries of lines after `after` (all when `None`).
    pub fn new(after: Option<u64>) -> TranscriptFold {
        TranscriptFold {
            view: SessionView::new(),
            after,
        }
    }

    /// Folds log line `index`; the transcript event it adds, if shown.
    pub fn fold(&mut self, index: u64, line: &str) -> Option<TranscriptEvent> {
        let Folded::Transcript(entry) = self.view.fold_line(index, line) else {
            return None;
        };
        if self.after.is_some_and(|after| index <= after) {
            return None;
        }
        // attach's wording, its controls escaped as attach escapes them: the page's lines are
        // attach's lines (`panewise_tui::wording::labelled` of each prints them exactly).
        let (label, text) = panewise_tui::wording::entry_line(&entry);
        let lines = vec![TranscriptLine {
            label: label.to_owned(),
            text: panewise_tui::text::escape_controls(&text, ""),
        }];
        Some(TranscriptEvent {
            index,
            lines,
            entry,
        })
    }
}

/// The `Last-Event-ID` a page sent, read: the last index it has. Anything else starts over.
pub fn last_event_id(header: Option<&str>) -> Option<u64> {
    header.and_then(|text| text.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, since: Option<u64>, waits: bool) -> SessionSummary {
        let json = serde_json::json!({
            "v": 1, "id": id, "name": id, "provider": "mock", "model": null, "cwd": "/",
            "state": if waits { "needs_input" } else { "idle" },
            "waiting_for": if waits {
                serde_json::json!({"kind": "approval", "id": format!("r-{id}"), "tool": "shell", "argument": "echo <b>"})
            } else { serde_json::Value::Null },
            "tool": null, "tool_arg": null, "context_pct": null, "context_window_source": null,
            "tokens": null, "cost_usd": null, "cost_source": null, "waiting_since_ms": since,
            "failure_kind": null, "log": "x", "approval": "ask", "started_at_ms": 0, "turns": 0,
            "attached": 0, "worktree": null, "failure": null
        });
        serde_json::from_value(json).unwrap_or_else(|error| unreachable!("{error}"))
    }

    #[test]
    fn the_inbox_is_every_waiting_request_oldest_first_across_hosts() {
        let local = [
            summary("a", Some(30), true),
            summary("b", None, false),
            summary("c", Some(10), true),
        ];
        let devbox = [summary("d", Some(20), true), summary("e", None, true)];
        let items = inbox([("local", &local[..]), ("devbox", &devbox[..])]);
        let order: Vec<(&str, &str)> = items
            .iter()
            .map(|item| (item.host.as_str(), item.session.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("local", "c"),
                ("devbox", "d"),
                ("local", "a"),
                ("devbox", "e")
            ]
        );
    }

    #[test]
    fn reach_is_said_within_thirty_seconds() {
        let table = [
            (None, false, 0, Reach::Unreachable),
            (Some(0), true, 1, Reach::Unreachable),
            (Some(0), false, STALE_AFTER_MS, Reach::Live),
            (Some(0), false, STALE_AFTER_MS + 1, Reach::Stale),
        ];
        for (last, failing, now, want) in table {
            assert_eq!(reach(last, failing, now), want, "{last:?} {failing} {now}");
        }
    }

    #[test]
    fn last_event_ids() {
        for (header, want) in [
            (None, None),
            (Some("12"), Some(12)),
            (Some(" 3 "), Some(3)),
            (Some("x"), None),
            (Some("-1"), None),
        ] {
            assert_eq!(last_event_id(header), want, "{header:?}");
        }
    }
}
