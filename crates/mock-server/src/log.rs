//! The request log: every request with its secrets removed and the usage it was answered with,
//! in memory and optionally appended to a JSONL file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Scenario;
use crate::error::{MockError, Result};
use crate::usage::Usage;

/// Headers never written to the log (compared case-insensitively): the API keys the CLIs send.
pub const SECRET_HEADERS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "x-goog-api-key",
    "cookie",
];

/// The query parameter that carries a Gemini API key; removed from the logged query.
pub const SECRET_QUERY_PARAMETER: &str = "key";

/// One request as the server saw and answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// 1 for the first request the server logged.
    pub seq: u64,
    /// Milliseconds since the epoch when the request arrived.
    pub unix_ms: u64,
    /// `POST`, `CONNECT`, …
    pub method: String,
    /// The path (the whole target for proxy requests).
    pub path: String,
    /// The raw query string without the `key` parameter; empty when there was none.
    pub query: String,
    /// The headers, names lower-cased, repeated ones joined with `, `, secrets removed.
    pub headers: BTreeMap<String, String>,
    /// The body: JSON when it parsed, else a string, `null` when empty.
    pub body: Value,
    /// The scenario that answered it.
    pub scenario: Scenario,
    /// The status sent.
    pub status: u16,
    /// What was answered: `tool-call`, `text`, `routing`, `error`, `mid-stream-error`,
    /// `stream-cut`, `count-tokens`, `refused`, `not-found`, `bad-request`.
    pub answer: String,
    /// The usage reported, in neutral terms; `None` for answers without usage.
    pub usage: Option<Usage>,
    /// The usage object exactly as the API's answer carried it.
    pub reported_usage: Option<Value>,
}

/// The log shared by a server's connections.
#[derive(Debug, Default)]
pub struct RequestLog {
    entries: Mutex<Vec<LoggedRequest>>,
    file: Option<Mutex<File>>,
}

impl RequestLog {
    /// A log kept in memory and, when `path` is given, appended to that file.
    pub fn open(path: Option<&Path>) -> Result<RequestLog> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| MockError::LogFile {
                        path: path.to_owned(),
                        source,
                    })?,
            )),
            None => None,
        };
        Ok(RequestLog {
            entries: Mutex::new(Vec::new()),
            file,
        })
    }

    /// Numbers and keeps `entry`, and appends it to the file as one line.
    pub fn push(&self, mut entry: LoggedRequest) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entry.seq = u64::try_from(entries.len()).map_or(u64::MAX, |n| n.saturating_add(1));
        if let Some(file) = &self.file {
            if let Ok(mut line) = serde_json::to_vec(&entry) {
                line.push(b'\n');
                let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                // One write per line, so a reader never sees half of a line from this server;
                // a failing disk must not take the mock down, so the failure is only reported.
                if let Err(error) = file.write_all(&line).and_then(|()| file.flush()) {
                    eprintln!("panewise mock-server: cannot append to the request log: {error}");
                }
            }
        }
        entries.push(entry);
    }

    /// A copy of every entry so far.
    pub fn entries(&self) -> Vec<LoggedRequest> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Whether a header name is one of [`SECRET_HEADERS`].
pub fn is_secret_header(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|s| s.eq_ignore_ascii_case(name))
}

/// `query` without the [`SECRET_QUERY_PARAMETER`].
pub fn redact_query(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| {
            let name = pair.split_once('=').map_or(*pair, |(name, _)| name);
            !pair.is_empty() && name != SECRET_QUERY_PARAMETER
        })
        .collect::<Vec<_>>()
        .join("&")
}
