//! An OTLP receiver on 127.0.0.1 for tests: OTLP/HTTP (`POST /v1/traces` and `/v1/metrics`) on
//! one port and OTLP/gRPC (the collector's `TraceService` and `MetricsService`, served by
//! tonic) on another, both decoded with the real protobuf schema (`opentelemetry-proto`), so a
//! test reads back what a collector would have received.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use tokio::sync::watch;

/// A span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// Its trace id, hex.
    pub trace_id: String,
    /// Its id, hex.
    pub span_id: String,
    /// Its parent's id, hex; empty for a root.
    pub parent_span_id: String,
    /// Its attributes, each value as text (a list as its items joined by `,`).
    pub attributes: BTreeMap<String, String>,
    /// Its events' names.
    pub events: Vec<String>,
    /// The resource's `service.name`.
    pub service_name: String,
}

/// One data point of a metric as received: a histogram's sum and count, or a counter's value
/// (count 1).
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedPoint {
    /// The metric's name.
    pub metric: String,
    /// The point's attributes, each value as text.
    pub attributes: BTreeMap<String, String>,
    /// A histogram's sum, a counter's value.
    pub sum: f64,
    /// A histogram's count of measurements; 1 for a counter.
    pub count: u64,
}

#[derive(Default)]
struct Received {
    spans: Vec<ReceivedSpan>,
    metrics: Vec<String>,
    /// Every metric data point of every request, in arrival order (cumulative temporality:
    /// a later export repeats a point with its totals so far).
    points: Vec<ReceivedPoint>,
    /// Every string value received anywhere (attribute values, resource values).
    strings: Vec<String>,
    /// The headers of every request, as `name: value`.
    headers: Vec<String>,
    /// Every request's body, as it arrived.
    bodies: Vec<Vec<u8>>,
}

/// A running receiver; it stops when dropped.
pub struct Receiver {
    addr: SocketAddr,
    grpc_addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    changes: watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
    grpc_task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
        self.grpc_task.abort();
    }
}

