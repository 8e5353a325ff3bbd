//! The model API clients' transport: HTTP with reqwest, SSE framing with `eventsource-stream`,
//! retries with their waits, and cancellation. Everything here is I/O; what the bytes mean is
//! decided by the pure [`StreamDecoder`]s of `panewise_providers::api`, and when to retry by
//! the pure [`RetryPolicy`].
//!
//! A call's stream yields `Ok` events and ends after one of: `Ok(`[`ProviderEvent::CallEnded`]`)`
//! (with the call's exact usage, priced), `Err(`[`ApiError::Failed`]`)` (classified), or
//! `Err(`[`ApiError::Cancelled`]`)`. Before each retry wait it yields a
//! [`ProviderEvent::ProviderRetrying`]. A failure after the answer began to stream (text,
//! thinking or a tool call already yielded) is not retried: the consumer has seen part of an
//! answer, and a second one would be appended to it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::Eventsource as _;
use futures_util::{Stream, StreamExt as _};
use panewise_providers::api::context::request_headers;
use panewise_providers::api::{
    classify_http_error, is_retryable, price_call, retry_after_ms, ApiKey, ApiKind, Completion,
    ModelRequest, RenderedRequest, RetryPolicy, StreamDecoder,
};
use panewise_providers::{classify_failure, ApiError, Failure, PriceTable, ProviderEvent};
pub use tokio_util::sync::CancellationToken;

use crate::error::TransportError;

/// The events of one call, as [`ModelClient::stream`] returns them.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ApiError>> + Send>>;

/// The `anthropic-version` header sent with every Anthropic request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A model API: one request in, the normalised events of its answer out.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// The API this client speaks.
    fn api(&self) -> ApiKind;

    /// The prices a call's usage is priced with (a call's `cost_usd`), so a caller that splits
    /// the cost by kind adds up to the same figure. The built-in table unless configured.
    fn prices(&self) -> Arc<PriceTable> {
        Arc::new(PriceTable::built_in())
    }

    /// Starts one call. The request is rendered at once (a bad request fails here, before
    /// anything is sent), so the returned stream does not borrow it. Cancelling `cancel` ends
    /// the stream with [`ApiError::Cancelled`] at once, whether a request, a stream or a
    /// retry wait is under way.
    fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError>;

    /// Starts one call whose body the caller rendered already (a
    /// [`RenderedHistory`](panewise_providers::RenderedHistory)'s, assembled from fragments kept since each
    /// message was appended), so nothing of the history is rendered again here. Otherwise as
    /// [`stream`](Self::stream): the body must be what [`ApiKind::body`] renders for the
    /// request it stands for.
    fn stream_rendered(
        &self,
        request: RenderedRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError>;

    /// Runs one call to its end and assembles its answer.
    async fn complete(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<Completion, ApiError> {
        let mut events = self.stream(request, cancel)?;
        let mut completion = Completion::default();
        while let Some(event) = events.next().await {
            completion.absorb(event?);
        }
        Ok(completion)
    }
}

/// Where and how a client calls its API.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The API.
    pub api: ApiKind,
    /// The base URL (`https://api.anthropic.com`, `http://127.0.0.1:PORT` for the mock).
    pub base_url: String,
    /// The key, sent in the API's header and nowhere else.
    pub key: ApiKey,
    /// When to retry.
    pub retry: RetryPolicy,
    /// The prices a call's usage is priced with.
    pub prices: Arc<PriceTable>,
}

impl ApiConfig {
    /// A configuration with the default retry policy and the built-in price table.
    pub fn new(api: ApiKind, base_url: impl Into<String>, key: ApiKey) -> Self {
        Self {
            api,
            base_url: base_url.into(),
            key,
            retry: RetryPolicy::default(),
            prices: Arc::new(PriceTable::built_in()),
        }
    }

    /// The configuration the conventional environment variables give: the key from
    /// `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or `GEMINI_API_KEY` (required), the base URL
    /// from `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` or `GOOGLE_GEMINI_BASE_URL` (the public
    /// endpoint when unset).
    pub fn from_env(api: ApiKind) -> Result<Self, TransportError> {
        let (key_variable, url_variable) = api.env_variables();
        let key = std::env::var(key_variable)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .ok_or(TransportError::MissingKey {
                variable: key_variable,
            })?;
        let base_url = std::env::var(url_variable)
            .ok()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| api.default_base_url().to_owned());
        Ok(Self::new(api, base_url, ApiKey::new(key)))
    }
}

/// The randomness of the retry jitter: a number in `[0, 1)` per wait. Injectable so tests
/// know the waits.
pub trait Jitter: Send + Sync + std::fmt::Debug {
    /// The next draw, in `[0, 1)`.
    fn draw(&self) -> f64;
}

