//! `panewise web --remote HOST` (and `[remote] hosts`): the page's daemon is this machine's
//! and every listed host's, over ssh as the dashboard reaches them (`remote.rs`). A remote
//! session is named `HOST:ID`, as on the command line and in the dashboard; a call about it
//! goes to its host's daemon with the prefix taken off, on a connection named after the
//! device, so the remote log records the web client's answer too.

use std::collections::HashMap;
use std::sync::Arc;

use panewise_api::{ListParams, ListResult, Method, SessionSummary};
use panewise_supervisor::Client;
use panewise_web::server::{
    subscription, Daemon, DaemonError, LocalDaemon, LogEvent, CALL_DEADLINE, LOCAL_HOST,
};
use tokio::sync::mpsc;

use crate::remote::{Host, Remotes};

/// This machine's daemon and the listed hosts' daemons, as one.
pub struct HostsDaemon {
    local: LocalDaemon,
    remotes: Remotes,
    /// One connection per (host, client name), made when first needed and dropped when it
    /// fails, so a host that came back is reached again.
    clients: tokio::sync::Mutex<HashMap<(String, String), Arc<Client>>>,
}

impl HostsDaemon {
    /// This machine's daemon (`local`) with the hosts `remotes` lists.
    pub fn new(local: LocalDaemon, remotes: Remotes) -> HostsDaemon {
        HostsDaemon {
            local,
            remotes,
            clients: tokio::sync::Mutex::default(),
        }
    }

    /// The remote host a `HOST:ID` session is on, and its id there; `None` for this machine.
    fn remote_of<'a>(&self, session: &'a str) -> Option<(String, &'a str)> {
        match self.remotes.split(session) {
            (Some(Host::Remote(host)), id) => Some((host, id)),
            _ => None,
        }
    }

    async fn client(&self, host: &str, name: &str) -> Result<Arc<Client>, DaemonError> {
        let key = (host.to_owned(), name.to_owned());
        if let Some(client) = self.clients.lock().await.get(&key) {
            return Ok(Arc::clone(client));
        }
        let client = self
            .remotes
            .connect(&Host::Remote(host.to_owned()), name)
            .await
            .map_err(|error| DaemonError::unreachable(format!("{host}: {error}")))?;
        let client = Arc::new(client);
        self.clients.lock().await.insert(key, Arc::clone(&client));
        Ok(client)
    }

    async fn remote_call(
        &self,
        host: &str,
        client: &str,
        method: Method,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        let connection = self.client(host, client).await?;
        let called =
            tokio::time::timeout(CALL_DEADLINE, connection.call_raw(method.name(), params)).await;
        match called {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error @ panewise_supervisor::SupervisorError::Api(_))) => Err(error.into()),
            Ok(Err(error)) => {
                self.forget(host, client).await;
                Err(DaemonError::unreachable(format!("{host}: {error}")))
            }
            Err(_) => {
                self.forget(host, client).await;
                Err(DaemonError::unreachable(format!(
                    "{host}: the daemon did not answer in time"
                )))
            }
        }
    }

    async fn forget(&self, host: &str, name: &str) {
        self.clients
            .lock()
            .await
            .remove(&(host.to_owned(), name.to_owned()));
    }

    async fn remote_list(&self, host: &str) -> Result<Vec<SessionSummary>, DaemonError> {
        let params = serde_json::to_value(ListParams {})
            .map_err(|error| DaemonError::unreachable(error.to_string()))?;
        let value = self
            .remote_call(host, "panewise web", Method::List, params)
            .await?;
        let list: ListResult = serde_json::from_value(value)
            .map_err(|error| DaemonError::unreachable(error.to_string()))?;
        Ok(list
            .sessions
            .into_iter()
            .map(|mut session| {
                session.id = Host::Remote(host.to_owned()).key(&session.id);
                session
            })
            .collect())
    }
}

#[async_trait::async_trait]
impl Daemon for HostsDaemon {
    async fn call(
        &self,
        client: &str,
        method: Method,
        mut params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        let session = params
            .get("session")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let remote = session.as_deref().and_then(|key| self.remote_of(key));
        match remote {
            Some((host, id)) => {
                params["session"] = serde_json::Value::String(id.to_owned());
                self.remote_call(&host, client, method, params).await
            }
            None => self.local.call(client, method, params).await,
        }
    }

    async fn list(&self) -> Result<Vec<SessionSummary>, DaemonError> {
        self.local.list().await
    }

    async fn list_hosts(&self) -> Vec<(String, Result<Vec<SessionSummary>, DaemonError>)> {
        // Every host asked at once: one slow host holds the page up by its deadline only.
        let remote = self
            .remotes
            .hosts()
            .into_iter()
            .filter_map(|host| match host {
                Host::Remote(host) => Some(host),
                Host::Local => None,
            });
        let lists = futures_join(remote.map(|host| async move {
            let listed = self.remote_list(&host).await;
            (host, listed)
        }));
        let (local, remote) = tokio::join!(self.local.list(), lists);
        std::iter::once((LOCAL_HOST.to_owned(), local))
            .chain(remote)
            .collect()
    }

    async fn subscribe(
        &self,
        client: &str,
        session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
        match self.remote_of(session) {
            Some((host, id)) => {
                let connection = self
                    .remotes
                    .connect(&Host::Remote(host.clone()), client)
                    .await
                    .map_err(|error| DaemonError::unreachable(format!("{host}: {error}")))?;
                subscription(connection, id).await
            }
            None => self.local.subscribe(client, session).await,
        }
    }
}

/// Runs the futures concurrently on this task and gives their outputs in order.
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, slot) in pinned.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *slot = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
