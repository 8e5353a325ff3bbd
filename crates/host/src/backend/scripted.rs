//! Scripted in-memory backends for tests: a [`ScriptedModelClient`] that answers each model
//! call from a script (events, waits, a call that hangs until cancelled), and — for the CLI
//! kind — [`Launcher::scripted`](super::process::Launcher::scripted), whose processes a test
//! drives line by line. Both run under paused tokio time: waits are timers, never sleeps.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::stream;
use panewise_providers::{ApiError, ApiKind, ModelRequest, ProviderEvent};
use panewise_transport::{CancellationToken, EventStream, ModelClient, RenderedRequest};
use tokio::time::Duration;

/// One step of a scripted model call.
#[derive(Debug, Clone)]
pub enum ScriptStep {
    /// The call yields this event.
    Event(ProviderEvent),
    /// The call yields this error and ends.
    Error(ApiError),
    /// The call waits this long (a timer: paused time moves it).
    Wait(Duration),
    /// The call waits until it is cancelled.
    Hang,
}

/// A model client whose calls follow scripts, one script per call, in order; a call past the
/// last script fails as a configuration error. It keeps each call's body as it would have
/// been sent: rendered by [`ApiKind::body`] for a [`ModelRequest`], as given for a
/// [`RenderedRequest`].
#[derive(Debug, Clone)]
pub struct ScriptedModelClient {
    api: ApiKind,
    scripts: Arc<Mutex<VecDeque<Vec<ScriptStep>>>>,
    requests: Arc<Mutex<Vec<Sent>>>,
}

/// One call as the client received it.
#[derive(Debug, Clone)]
struct Sent {
    messages: usize,
    body: Vec<u8>,
}

impl ScriptedModelClient {
    /// A client of the Anthropic API answering its calls with `scripts`, in order.
    pub fn new(scripts: Vec<Vec<ScriptStep>>) -> Self {
        Self::for_api(ApiKind::Anthropic, scripts)
    }

    /// A client of `api` answering its calls with `scripts`, in order.
    pub fn for_api(api: ApiKind, scripts: Vec<Vec<ScriptStep>>) -> Self {
        ScriptedModelClient {
            api,
            scripts: Arc::new(Mutex::new(scripts.into())),
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// How many messages each call's request carried, in order.
    pub fn requests(&self) -> Vec<usize> {
        self.sent().into_iter().map(|sent| sent.messages).collect()
    }

    /// Each call's body, in order.
    pub fn bodies(&self) -> Vec<Vec<u8>> {
        self.sent().into_iter().map(|sent| sent.body).collect()
    }

    fn sent(&self) -> Vec<Sent> {
        self.requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }

    fn record(&self, sent: Sent) {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(sent);
        }
    }
}

#[async_trait]
impl ModelClient for ScriptedModelClient {
    fn api(&self) -> ApiKind {
        self.api
    }

    fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError> {
        self.record(Sent {
            messages: request.messages.len(),
            body: self.api.body(request)?,
        });
        self.play(cancel)
    }

    fn stream_rendered(
        &self,
        request: RenderedRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError> {
        self.record(Sent {
            messages: request.messages,
            body: request.body,
        });
        self.play(cancel)
    }
}

impl ScriptedModelClient {
    /// The next script, played as a stream.
    fn play(&self, cancel: CancellationToken) -> Result<EventStream, ApiError> {
        let api = self.api;
        let script = self
            .scripts
            .lock()
            .ok()
            .and_then(|mut scripts| scripts.pop_front())
            .ok_or_else(|| ApiError::Config("the script has no more calls".to_owned()))?;
        let steps: VecDeque<ScriptStep> = script.into();
        let events = stream::unfold(
            (steps, cancel, false),
            move |(mut steps, cancel, ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    if cancel.is_cancelled() {
                        let cancelled = ApiError::Cancelled { api };
                        return Some((Err(cancelled), (steps, cancel, true)));
                    }
                    match steps.pop_front()? {
                        ScriptStep::Event(event) => {
                            return Some((Ok(event), (steps, cancel, false)))
                        }
                        ScriptStep::Error(error) => {
                            return Some((Err(error), (steps, cancel, true)))
                        }
                        ScriptStep::Wait(wait) => {
                            tokio::select! {
                                _ = tokio::time::sleep(wait) => {}
                                _ = cancel.cancelled() => {}
                            }
                        }
                        ScriptStep::Hang => {
                            cancel.cancelled().await;
                        }
                    }
                }
            },
        );
        Ok(Box::pin(events))
    }
}