/// Jitter from a fast non-cryptographic generator seeded by the system.
#[derive(Debug, Default)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn draw(&self) -> f64 {
        fastrand::f64()
    }
}

/// The same draw every time.
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub f64);

impl Jitter for FixedJitter {
    fn draw(&self) -> f64 {
        self.0
    }
}

/// A [`ModelClient`] over HTTP for any of the three APIs.
#[derive(Debug, Clone)]
pub struct HttpModelClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ApiConfig,
    http: reqwest::Client,
    jitter: Arc<dyn Jitter>,
}

impl HttpModelClient {
    /// A client for `config`, with system-drawn jitter.
    pub fn new(config: ApiConfig) -> Result<Self, TransportError> {
        Self::with_jitter(config, Arc::new(RandomJitter))
    }

    /// The client of [`ApiConfig::from_env`].
    pub fn from_env(api: ApiKind) -> Result<Self, TransportError> {
        Self::new(ApiConfig::from_env(api)?)
    }

    /// A client for `config` whose retry waits draw their jitter from `jitter`.
    pub fn with_jitter(config: ApiConfig, jitter: Arc<dyn Jitter>) -> Result<Self, TransportError> {
        // reqwest is built without a crypto provider of its own; ring is installed as the
        // process default unless the program installed one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(TransportError::HttpClient)?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                jitter,
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ApiConfig {
        &self.inner.config
    }
}

#[async_trait]
impl ModelClient for HttpModelClient {
    fn api(&self) -> ApiKind {
        self.inner.config.api
    }

    fn prices(&self) -> Arc<PriceTable> {
        self.inner.config.prices.clone()
    }

    fn stream(
        &self,
        request: &ModelRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError> {
        let api = self.inner.config.api;
        let body = api.body(request)?;
        let headers = request_headers(api, request.context_management.as_deref());
        Ok(self.start(&request.model, body, headers, cancel))
    }

    fn stream_rendered(
        &self,
        request: RenderedRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ApiError> {
        Ok(self.start(&request.model, request.body, request.headers, cancel))
    }
}

impl HttpModelClient {
    /// One call of `body` (moved into the request, not copied) to `model`'s endpoint.
    fn start(
        &self,
        model: &str,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
        cancel: CancellationToken,
    ) -> EventStream {
        let api = self.inner.config.api;
        let call = Call {
            inner: Arc::clone(&self.inner),
            url: api.endpoint(&self.inner.config.base_url, model),
            model: model.to_owned(),
            body: bytes::Bytes::from(body),
            headers,
            cancel,
            attempt: 1,
            waited: Duration::ZERO,
            answer_began: false,
            phase: Phase::Connect,
            pending: VecDeque::new(),
        };
        Box::pin(futures_util::stream::unfold(call, Call::next))
    }
}

type SseStream = Pin<
    Box<
        dyn Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

enum Phase {
    Connect,
    Wait(Duration),
    Streaming {
        events: SseStream,
        decoder: Box<dyn StreamDecoder + Send>,
    },
    Done,
}

/// One call's state, driven one item at a time.
struct Call {
    inner: Arc<Inner>,
    url: String,
    model: String,
    body: bytes::Bytes,
    /// The request's own headers (`anthropic-beta`), sent with every attempt.
    headers: Vec<(String, String)>,
    cancel: CancellationToken,
    attempt: u32,
    waited: Duration,
    answer_began: bool,
    phase: Phase,
    pending: VecDeque<Result<ProviderEvent, ApiError>>,
}

impl Call {
    fn api(&self) -> ApiKind {
        self.inner.config.api
    }

    async fn next(mut self) -> Option<(Result<ProviderEvent, ApiError>, Self)> {
        loop {
            if self.cancel.is_cancelled() && !matches!(self.phase, Phase::Done) {
                return self.cancelled();
            }
            if let Some(item) = self.pending.pop_front() {
                return Some((item, self));
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Connect => self.connect().await,
                Phase::Wait(delay) => {
                    tokio::select! {
                        biased;
                        () = self.cancel.cancelled() => return self.cancelled(),
                        () = tokio::time::sleep(delay) => {}
                    }
                    self.attempt = self.attempt.saturating_add(1);
                    self.phase = Phase::Connect;
                }
                Phase::Streaming {
                    mut events,
                    mut decoder,
                } => {
                    let next = tokio::select! {
                        biased;
                        () = self.cancel.cancelled() => return self.cancelled(),
                        next = events.next() => next,
                    };
                    let mut decoded = Vec::new();
                    match next {
                        Some(Ok(event)) => decoder.feed(&event.event, &event.data, &mut decoded),
                        // A broken connection or bad framing: the stream ends here, short of
                        // its final event.
                        Some(Err(_)) | None => decoder.finish(&mut decoded),
                    }
                    let done = decoder.is_done();
                    if !done {
                        self.phase = Phase::Streaming { events, decoder };
                    }
                    for event in decoded {
                        self.decoded(event);
                    }
                }
            }
        }
    }

    fn cancelled(mut self) -> Option<(Result<ProviderEvent, ApiError>, Self)> {
        self.pending.clear();
        self.phase = Phase::Done;
        let api = self.api();
        Some((Err(ApiError::Cancelled { api }), self))
    }

    /// Sends the request; on an answer of 2xx the stream begins, otherwise the error answer
    /// is classified.
    async fn connect(&mut self) {
        let api = self.api();
        self.pending.push_back(Ok(ProviderEvent::RequestStarted));
        let request = self.request();
        let sent = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return,
            sent = request.send() => sent,
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                // reqwest's words never carry the key: it is in a header marked sensitive.
                let message = format!("connection error: {error}");
                let failure = classify_failure(None, None, &message);
                return self.failed(failure, None);
            }
        };
        let status = response.status();
        if status.is_success() {
            self.phase = Phase::Streaming {
                events: Box::pin(response.bytes_stream().eventsource()),
                decoder: api.decoder(),
            };
            return;
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(retry_after_ms)
            .map(Duration::from_millis);
        let body = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return,
            body = response.text() => body.unwrap_or_default(),
        };
        let failure = classify_http_error(status.as_u16(), &body);
        self.failed(failure, retry_after);
    }

