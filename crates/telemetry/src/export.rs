//! The shell: the OpenTelemetry SDK behind the pure [`Tracker`]. One [`Telemetry`] per
//! process (one OTLP exporter for traces, one for metrics); one [`SessionExport`] per session,
//! seeing its updates through a [`panewise_session_protocol::Observer`].
//!
//! The session never waits on the network: ending a span only queues it for the batch
//! processor's thread (a bounded queue; when full, spans are dropped, not waited for), and
//! metrics are aggregated in memory and pushed by the periodic reader's thread. An endpoint
//! that refuses or is down costs one warning line on stderr for the whole process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Array, Context, KeyValue, StringValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use opentelemetry_sdk::Resource;
use panewise_session_protocol::{Observer, Update};

use crate::grpc::{GrpcRuntime, OnRuntime};
use crate::names as n;
use crate::record::{Attribute, EventRecord, Kind, Record, Value};
use crate::settings::{Protocol, Settings};
use crate::tracker::{Content, SessionInfo, Tracker};

/// How long one export request may take before it is abandoned.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// Spans held for export at most; more are dropped rather than slowing a session.
const MAX_QUEUE: usize = 4096;
/// How often metrics are pushed while the process runs (and once more on shutdown).
const METRIC_INTERVAL: Duration = Duration::from_secs(30);

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The exporter could not be built (a malformed endpoint, no HTTP client).
    #[error("cannot start the OTLP exporter: {0}")]
    Build(String),
}

/// One process's exporters.
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    tracer: SdkTracer,
    instruments: Arc<Instruments>,
    content: Content,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

impl Telemetry {
    /// Starts the exporters `settings` describe, over OTLP/HTTP (protobuf) or OTLP/gRPC.
    pub fn start(settings: &Settings) -> Result<Telemetry, TelemetryError> {
        // Installed once per process; a provider already installed (the model clients') is
        // as good.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let warned = Arc::new(AtomicBool::new(false));
        let mut resource = Resource::builder_empty()
            .with_service_name(settings.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        for (key, value) in &settings.resource {
            resource = resource.with_attribute(KeyValue::new(key.clone(), value.clone()));
        }
        let resource = resource.build();
        let build = |error: opentelemetry_otlp::ExporterBuildError| {
            TelemetryError::Build(error.to_string())
        };
        let endpoint = settings.endpoint().to_owned();
        let mut traces = SdkTracerProvider::builder().with_resource(resource.clone());
        let runtime = match settings.protocol {
            Protocol::HttpProtobuf => None,
            Protocol::Grpc => Some(
                GrpcRuntime::start().map_err(|error| TelemetryError::Build(error.to_string()))?,
            ),
        };
        let headers = || settings.headers.clone().into_iter().collect();
        if let Some(url) = &settings.traces_endpoint {
            let spans = match &runtime {
                None => opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_endpoint(url.clone())
                    .with_headers(headers())
                    .with_timeout(EXPORT_TIMEOUT)
                    .build(),
                Some(runtime) => runtime.build(|| {
                    opentelemetry_otlp::SpanExporter::builder()
                        .with_tonic()
                        .with_endpoint(url.clone())
                        .with_metadata(metadata(&settings.headers))
                        .with_timeout(EXPORT_TIMEOUT)
                        .build()
                }),
            }
            .map_err(build)?;
            let batch = BatchSpanProcessor::builder(WarnOnce {
                inner: OnRuntime {
                    inner: spans,
                    runtime: runtime.clone(),
                },
                endpoint: endpoint.clone(),
                warned: warned.clone(),
            })
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_max_queue_size(MAX_QUEUE)
                    .build(),
            )
            .build();
            traces = traces.with_span_processor(batch);
        }
        let traces = traces.build();
        let mut metrics = SdkMeterProvider::builder().with_resource(resource);
        if let Some(url) = &settings.metrics_endpoint {
            let metric_exporter = match &runtime {
                None => opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_endpoint(url.clone())
                    .with_headers(headers())
                    .with_timeout(EXPORT_TIMEOUT)
                    .build(),
                Some(runtime) => runtime.build(|| {
                    opentelemetry_otlp::MetricExporter::builder()
                        .with_tonic()
                        .with_endpoint(url.clone())
                        .with_metadata(metadata(&settings.headers))
                        .with_timeout(EXPORT_TIMEOUT)
                        .build()
                }),
            }
            .map_err(build)?;
            let reader = PeriodicReader::builder(WarnOnce {
                inner: OnRuntime {
                    inner: metric_exporter,
                    runtime,
                },
                endpoint,
                warned,
            })
            .with_interval(METRIC_INTERVAL)
            .build();
            metrics = metrics.with_reader(reader);
        }
        let metrics = metrics.build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&traces, "panewise");
        let instruments = Arc::new(Instruments::new(&metrics));
        let content = if settings.content {
            Content::On {
                secrets: secrets(settings),
            }
        } else {
            Content::Off
        };
        Ok(Telemetry {
            traces,
            metrics,
            tracer,
            instruments,
            content,
        })
    }

    /// The export of one session.
    pub fn session(&self, info: SessionInfo) -> Arc<SessionExport> {
        Arc::new(SessionExport {
            inner: Mutex::new(Inner {
                tracker: Tracker::new(info).with_content(self.content.clone()),
                session: Context::new(),
                tracer: self.tracer.clone(),
                instruments: self.instruments.clone(),
            }),
        })
    }

    /// Flushes and stops the exporters, waiting at most `deadline`; `false` when the
    /// deadline passed first (what was not sent is dropped: the process is ending).
    pub fn shutdown(&self, deadline: Duration) -> bool {
        let (done, finished) = std::sync::mpsc::channel();
        // The providers are handles: the clones shut down the one pipeline.
        let (traces, metrics) = (self.traces.clone(), self.metrics.clone());
        let spawned = std::thread::Builder::new()
            .name("telemetry-shutdown".to_owned())
            .spawn(move || {
                let _failed_export_was_warned = traces.shutdown_with_timeout(deadline);
                let _failed_export_was_warned = metrics.shutdown_with_timeout(deadline);
                let _gone = done.send(());
            });
        spawned.is_ok() && finished.recv_timeout(deadline).is_ok()
    }
}

