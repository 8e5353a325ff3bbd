//! Scripted in-memory backends for tests: a [`ScriptedModelClient`] that answers each model
//! call from a script (events, waits, a call that hangs until cancelled), and — for the CLI
//! kind — [`Launcher::scripted`](super::process::Launcher::scripted), whose processes a test
//! drives line by line. Both run under paused tokio time: waits are timers, never sleeps.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::stream;
use panewise_providers::transport::{CancellationToken, EventStream, ModelClient};
use panewise_providers::{ApiError, ApiKind, ModelRequest, ProviderEvent};
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
/// last script fails as a configuration error.
#[derive(Debug, Clone)]
pub struct ScriptedModelClient {
    scripts: Arc<Mutex<VecDeque<Vec<ScriptStep>>>>,
    requests: Arc<Mutex<Vec<usize>>>,
}

impl ScriptedModelClient {
    /// A client answering its calls with `scripts`, in order.
    pub fn new(scripts: Vec<Vec<ScriptStep>>) -> Self {
        ScriptedModelClient {
            scripts: Arc::new(Mutex::new(scripts.into())),
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// How many messages each call's request carried, in order.
    pub fn requests(&self) -> Vec<usize> {
        self.requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }
}

#[async_trait]
impl ModelClient for ScriptedModelClient {
    fn api(&self) -> ApiKind {
        ApiKind::Anthropic
    }

    fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.messages.len());
        }
        let script = self
            .scripts
            .lock()
            .ok()
            .and_then(|mut scripts| scripts.pop_front())
            .ok_or_else(|| ApiError::Config("the script has no more calls".to_owned()))?;
        let steps: VecDeque<ScriptStep> = script.into();
        let events = stream::unfold(
            (steps, cancel, false),
            |(mut steps, cancel, ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    if cancel.is_cancelled() {
                        let cancelled = ApiError::Cancelled {
                            api: ApiKind::Anthropic,
                        };
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
