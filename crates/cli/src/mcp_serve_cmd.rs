//! `panewise mcp serve`: the daemon's verbs as MCP tools on stdin and stdout
//! (`panewise_mcp::serve`), over this user's daemon, started as every command starts it.
//!
//! This module is the [`Daemon`] the server calls: one connection for the calls, a fresh one
//! per `wait` (the daemon's notifications belong to the connection that subscribed), and the
//! transcript read from the session's log as `panewise replay` prints it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use panewise_api::{ListParams, ListResult, Method, SessionSummary, SessionView};
use panewise_mcp::serve::{wait_over, Daemon, DaemonFuture, ServeOptions, Until, APPROVAL_MODES};
use panewise_supervisor::Client;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::remote::START_DEADLINE;

/// `panewise mcp serve [--approval MODE]`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The freest approval mode an agent started through this server may run in (a `start`
    /// asking for more is refused; one asking for nothing gets this). Approvals it asks for
    /// are the person's: no tool here answers them.
    #[arg(long, default_value = "ask", value_parser = APPROVAL_MODES)]
    approval: String,
}

/// The most bytes of a session log read for its transcript.
const LOG_READ_CAP: u64 = 64 * 1024 * 1024;

/// Serves until the MCP client closes stdin.
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let program = std::env::current_exe().context("cannot find the panewise binary")?;
    let served = runtime.block_on(async {
        let client = Client::connect_or_start(&program, "panewise mcp serve", START_DEADLINE)
            .await
            .context("cannot reach the daemon")?;
        let daemon = DaemonLink {
            client: Arc::new(client),
            program,
        };
        panewise_mcp::serve::serve_stdio(daemon, ServeOptions { cap: args.approval })
            .await
            .map_err(anyhow::Error::msg)
    });
    // The runtime's stdin reader may still wait for bytes that never come.
    runtime.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}

struct DaemonLink {
    client: Arc<Client>,
    program: PathBuf,
}

impl DaemonLink {
    async fn summary(client: &Client, key: &str) -> Result<SessionSummary, String> {
        let list: ListResult = client
            .call(Method::List, ListParams {})
            .await
            .map_err(|error| error.to_string())?;
        let id = resolve(&list, key)?;
        list.sessions
            .into_iter()
            .find(|session| session.id == id)
            .ok_or_else(|| "the session is gone from the list".to_owned())
    }
}

fn resolve(list: &ListResult, key: &str) -> Result<String, String> {
    panewise_api::resolve_session(
        list.sessions
            .iter()
            .map(|session| (session.id.as_str(), session.name.as_str())),
        key,
    )
    .map_err(|error| error.message)
}

impl Daemon for DaemonLink {
    fn call(&self, method: Method, mut params: Value) -> DaemonFuture<'_, Value> {
        Box::pin(async move {
            if method == Method::Create {
                // The session is made from where `mcp serve` runs, with its keys and
                // endpoints, as `panewise new` makes it.
                let cwd = params["cwd"].as_str().map(PathBuf::from);
                let context = panewise_host::launch::client_context(cwd.as_deref())
                    .map_err(|error| format!("cannot read the current directory: {error}"))?;
                if let Some(fields) = params.as_object_mut() {
                    let context = serde_json::to_value(context).map_err(|e| e.to_string())?;
                    fields.insert("client".to_owned(), context);
                }
            }
            self.client
                .call_raw(method.name(), params)
                .await
                .map_err(|error| error.to_string())
        })
    }

    fn wait(
        &self,
        session: String,
        until: Until,
        min_turns: u64,
        timeout: Duration,
    ) -> DaemonFuture<'_, Option<SessionSummary>> {
        Box::pin(async move {
            let client =
                Client::connect_or_start(&self.program, "panewise mcp serve", START_DEADLINE)
                    .await
                    .map_err(|error| error.to_string())?;
            let follow = async {
                let list: ListResult = client
                    .call(Method::SubscribeList, ListParams {})
                    .await
                    .map_err(|error| error.to_string())?;
                let id = resolve(&list, &session)?;
                let mut current = list.sessions.into_iter().find(|s| s.id == id);
                loop {
                    if let Some(summary) = current.take() {
                        if wait_over(until, summary.state, summary.turns, min_turns) {
                            return Ok(summary);
                        }
                        current = Some(summary);
                    }
                    let Some(notice) = client.next_notification().await else {
                        return Err("the daemon closed the connection".to_owned());
                    };
                    if notice.method == panewise_api::ChangedNotice::METHOD {
                        let changed: panewise_api::ChangedNotice =
                            serde_json::from_value(notice.params).map_err(|e| e.to_string())?;
                        if changed.session.id == id {
                            current = Some(changed.session);
                        }
                    } else if notice.method == panewise_api::RemovedNotice::METHOD {
                        let removed: panewise_api::RemovedNotice =
                            serde_json::from_value(notice.params).map_err(|e| e.to_string())?;
                        if removed.id == id {
                            return Err("the session was removed".to_owned());
                        }
                    }
                }
            };
            match tokio::time::timeout(timeout, follow).await {
                Ok(Ok(summary)) => Ok(Some(summary)),
                Ok(Err(why)) => Err(why),
                Err(_) => Ok(None),
            }
        })
    }

    fn transcript(&self, session: String, max_chars: usize) -> DaemonFuture<'_, String> {
        Box::pin(async move {
            let summary = Self::summary(&self.client, &session).await?;
            let file = tokio::fs::File::open(&summary.log).await.map_err(|error| {
                format!("cannot read the session's log {}: {error}", summary.log)
            })?;
            let mut bytes = Vec::new();
            file.take(LOG_READ_CAP)
                .read_to_end(&mut bytes)
                .await
                .map_err(|error| {
                    format!("cannot read the session's log {}: {error}", summary.log)
                })?;
            let text = String::from_utf8_lossy(&bytes);
            Ok(last_chars(&transcript_text(&text), max_chars))
        })
    }
}

/// The conversation a log's text records, one entry a line, as `panewise replay` words it.
fn transcript_text(log: &str) -> String {
    let mut view = SessionView::new();
    let mut out = String::new();
    for (index, line) in log.lines().enumerate() {
        let index = u64::try_from(index).unwrap_or(u64::MAX);
        if let panewise_api::view::Folded::Transcript(entry) = view.fold_line(index, line) {
            out.push_str(&crate::replay::conversation::entry_text(&entry));
            out.push('\n');
        }
    }
    out
}

/// The last `max` characters of `text`.
fn last_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}
