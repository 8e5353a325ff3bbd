//! The handlers: each reads its body, calls the daemon as the device's client and words the
//! answer. They run only after the guard let the request through.

use std::convert::Infallible;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use panewise_api::{
    AnswerParams, ApproveParams, CreateParams, Decision, ErrorCode, Method, PromptParams,
    SessionParams,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Caller, DaemonError, LogEvent, Web, LOCAL_HOST};
use crate::inbox::{self, last_event_id, TranscriptFold};
use crate::pairing::client_name;

const PAGE: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLE: &str = include_str!("../assets/app.css");

pub(crate) async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// A daemon error as an HTTP answer: a request no longer waiting is 409 with the daemon's
/// words (who answered first), an unknown session 404, anything else 502 (the daemon).
fn daemon_error(web: &Web, failed: DaemonError) -> Response {
    let status = match failed.code {
        Some(ErrorCode::NotWaiting | ErrorCode::SeveralWaiting | ErrorCode::SessionEnded) => {
            StatusCode::CONFLICT
        }
        Some(ErrorCode::UnknownSession | ErrorCode::AmbiguousSession) => StatusCode::NOT_FOUND,
        Some(ErrorCode::InvalidParams | ErrorCode::LaunchFailed | ErrorCode::NameTaken) => {
            StatusCode::BAD_REQUEST
        }
        Some(_) => StatusCode::BAD_GATEWAY,
        None => {
            web.note_daemon(false);
            StatusCode::BAD_GATEWAY
        }
    };
    if failed.code.is_some() {
        web.note_daemon(true);
    }
    error(status, failed.message)
}

/// The device's client name (the guard let only paired devices through).
fn who(caller: &Caller) -> String {
    client_name(caller.device.as_ref().map_or("device", |d| d.name.as_str()))
}

async fn call(web: &Web, caller: &Caller, method: Method, params: Value) -> Response {
    match web.daemon.call(&who(caller), method, params).await {
        Ok(value) => {
            web.note_daemon(true);
            Json(value).into_response()
        }
        Err(failed) => daemon_error(web, failed),
    }
}

#[derive(Deserialize)]
pub(crate) struct PairBody {
    code: String,
    #[serde(default)]
    device: String,
}

pub(crate) async fn pair(State(web): State<Arc<Web>>, Json(body): Json<PairBody>) -> Response {
    let now = (web.clock)();
    let redeemed = web
        .pairing
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .redeem(&body.code, now);
    if let Err(refused) = redeemed {
        return error(StatusCode::FORBIDDEN, refused.to_string());
    }
    let mut random = [0u8; 32];
    if let Err(why) = (web.random)(&mut random) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, why);
    }
    let mut devices = match web.devices.load() {
        Ok(devices) => devices,
        Err(failed) => return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string()),
    };
    let (device, token) = devices.pair(&body.device, random, now);
    if let Err(failed) = web.devices.save(&devices) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string());
    }
    tracing::info!(device = %device.name, id = %device.id, "a device paired");
    Json(json!({ "token": token, "device": { "id": device.id, "name": device.name } }))
        .into_response()
}

/// Every host's sessions, and how this machine's daemon looks (or why it cannot be reached);
/// `hosts` says each host's error, so a host that is down is said, never shown as empty.
async fn listed(web: &Web) -> (Value, Vec<(String, Vec<panewise_api::SessionSummary>)>) {
    let hosts = web.daemon.list_hosts().await;
    let local = hosts
        .iter()
        .find(|(host, _)| host == LOCAL_HOST)
        .map(|(_, listed)| listed.as_ref().err().map(|failed| failed.message.clone()));
    let local_error = local.flatten();
    web.note_daemon(local_error.is_none());
    let (last, failing) = *web.heard.lock().unwrap_or_else(PoisonError::into_inner);
    let reach = inbox::reach(last, failing, (web.clock)());
    let said: Vec<Value> = hosts
        .iter()
        .map(|(host, listed)| {
            json!({ "host": host, "error": listed.as_ref().err().map(|failed| failed.message.clone()) })
        })
        .collect();
    let sessions = hosts
        .into_iter()
        .map(|(host, listed)| (host, listed.unwrap_or_default()))
        .collect();
    (
        json!({ "reach": reach, "error": local_error, "hosts": said }),
        sessions,
    )
}

pub(crate) async fn sessions(State(web): State<Arc<Web>>) -> Response {
    let (mut out, hosts) = listed(&web).await;
    let sessions: Vec<Value> = hosts
        .iter()
        .flat_map(|(host, sessions)| {
            sessions.iter().map(move |session| {
                let mut session = json!(session);
                session["host"] = json!(host);
                session
            })
        })
        .collect();
    out["sessions"] = json!(sessions);
    Json(out).into_response()
}

