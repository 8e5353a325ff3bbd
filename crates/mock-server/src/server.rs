//! The listener, the routing of each request to its API, the refusal of proxy requests, and the
//! body type that can cut a stream.

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use crate::cache::{self, Caches, Refusal};
use crate::config::{MockConfig, Scenario, SCENARIO_HEADER};
use crate::context::{self, Managed};
use crate::error::{MockError, Result};
use crate::frames::Rendered;
use crate::log::{is_secret_header, redact_query, LoggedRequest, RequestLog};
use crate::{anthropic, gemini, openai, script};

/// The largest request body read; larger ones are answered 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// How long a cut stream waits after its last frame before closing, so the frames already
/// written reach the client before the connection drops.
const CUT_PAUSE: Duration = Duration::from_millis(50);

/// How long to wait before accepting again after a failed accept (out of descriptors).
const ACCEPT_RETRY: Duration = Duration::from_millis(20);

/// The entry point: [`MockServer::start`].
#[derive(Debug)]
pub struct MockServer;

/// A server running on the current tokio runtime; dropping it stops it.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    log: Arc<RequestLog>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

struct Shared {
    scenario: Scenario,
    log: Arc<RequestLog>,
    /// Hashes of the bodies `rate-limit-once` has refused, so their retry is answered.
    refused_once: std::sync::Mutex<std::collections::BTreeSet<u64>>,
    /// The prompt caches, per API, model and OpenAI cache key (`cache.rs`).
    caches: Caches,
}