/// One session's export: the tracker and its open session span.
pub struct SessionExport {
    inner: Mutex<Inner>,
}

struct Inner {
    tracker: Tracker,
    session: Context,
    tracer: SdkTracer,
    instruments: Arc<Instruments>,
}

impl SessionExport {
    /// Opens the session's span now, before the agent starts, and says its W3C trace
    /// context (`00-{trace id}-{span id}-{flags}`): the `TRACEPARENT` a supervised CLI is
    /// given so that its own spans nest under the session's.
    pub fn start(&self) -> Option<String> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut records = Vec::new();
        inner.tracker.start(now_ms(), &mut records);
        inner.apply(records);
        let mut carrier = std::collections::HashMap::new();
        TraceContextPropagator::new().inject_context(&inner.session, &mut carrier);
        carrier.remove("traceparent")
    }

    /// Sees one update, now.
    pub fn observe(&self, update: &Update) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut records = Vec::new();
        inner.tracker.observe(now_ms(), update, &mut records);
        inner.apply(records);
    }

    /// Ends the session's span (and whatever is still open), now.
    pub fn finish(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut records = Vec::new();
        inner.tracker.finish(now_ms(), &mut records);
        inner.apply(records);
    }

    /// An observer for `panewise_host::session::Session::observe`.
    pub fn observer(self: &Arc<Self>) -> Observer {
        let export = self.clone();
        Observer::new(move |update| export.observe(update))
    }
}

/// A session's export ends with its last observer (the session dropped with its outlets)
/// when nobody called [`SessionExport::finish`]: the daemon's sessions end on their tasks.
impl Drop for SessionExport {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        let mut records = Vec::new();
        inner.tracker.finish(now_ms(), &mut records);
        inner.apply(records);
    }
}

impl Inner {
    fn apply(&mut self, records: Vec<Record>) {
        for record in records {
            match record {
                Record::SessionOpened {
                    start_ms,
                    attributes,
                } => {
                    let span = self
                        .tracer
                        .span_builder(n::SPAN_INVOKE_AGENT)
                        .with_kind(SpanKind::Internal)
                        .with_start_time(time(start_ms))
                        .with_attributes(key_values(attributes))
                        .start(&self.tracer);
                    self.session = Context::new().with_span(span);
                }
                Record::Span(record) => {
                    let mut span = self
                        .tracer
                        .span_builder(record.name)
                        .with_kind(match record.kind {
                            Kind::Client => SpanKind::Client,
                            Kind::Internal => SpanKind::Internal,
                        })
                        .with_start_time(time(record.start_ms))
                        .with_attributes(key_values(record.attributes))
                        .start_with_context(&self.tracer, &self.session);
                    for event in record.events {
                        let (name, at, attributes) = event_parts(event);
                        span.add_event_with_timestamp(name, at, attributes);
                    }
                    if let Some(error) = record.error {
                        span.set_status(Status::error(error));
                    }
                    span.end_with_timestamp(time(record.end_ms));
                }
                Record::SessionEvent(event) => {
                    let (name, at, attributes) = event_parts(event);
                    self.session
                        .span()
                        .add_event_with_timestamp(name, at, attributes);
                }
                Record::SessionClosed {
                    end_ms,
                    attributes,
                    error,
                } => {
                    let span = self.session.span();
                    span.set_attributes(key_values(attributes));
                    if let Some(error) = error {
                        span.set_status(Status::error(error));
                    }
                    span.end_with_timestamp(time(end_ms));
                }
                Record::Metric(metric) => self.instruments.record(
                    metric.name,
                    metric.value,
                    &key_values(metric.attributes),
                ),
            }
        }
    }
}

struct Instruments {
    token_usage: Histogram<f64>,
    duration: Histogram<f64>,
    cost: Counter<f64>,
    sessions: Counter<u64>,
    approval_wait: Histogram<f64>,
    approvals: Counter<u64>,
}