pub(crate) async fn inbox(State(web): State<Arc<Web>>) -> Response {
    let (mut out, hosts) = listed(&web).await;
    out["items"] = json!(inbox::inbox(
        hosts
            .iter()
            .map(|(host, sessions)| (host.as_str(), &sessions[..]))
    ));
    Json(out).into_response()
}

#[derive(Deserialize)]
pub(crate) struct ApproveBody {
    request: String,
    decision: String,
    #[serde(default)]
    message: Option<String>,
}

pub(crate) async fn approve(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(body): Json<ApproveBody>,
) -> Response {
    let decision = match body.decision.as_str() {
        "allow_once" => Decision::AllowOnce,
        "allow_for_session" => Decision::AllowForSession,
        "deny" => Decision::Deny {
            message: body.message.filter(|message| !message.trim().is_empty()),
        },
        other => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("decision {other:?} is not allow_once, allow_for_session or deny"),
            )
        }
    };
    let params = ApproveParams {
        session: id,
        // Always named: an answer is never taken for a later request.
        request: Some(body.request),
        decision,
    };
    call(&web, &caller, Method::Approve, json!(params)).await
}

#[derive(Deserialize)]
pub(crate) struct TextBody {
    text: String,
}

pub(crate) async fn answer(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(body): Json<TextBody>,
) -> Response {
    let params = AnswerParams {
        session: id,
        text: body.text,
    };
    call(&web, &caller, Method::Answer, json!(params)).await
}

pub(crate) async fn prompt(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(body): Json<TextBody>,
) -> Response {
    let params = PromptParams {
        session: id,
        text: body.text,
    };
    call(&web, &caller, Method::Prompt, json!(params)).await
}

pub(crate) async fn interrupt(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(_body): Json<Value>,
) -> Response {
    call(
        &web,
        &caller,
        Method::Interrupt,
        json!(SessionParams { session: id }),
    )
    .await
}

pub(crate) async fn stop(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Json(_body): Json<Value>,
) -> Response {
    call(
        &web,
        &caller,
        Method::Stop,
        json!(SessionParams { session: id }),
    )
    .await
}

#[derive(Deserialize)]
pub(crate) struct CreateBody {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    approval: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

pub(crate) async fn create(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<CreateBody>,
) -> Response {
    let nonempty = |text: Option<String>| text.filter(|text| !text.trim().is_empty());
    let params = CreateParams {
        prompt: nonempty(body.prompt),
        provider: nonempty(body.provider),
        approval: nonempty(body.approval),
        name: nonempty(body.name),
        ..CreateParams::default()
    };
    call(&web, &caller, Method::Create, json!(params)).await
}

pub(crate) async fn devices(State(web): State<Arc<Web>>) -> Response {
    match web.devices.load() {
        Ok(devices) => {
            let listed: Vec<Value> = devices
                .devices
                .iter()
                .map(|d| json!({ "id": d.id, "name": d.name, "paired_at_ms": d.paired_at_ms }))
                .collect();
            Json(json!({ "devices": listed })).into_response()
        }
        Err(failed) => error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string()),
    }
}

/// How often a stream checks that its device is still paired: a revoked device's streams
/// close within this.
const REVOKE_CHECK: Duration = Duration::from_millis(500);

/// The transcript as server-sent events: one `line` event per log line that adds to the
/// transcript, its id the log index; `Last-Event-ID: N` resumes after line N (every line is
/// still folded, only the ones after N are sent), so nothing is missed or sent twice.
pub(crate) async fn transcript(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let after = last_event_id(headers.get("last-event-id").and_then(|v| v.to_str().ok()));
    let mut log = match web.daemon.subscribe(&who(&caller), &id).await {
        Ok(log) => log,
        Err(failed) => return daemon_error(&web, failed),
    };
    let (events, mut receiver) = tokio::sync::mpsc::channel::<Event>(64);
    let token = caller.token.clone().unwrap_or_default();
    let watcher = Arc::clone(&web);
    tokio::spawn(async move {
        let mut fold = TranscriptFold::new(after);
        let mut check = tokio::time::interval(REVOKE_CHECK);
        loop {
            tokio::select! {
                _ = check.tick() => {
                    if watcher.device(&token).is_none() {
                        return;
                    }
                }
                got = log.recv() => {
                    let event = match got {
                        Some(LogEvent::Line { index, line }) => {
                            let Some(added) = fold.fold(index, &line) else {
                                continue;
                            };
                            Event::default()
                                .event("line")
                                .id(index.to_string())
                                .data(json!(added).to_string())
                        }
                        Some(LogEvent::Ended) => Event::default().event("ended").data("{}"),
                        None => return,
                    };
                    if events.send(event).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    let stream = futures_util::stream::poll_fn(move |context| {
        receiver
            .poll_recv(context)
            .map(|event| event.map(Ok::<Event, Infallible>))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
