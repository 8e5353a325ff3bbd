//! The dashboard's hosts: this machine's daemon, and one connection per remote host over
//! ssh (`remote.rs`), kept up with backoff. A remote daemon's sessions reach the dashboard's
//! core keyed `HOST:ID` (`panewise_tui::app::host_of`), every id and session field of its
//! notifications prefixed; an effect on a `HOST:ID` session goes to that host's connection
//! with the prefix taken off. A host that drops is `Event::HostLost`; each reconnection
//! subscribes to its list again and hands it over as `Event::HostList`, on which the core
//! subscribes the watched session again from its next line.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use panewise_api::{ListParams, ListResult, Method, SessionSummary};
use panewise_supervisor::Client;
use panewise_tui::{Effect, Event};
use tokio::sync::mpsc;

use crate::remote::{Host, Remotes};

/// The first pause before reconnecting to a host that dropped.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// The longest pause between two attempts.
const LONGEST_PAUSE: Duration = Duration::from_secs(10);

/// Every host's client as it is now: this machine's, and each remote host's while it is up.
#[derive(Clone)]
pub struct Connections {
    local: Arc<Client>,
    remote: Arc<Mutex<HashMap<String, Arc<Client>>>>,
    hosts: Vec<String>,
}

/// Where an effect goes.
pub enum Route {
    /// To this client, as this effect.
    To(Arc<Client>, Effect),
    /// Its host is down now.
    Down(String, Effect),
}

impl Connections {
    /// This machine's client, with the remote hosts `hosts` not connected yet.
    pub fn new(local: Arc<Client>, hosts: Vec<String>) -> Connections {
        Connections {
            local,
            remote: Arc::default(),
            hosts,
        }
    }

    fn set(&self, host: &str, client: Option<Arc<Client>>) {
        let mut remote = self.remote.lock().unwrap_or_else(PoisonError::into_inner);
        match client {
            Some(client) => remote.insert(host.to_owned(), client),
            None => remote.remove(host),
        };
    }

    /// The client `effect` goes to, and the effect as that daemon names its session.
    pub fn route(&self, mut effect: Effect) -> Route {
        let Some(key) = session_of(&mut effect) else {
            // A new session starts on this machine.
            return Route::To(Arc::clone(&self.local), effect);
        };
        let host = key
            .split_once(':')
            .map(|(host, id)| (host.to_owned(), id.to_owned()))
            .filter(|(host, _)| self.hosts.contains(host));
        let Some((host, id)) = host else {
            return Route::To(Arc::clone(&self.local), effect);
        };
        *key = id;
        let client = self
            .remote
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&host)
            .cloned();
        match client {
            Some(client) => Route::To(client, effect),
            None => Route::Down(host, effect),
        }
    }
}

/// The session an effect acts on.
fn session_of(effect: &mut Effect) -> Option<&mut String> {
    match effect {
        Effect::Approve { session, .. }
        | Effect::Answer { session, .. }
        | Effect::Prompt { session, .. }
        | Effect::Interrupt { session }
        | Effect::Stop { session }
        | Effect::Remove { session }
        | Effect::Rename { session, .. }
        | Effect::Resume { session }
        | Effect::Subscribe { session, .. }
        | Effect::Unsubscribe { session } => Some(session),
        Effect::Create(_) | Effect::SetTitle(_) | Effect::Bell | Effect::Quit => None,
    }
}

/// `event` of `host`'s daemon with its sessions keyed `HOST:ID`.
fn keyed(host: &str, event: Event) -> Event {
    let key = |id: String| Host::Remote(host.to_owned()).key(&id);
    match event {
        Event::Line {
            session,
            index,
            line,
        } => Event::Line {
            session: key(session),
            index,
            line,
        },
        Event::Ended { session } => Event::Ended {
            session: key(session),
        },
        Event::Changed(mut summary) => {
            summary.id = key(std::mem::take(&mut summary.id));
            Event::Changed(summary)
        }
        Event::Removed { id } => Event::Removed { id: key(id) },
        other => other,
    }
}

fn keyed_list(host: &str, sessions: Vec<SessionSummary>) -> Vec<SessionSummary> {
    sessions
        .into_iter()
        .map(|mut session| {
            session.id = Host::Remote(host.to_owned()).key(&session.id);
            session
        })
        .collect()
}

/// Keeps `host` connected until the dashboard goes: its list and notifications as events
/// (waiting while the dashboard's queue is full: its client's queue fills meanwhile),
/// its loss as `HostLost`, and a new attempt after a pause that doubles up to
/// [`LONGEST_PAUSE`] (back to [`FIRST_PAUSE`] once connected).
pub async fn keep_connected(
    remotes: Remotes,
    host: String,
    connections: Connections,
    events: mpsc::Sender<Event>,
) {
    let mut pause = FIRST_PAUSE;
    loop {
        let why = match connect(&remotes, &host).await {
            Ok((client, list)) => {
                connections.set(&host, Some(Arc::clone(&client)));
                pause = FIRST_PAUSE;
                let listed = Event::HostList {
                    host: host.clone(),
                    sessions: keyed_list(&host, list.sessions),
                };
                if events.send(listed).await.is_err() {
                    return;
                }
                while let Some(notice) = client.next_notification().await {
                    match panewise_tui::notice::event_of(notice) {
                        Ok(Some(event)) => {
                            if events.send(keyed(&host, event)).await.is_err() {
                                return;
                            }
                        }
                        Ok(None) => {}
                        Err(error) => tracing::warn!(%host, %error),
                    }
                }
                connections.set(&host, None);
                "the connection closed".to_owned()
            }
            Err(error) => error,
        };
        if events
            .send(Event::HostLost {
                host: host.clone(),
                why,
            })
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

async fn connect(remotes: &Remotes, host: &str) -> Result<(Arc<Client>, ListResult), String> {
    let client = remotes
        .connect(&Host::Remote(host.to_owned()), "panewise ui")
        .await
        .map_err(|error| error.to_string())?;
    let list: ListResult = client
        .call(Method::SubscribeList, ListParams {})
        .await
        .map_err(|error| error.to_string())?;
    Ok((Arc::new(client), list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_hosts_ids_are_keyed_and_unkeyed_on_the_way_back() {
        let event = keyed(
            "box",
            Event::Line {
                session: "0190-a".to_owned(),
                index: 3,
                line: "{}".to_owned(),
            },
        );
        assert_eq!(
            event,
            Event::Line {
                session: "box:0190-a".to_owned(),
                index: 3,
                line: "{}".to_owned(),
            }
        );
        let removed = keyed(
            "box",
            Event::Removed {
                id: "0190-b".to_owned(),
            },
        );
        assert_eq!(
            removed,
            Event::Removed {
                id: "box:0190-b".to_owned()
            }
        );
    }
}