    fn request(&self) -> reqwest::RequestBuilder {
        let config = &self.inner.config;
        let key_header = match config.api {
            ApiKind::Anthropic => ("x-api-key", config.key.expose().to_owned()),
            ApiKind::OpenAi => ("authorization", format!("Bearer {}", config.key.expose())),
            ApiKind::Gemini => ("x-goog-api-key", config.key.expose().to_owned()),
        };
        let mut builder = self
            .inner
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(self.body.clone());
        if let Ok(mut value) = reqwest::header::HeaderValue::from_str(&key_header.1) {
            // Sensitive values are left out of reqwest's own Debug output.
            value.set_sensitive(true);
            builder = builder.header(key_header.0, value);
        }
        if config.api == ApiKind::Anthropic {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
    }

    /// One decoded event: passed on, priced when it ends the call, or, for a failure, retried
    /// or returned.
    fn decoded(&mut self, event: ProviderEvent) {
        match event {
            ProviderEvent::Failure { failure } => {
                // The decoder has given up on this stream.
                self.phase = Phase::Done;
                self.failed(failure, None);
            }
            ProviderEvent::CallEnded {
                model,
                stop_reason,
                mut stats,
            } => {
                let priced_as = model.as_deref().unwrap_or(&self.model);
                price_call(&self.inner.config.prices, Some(priced_as), &mut stats);
                self.phase = Phase::Done;
                self.pending.push_back(Ok(ProviderEvent::CallEnded {
                    model,
                    stop_reason,
                    stats,
                }));
            }
            event => {
                if matches!(
                    event,
                    ProviderEvent::TextDelta { .. }
                        | ProviderEvent::ThinkingDelta { .. }
                        | ProviderEvent::ToolCallRequested { .. }
                ) {
                    self.answer_began = true;
                }
                self.pending.push_back(Ok(event));
            }
        }
    }

    /// A failed attempt: a retry wait announced, or the failure returned.
    fn failed(&mut self, failure: Failure, retry_after: Option<Duration>) {
        let policy = self.inner.config.retry;
        let delay = (is_retryable(&failure) && !self.answer_began)
            .then(|| {
                policy.delay(
                    self.attempt,
                    retry_after,
                    self.inner.jitter.draw(),
                    self.waited,
                )
            })
            .flatten();
        match delay {
            Some(delay) => {
                self.waited = self.waited.saturating_add(delay);
                self.pending.push_back(Ok(ProviderEvent::ProviderRetrying {
                    attempt: Some(u64::from(self.attempt)),
                    max_retries: Some(u64::from(policy.max_attempts.saturating_sub(1))),
                    retry_delay_ms: Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)),
                    http_status: failure.http_status,
                    reason: Some(failure.message.clone()),
                }));
                self.phase = Phase::Wait(delay);
            }
            None => {
                self.phase = Phase::Done;
                let api = self.api();
                self.pending
                    .push_back(Err(ApiError::Failed { api, failure }));
            }
        }
    }
}