impl Instruments {
    fn new(provider: &SdkMeterProvider) -> Self {
        let meter = provider.meter("panewise");
        Instruments {
            // The conventions' advised boundaries.
            token_usage: meter
                .f64_histogram(n::METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Tokens used per model call, by gen_ai.token.type")
                .with_boundaries((0..14).map(|power| 4f64.powi(power)).collect::<Vec<f64>>())
                .build(),
            duration: meter
                .f64_histogram(n::METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("Duration of a model call")
                .with_boundaries(
                    (0..14)
                        .map(|power| 0.01 * 2f64.powi(power))
                        .collect::<Vec<f64>>(),
                )
                .build(),
            cost: meter
                .f64_counter(n::METRIC_COST)
                .with_unit("USD")
                .with_description("Cost of the sessions' turns, by panewise.cost.source")
                .build(),
            sessions: meter
                .u64_counter(n::METRIC_SESSIONS)
                .with_unit("{session}")
                .with_description("Sessions started and ended")
                .build(),
            approval_wait: meter
                .f64_histogram(n::METRIC_APPROVAL_WAIT)
                .with_unit("s")
                .with_description("Time an approval question waited on its answer")
                .build(),
            approvals: meter
                .u64_counter(n::METRIC_APPROVALS)
                .with_unit("{approval}")
                .with_description("Approval requests answered, by decision")
                .build(),
        }
    }

    fn record(&self, name: &str, value: f64, attributes: &[KeyValue]) {
        // Counts are whole and non-negative by construction (the tracker's `1.0`s).
        let count = value.max(0.0) as u64;
        match name {
            n::METRIC_TOKEN_USAGE => self.token_usage.record(value, attributes),
            n::METRIC_OPERATION_DURATION => self.duration.record(value, attributes),
            n::METRIC_COST => self.cost.add(value, attributes),
            n::METRIC_SESSIONS => self.sessions.add(count, attributes),
            n::METRIC_APPROVAL_WAIT => self.approval_wait.record(value, attributes),
            n::METRIC_APPROVALS => self.approvals.add(count, attributes),
            _ => {}
        }
    }
}

/// An exporter that says once, for the whole process, that the endpoint could not be
/// reached, and otherwise stays quiet: telemetry never fails a session.
#[derive(Debug)]
struct WarnOnce<E> {
    inner: E,
    endpoint: String,
    warned: Arc<AtomicBool>,
}

impl<E> WarnOnce<E> {
    fn seen(&self, result: OTelSdkResult) -> OTelSdkResult {
        if let Err(error) = &result {
            if !self.warned.swap(true, Ordering::Relaxed) {
                // The error names the URL and the failure, never the headers.
                eprintln!(
                    "panewise: telemetry: cannot export to {}: {error} (the session goes on; \
                     this is said once)",
                    self.endpoint
                );
            }
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for WarnOnce<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.seen(result)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for WarnOnce<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.seen(result)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The values of the API key variables in this process's environment and of the export's
/// own headers: never exported, even as content (a tool may print its environment).
fn secrets(settings: &Settings) -> Vec<String> {
    let mut secrets: Vec<String> = panewise_providers::keys::KEY_VARIABLES
        .iter()
        .filter_map(|(variable, _)| std::env::var(variable).ok())
        .chain(settings.headers.values().flat_map(|value| {
            // `Bearer KEY`: the key alone too.
            let last = value.split_whitespace().last().map(str::to_owned);
            std::iter::once(value.clone()).chain(last)
        }))
        .filter(|value| value.len() >= 8)
        .collect();
    // The longest first, so a key that holds another is replaced whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets
}

/// The export headers as gRPC metadata; a header whose name or value gRPC cannot carry is
/// left out (by its name only: values are API keys).
fn metadata(headers: &std::collections::BTreeMap<String, String>) -> tonic::metadata::MetadataMap {
    let mut map = tonic::metadata::MetadataMap::new();
    for (name, value) in headers {
        let key =
            tonic::metadata::AsciiMetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes());
        match (key, value.parse()) {
            (Ok(key), Ok(value)) => {
                map.insert(key, value);
            }
            _ => eprintln!(
                "panewise: telemetry: the header `{name}` cannot be sent over grpc; left out"
            ),
        }
    }
    map
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

fn time(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

fn event_parts(event: EventRecord) -> (&'static str, SystemTime, Vec<KeyValue>) {
    (event.name, time(event.at_ms), key_values(event.attributes))
}

fn key_values(attributes: Vec<Attribute>) -> Vec<KeyValue> {
    attributes
        .into_iter()
        .map(|(key, value)| match value {
            Value::Str(text) => KeyValue::new(key, text),
            Value::Int(count) => KeyValue::new(key, count),
            Value::Float(real) => KeyValue::new(key, real),
            Value::StrList(list) => KeyValue::new(
                key,
                opentelemetry::Value::Array(Array::String(
                    list.into_iter().map(StringValue::from).collect(),
                )),
            ),
        })
        .collect()
}