impl MockServer {
    /// Binds 127.0.0.1:`config.port` and serves on the current tokio runtime until
    /// [`RunningServer::shutdown`] or drop.
    pub async fn start(config: MockConfig) -> Result<RunningServer> {
        let log = Arc::new(RequestLog::open(config.log_file.as_deref())?);
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, config.port))
            .await
            .map_err(|source| MockError::Bind {
                port: config.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| MockError::Bind {
            port: config.port,
            source,
        })?;
        let shared = Arc::new(Shared {
            scenario: config.scenario,
            log: Arc::clone(&log),
            refused_once: std::sync::Mutex::default(),
            caches: Caches::default(),
        });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, shared, stopped));
        Ok(RunningServer {
            addr,
            log,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

impl RunningServer {
    /// The address the server listens on (always 127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, the base URL to give a client.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request logged so far.
    pub fn log(&self) -> Vec<LoggedRequest> {
        self.log.entries()
    }

    /// Stops accepting, closes open connections and waits for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Waits until the server stops (it only stops when shut down or dropped).
    async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Runs a server for a binary (`panewise mock-server`): prints
/// `listening on http://127.0.0.1:PORT` on stdout (so a parent that asked for port 0 learns the
/// port), then serves until the future is dropped.
pub async fn serve(config: MockConfig) -> Result<()> {
    let scenario = config.scenario;
    let server = MockServer::start(config).await?;
    println!("listening on {} (scenario {scenario})", server.base_url());
    server.wait().await;
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    // Connections live in the set so that stopping the loop also closes them.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(handle(request, &shared).await) }
    });
    // A client that goes away mid-answer is not the server's failure.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle(request: Request<Incoming>, shared: &Shared) -> Response<ScriptedBody> {
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let (parts, incoming) = request.into_parts();
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &parts.headers {
        if is_secret_header(name.as_str()) {
            continue;
        }
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert(value);
    }
    let proxy_request = parts.method == Method::CONNECT || parts.uri.scheme().is_some();
    let path = if proxy_request {
        parts.uri.to_string()
    } else {
        parts.uri.path().to_owned()
    };
    let query = if proxy_request {
        String::new()
    } else {
        redact_query(parts.uri.query().unwrap_or(""))
    };
    let mut entry = LoggedRequest {
        seq: 0,
        unix_ms,
        method: parts.method.to_string(),
        path: path.clone(),
        query,
        headers,
        body: Value::Null,
        scenario: shared.scenario,
        status: 0,
        answer: String::new(),
        usage: None,
        reported_usage: None,
    };

    if proxy_request {
        // CLIs use this server as their HTTP(S) proxy so nothing leaves the machine.
        let rendered = plain(
            403,
            "panewise mock-server refuses proxy requests: nothing leaves this machine\n",
            "refused",
        );
        return finish(entry, rendered, shared);
    }
    if parts.method == Method::GET && path == "/_mock/log" {
        let body = serde_json::to_value(shared.log.entries()).unwrap_or(Value::Null);
        return respond(Rendered::json(200, &body, "log"));
    }

    let raw = match http_body_util::Limited::new(incoming, MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let rendered = plain(
                413,
                "request body unreadable or larger than 64 MiB\n",
                "bad-request",
            );
            return finish(entry, rendered, shared);
        }
    };
    let raw_text = String::from_utf8_lossy(&raw);
    let body: Option<Value> = serde_json::from_slice(&raw).ok();
    entry.body = match &body {
        Some(value) => value.clone(),
        None if raw.is_empty() => Value::Null,
        None => Value::String(raw_text.clone().into_owned()),
    };

    let scenario = match parts.headers.get(SCENARIO_HEADER).map(|v| v.to_str()) {
        None => shared.scenario,
        Some(Ok(name)) => match name.parse::<Scenario>() {
            Ok(scenario) => scenario,
            Err(error) => {
                let rendered = Rendered::json(
                    400,
                    &json!({"error": {"message": error.to_string()}}),
                    "bad-request",
                );
                return finish(entry, rendered, shared);
            }
        },
        Some(Err(_)) => {
            let rendered = Rendered::json(
                400,
                &json!({"error": {"message": "the x-mock-scenario header is not text"}}),
                "bad-request",
            );
            return finish(entry, rendered, shared);
        }
    };
    entry.scenario = scenario;
    if scenario == Scenario::RateLimitOnce && shared.first_sight(&raw) {
        let refused = script::Reply::Error(script::ErrorKind::RateLimit);
        let plain = Managed::plain(raw.len());
        let rendered = if path == "/v1/messages" {
            anthropic::render(&refused, &Value::Null, &raw, false, &plain)
        } else if path == "/v1/responses" {
            openai::render(&refused, &Value::Null, &raw, false, &plain)
        } else {
            gemini::render(&refused, "", &raw, gemini::Method::Generate)
        };
        return finish(entry, rendered, shared);
    }

    let api_path = parts.method == Method::POST
        && (path == "/v1/messages"
            || path == "/v1/messages/count_tokens"
            || path == "/v1/responses"
            || gemini::parse_path(&path).is_some());
    if !api_path {
        let rendered = Rendered::json(
            404,
            &json!({"error": {"message": format!("no mock API at {} {path}", parts.method)}}),
            "not-found",
        );
        return finish(entry, rendered, shared);
    }
    let Some(body) = body else {
        let rendered = Rendered::json(
            400,
            &json!({"error": {"message": "the request body is not JSON"}}),
            "bad-request",
        );
        return finish(entry, rendered, shared);
    };

    let rendered = if path == "/v1/messages/count_tokens" {
        anthropic::count_tokens(&raw)
    } else if path == "/v1/messages" {
        let betas = entry
            .headers
            .get("anthropic-beta")
            .map_or("", String::as_str);
        match (
            context::anthropic_edits(&body, betas),
            cache::anthropic(&body),
        ) {
            (Err(invalid), _) => anthropic::invalid_request(&invalid.to_string()),
            (_, Err(Refusal::TooManyBreakpoints(found))) => anthropic::too_many_breakpoints(found),
            (Ok(edits), Ok(sent)) => {
                // The answer is decided from the request as sent; context management changes
                // only the prompt counted and cached, and what is reported of it.
                let reply = script::plan(scenario, &anthropic::facts(&body, &raw_text));
                let huge = context::scripted_huge(&reply);
                let (read, managed) = context::apply_anthropic(&body, raw.len(), huge, &edits);
                // Edits only remove breakpoints, so the edited prompt is never refused.
                let prompt = cache::anthropic(&read).unwrap_or(sent);
                let reply = shared.cached(reply, &prompt);
                let stream = anthropic::wants_stream(&body);
                anthropic::render(&reply, &body, &raw, stream, &managed)
            }
        }
    } else if path == "/v1/responses" {
        match context::openai_threshold(&body) {
            Err(invalid) => openai::invalid_request(&invalid),
            Ok(threshold) => {
                let reply = script::plan(scenario, &openai::facts(&body, &raw_text));
                let huge = context::scripted_huge(&reply);
                let (read, managed) = context::apply_openai(&body, &raw, huge, threshold);
                let reply = shared.cached(reply, &cache::openai(&read));
                let stream = openai::wants_stream(&body);
                openai::render(&reply, &body, &raw, stream, &managed)
            }
        }
    } else {
        match gemini::parse_path(&path) {
            Some((model, method))
                if method == gemini::Method::Generate && gemini::is_routing(&body) =>
            {
                gemini::routing(model, &raw)
            }
            Some((model, method)) => {
                let reply = script::plan(scenario, &gemini::facts(&body, &raw_text));
                let reply = shared.cached(reply, &cache::gemini(model, &body));
                gemini::render(&reply, model, &raw, method)
            }
            None => Rendered::json(
                404,
                &json!({"error": {"message": "no such model path"}}),
                "not-found",
            ),
        }
    };
    finish(entry, rendered, shared)
}