/// The gRPC side: both services store into the HTTP side's store.
#[derive(Clone)]
struct Grpc {
    store: Arc<Mutex<Received>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Grpc {
    /// Keeps what a request carried: its metadata as headers, its message as the body the
    /// HTTP side would have seen.
    fn keep(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        body: Vec<u8>,
    ) -> std::sync::MutexGuard<'_, Received> {
        let mut received = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        received
            .headers
            .extend(metadata.iter().filter_map(|entry| match entry {
                tonic::metadata::KeyAndValueRef::Ascii(name, value) => Some(format!(
                    "{name}: {}",
                    String::from_utf8_lossy(value.as_encoded_bytes())
                )),
                tonic::metadata::KeyAndValueRef::Binary(..) => None,
            }));
        received.bodies.push(body);
        received
    }
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let (metadata, _, export) = request.into_parts();
        {
            let mut received = self.keep(&metadata, export.encode_to_vec());
            store_traces(export, &mut received);
        }
        self.changed
            .send_modify(|count| *count = count.wrapping_add(1));
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let (metadata, _, export) = request.into_parts();
        {
            let mut received = self.keep(&metadata, export.encode_to_vec());
            store_metrics(export, &mut received);
        }
        self.changed
            .send_modify(|count| *count = count.wrapping_add(1));
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

impl Receiver {
    /// Listens on a free port of 127.0.0.1.
    pub async fn start() -> std::io::Result<Receiver> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let received = Arc::new(Mutex::new(Received::default()));
        let (changed, changes) = watch::channel(0u64);
        let changed = Arc::new(changed);
        let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let grpc_addr = grpc_listener.local_addr()?;
        let grpc = Grpc {
            store: received.clone(),
            changed: changed.clone(),
        };
        let grpc_task = tokio::spawn(async move {
            let _stopped = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(grpc.clone()))
                .add_service(MetricsServiceServer::new(grpc))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(grpc_listener))
                .await;
        });
        let store = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let store = store.clone();
                let changed = changed.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let store = store.clone();
                        let changed = changed.clone();
                        async move {
                            take(request, &store).await;
                            changed.send_modify(|count| *count = count.wrapping_add(1));
                            Ok::<_, std::convert::Infallible>(Response::new(
                                Full::new(Bytes::new()),
                            ))
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _closed = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Ok(Receiver {
            addr,
            grpc_addr,
            received,
            changes,
            task,
            grpc_task,
        })
    }

    /// The base URL of the OTLP/HTTP side, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of the OTLP/gRPC side, for `OTEL_EXPORTER_OTLP_ENDPOINT` with
    /// `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc_addr)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.lock().spans.clone()
    }

    /// The metric names received so far (each once).
    pub fn metric_names(&self) -> Vec<String> {
        self.lock().metrics.clone()
    }

    /// The latest data point of `metric` with every attribute of `with`, if one arrived.
    pub fn metric_point(&self, metric: &str, with: &[(&str, &str)]) -> Option<ReceivedPoint> {
        self.lock()
            .points
            .iter()
            .rev()
            .find(|point| {
                point.metric == metric
                    && with.iter().all(|(key, value)| {
                        point.attributes.get(*key).map(String::as_str) == Some(*value)
                    })
            })
            .cloned()
    }

    /// Whether `needle` occurs in any string value or header received.
    pub fn saw_text(&self, needle: &str) -> bool {
        let received = self.lock();
        received
            .strings
            .iter()
            .chain(&received.headers)
            .any(|text| text.contains(needle))
    }

    /// Whether `needle` occurs in a string value (attributes, resource), headers aside.
    pub fn saw_value(&self, needle: &str) -> bool {
        self.lock().strings.iter().any(|text| text.contains(needle))
    }

    /// Whether `needle` occurs anywhere in the bytes of a request's body (event attributes,
    /// span names, everything but the headers).
    pub fn saw_bytes(&self, needle: &str) -> bool {
        let needle = needle.as_bytes();
        self.lock().bodies.iter().any(|body| {
            !needle.is_empty() && body.windows(needle.len()).any(|window| window == needle)
        })
    }

    /// Waits until `done` holds of what was received, or `timeout` passes; says which.
    pub async fn wait_until(&self, timeout: Duration, done: impl Fn(&Receiver) -> bool) -> bool {
        let mut changes = self.changes.clone();
        let waiting = async {
            loop {
                if done(self) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(timeout, waiting).await.is_ok() && done(self)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Received> {
        self.received.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn take(request: Request<Incoming>, store: &Mutex<Received>) {
    let path = request.uri().path().to_owned();
    let headers: Vec<String> = request
        .headers()
        .iter()
        .map(|(name, value)| format!("{name}: {}", String::from_utf8_lossy(value.as_bytes())))
        .collect();
    let Ok(body) = request.into_body().collect().await else {
        return;
    };
    let body = body.to_bytes();
    let mut received = store.lock().unwrap_or_else(PoisonError::into_inner);
    received.headers.extend(headers);
    received.bodies.push(body.to_vec());
    match path.as_str() {
        "/v1/traces" => {
            if let Ok(export) = ExportTraceServiceRequest::decode(body) {
                store_traces(export, &mut received);
            }
        }
        "/v1/metrics" => {
            if let Ok(export) = ExportMetricsServiceRequest::decode(body) {
                store_metrics(export, &mut received);
            }
        }
        _ => {}
    }
}

fn store_traces(export: ExportTraceServiceRequest, received: &mut Received) {
    for resource_spans in export.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default().attributes;
        let service_name = attributes(&resource)
            .remove("service.name")
            .unwrap_or_default();
        received.strings.extend(attributes(&resource).into_values());
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                let attributes = attributes(&span.attributes);
                received.strings.extend(attributes.values().cloned());
                received.spans.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes,
                    events: span.events.into_iter().map(|event| event.name).collect(),
                    service_name: service_name.clone(),
                });
            }
        }
    }
}

fn store_metrics(export: ExportMetricsServiceRequest, received: &mut Received) {
    for resource_metrics in export.resource_metrics {
        for scope in resource_metrics.scope_metrics {
            for metric in scope.metrics {
                use opentelemetry_proto::tonic::metrics::v1::{metric::Data, number_data_point};
                let number = |value: Option<number_data_point::Value>| match value {
                    Some(number_data_point::Value::AsDouble(real)) => real,
                    Some(number_data_point::Value::AsInt(count)) => count as f64,
                    None => 0.0,
                };
                let points: Vec<ReceivedPoint> = match &metric.data {
                    Some(Data::Histogram(histogram)) => histogram
                        .data_points
                        .iter()
                        .map(|point| ReceivedPoint {
                            metric: metric.name.clone(),
                            attributes: attributes(&point.attributes),
                            sum: point.sum.unwrap_or(0.0),
                            count: point.count,
                        })
                        .collect(),
                    Some(Data::Sum(sum)) => sum
                        .data_points
                        .iter()
                        .map(|point| ReceivedPoint {
                            metric: metric.name.clone(),
                            attributes: attributes(&point.attributes),
                            sum: number(point.value),
                            count: 1,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                received.points.extend(points);
                if !received.metrics.contains(&metric.name) {
                    received.metrics.push(metric.name);
                }
            }
        }
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
        .collect()
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(count)) => count.to_string(),
        Some(any_value::Value::DoubleValue(real)) => real.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(any_value::Value::ArrayValue(list)) => list
            .values
            .iter()
            .map(|item| text(Some(item)))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