impl Shared {
    /// `reply` with what the prompt cache read and wrote of `prompt`; a refused request
    /// leaves the cache alone.
    fn cached(&self, reply: script::Reply, prompt: &cache::Prompt) -> script::Reply {
        if reply.is_answered() {
            let split = self.caches.call(prompt);
            reply.with_cache(split)
        } else {
            reply
        }
    }

    /// Whether `rate-limit-once` sees `body` for the first time (and remembers it).
    fn first_sight(&self, body: &[u8]) -> bool {
        use std::hash::{Hash as _, Hasher as _};
        // SipHash with fixed keys: the same body hashes the same in every run.
        let mut hasher = std::hash::DefaultHasher::new();
        body.hash(&mut hasher);
        self.refused_once
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(hasher.finish())
    }
}

fn plain(status: u16, text: &'static str, answer: &'static str) -> Rendered {
    Rendered {
        status,
        content_type: "text/plain; charset=utf-8",
        headers: Vec::new(),
        chunks: vec![Bytes::from_static(text.as_bytes())],
        cut_after: None,
        answer,
        usage: None,
        reported_usage: None,
    }
}

/// Logs the request with what it was answered, then builds the response.
fn finish(mut entry: LoggedRequest, rendered: Rendered, shared: &Shared) -> Response<ScriptedBody> {
    entry.status = rendered.status;
    entry.answer = rendered.answer.to_owned();
    entry.usage = rendered.usage;
    entry.reported_usage = rendered.reported_usage.clone();
    shared.log.push(entry);
    respond(rendered)
}

fn respond(rendered: Rendered) -> Response<ScriptedBody> {
    let status = StatusCode::from_u16(rendered.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = ScriptedBody::new(rendered.chunks, rendered.cut_after.is_some());
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    if let Ok(value) = rendered.content_type.parse() {
        headers.insert(hyper::header::CONTENT_TYPE, value);
    }
    for (name, value) in rendered.headers {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

/// A response body sent chunk by chunk; when `cut` is set it fails after its chunks, which
/// makes hyper close the connection without the final chunk, as a dropped stream would.
pub struct ScriptedBody {
    chunks: VecDeque<Bytes>,
    cut: bool,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl ScriptedBody {
    fn new(chunks: Vec<Bytes>, cut: bool) -> ScriptedBody {
        ScriptedBody {
            chunks: chunks.into(),
            cut,
            pause: None,
        }
    }
}

impl Body for ScriptedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Some(chunk) = this.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if !this.cut {
            return Poll::Ready(None);
        }
        let pause = this
            .pause
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(CUT_PAUSE)));
        if pause.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.cut = false;
        Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "scripted stream cut",
        ))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && !self.cut
    }

    fn size_hint(&self) -> SizeHint {
        // Streams go out chunked, as the real APIs send them; single bodies with a length.
        if self.cut || self.chunks.len() > 1 {
            return SizeHint::default();
        }
        let total: usize = self.chunks.iter().map(Bytes::len).sum();
        SizeHint::with_exact(u64::try_from(total).unwrap_or(u64::MAX))
    }
}
