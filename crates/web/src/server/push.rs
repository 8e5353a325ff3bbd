//! Web Push, the shell: the VAPID key kept on disk (0600), the routes that hand out its public
//! key and take a browser's subscription, and the watcher that lists the sessions every
//! [`WATCH_EVERY`], folds them with [`crate::push::Watch`] and POSTs each push (RFC 8291
//! `aes128gcm`, RFC 8292 VAPID) with reqwest, each in a task of its own under a timeout, so a
//! slow push service never holds up the inbox.

use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64ct::{Base64UrlUnpadded, Encoding};
use serde::Deserialize;
use serde_json::json;
use web_push_native::jwt_simple::prelude::{
    Claims, Duration as JwtDuration, ECDSAP256KeyPairLike, ECDSAP256PublicKeyLike, ES256KeyPair,
};
use web_push_native::{Auth, WebPushBuilder};

use panewise_api::SessionSummary;

use super::{Caller, ListEvent, Random, Web, LOCAL_HOST};
use crate::push::{self, PushMessage, Subscription, Verdict, Watch};

/// How often the watcher lists the sessions.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);

/// How long one push may take (connect, send, answer).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a VAPID token is good for (RFC 8292 allows up to 24 h).
const VAPID_HOURS: u64 = 12;

/// The longest VAPID key file read.
const KEY_FILE_MAX: u64 = 256;

/// What went wrong with push.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The key file could not be read or written.
    #[error("the VAPID key file {path}: {error}")]
    KeyFile {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The key file is readable by others.
    #[error("the VAPID key file {0} is readable by other users: `chmod 600` it")]
    KeyOpen(String),
    /// The key file holds no P-256 private key.
    #[error("the VAPID key file {0} holds no P-256 private key")]
    KeyBad(String),
    /// No randomness for a key.
    #[error("cannot draw a VAPID key: {0}")]
    Random(String),
    /// The HTTP client could not be made.
    #[error("cannot make the push HTTP client: {0}")]
    Client(String),
    /// A push could not be built (a stored subscription that no longer reads).
    #[error("cannot build the push: {0}")]
    Build(String),
    /// The push service could not be reached.
    #[error("cannot reach the push service: {0}")]
    Send(String),
}

/// The push sender: the VAPID key pair, the contact the tokens name, the HTTP client.
pub struct Push {
    key: ES256KeyPair,
    public: String,
    contact: String,
    http: reqwest::Client,
}

impl Push {
    /// A sender signing with the P-256 private key `private` (32 bytes), naming `contact`
    /// (`mailto:` or `https:`) in its tokens.
    pub fn new(private: &[u8], contact: String) -> Result<Push, PushError> {
        let key = ES256KeyPair::from_bytes(private)
            .map_err(|_| PushError::KeyBad("(given)".to_owned()))?;
        let public = Base64UrlUnpadded::encode_string(
            &key.public_key().public_key().to_bytes_uncompressed(),
        );
        // reqwest is built without a crypto provider of its own; ring is installed as the
        // process default unless the program installed one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .connect_timeout(SEND_TIMEOUT / 2)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| PushError::Client(error.to_string()))?;
        Ok(Push {
            key,
            public,
            contact,
            http,
        })
    }

    /// The sender whose key is kept at `path` (base64url of the 32-byte private key, mode
    /// 0600), made with `random` the first time.
    pub fn load_or_create(
        path: &Path,
        random: &Random,
        contact: String,
    ) -> Result<Push, PushError> {
        let shown = path.display().to_string();
        let file_error = |error| PushError::KeyFile {
            path: shown.clone(),
            error,
        };
        match read_key(path) {
            Ok(private) => {
                return Push::new(&private, contact).map_err(|error| match error {
                    PushError::KeyBad(_) => PushError::KeyBad(shown),
                    other => other,
                })
            }
            Err(KeyRead::Missing) => {}
            Err(KeyRead::Open) => return Err(PushError::KeyOpen(shown)),
            Err(KeyRead::Bad) => return Err(PushError::KeyBad(shown)),
            Err(KeyRead::Io(error)) => return Err(file_error(error)),
        }
        // A scalar of 32 random bytes is a valid key but for odds of about 2^-32.
        let mut private = [0u8; 32];
        let key = loop {
            random(&mut private).map_err(PushError::Random)?;
            if ES256KeyPair::from_bytes(&private).is_ok() {
                break private;
            }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(file_error)?;
        }
        let written = {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .and_then(|mut file| {
                    let line = format!("{}\n", Base64UrlUnpadded::encode_string(&key));
                    file.write_all(line.as_bytes())?;
                    file.sync_all()
                })
        };
        match written {
            Ok(()) => Push::new(&key, contact),
            // Another `panewise web` made it first: use that one.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                Push::load_or_create(path, random, contact)
            }
            Err(error) => Err(file_error(error)),
        }
    }

    /// The public key, uncompressed, base64url: the page's `applicationServerKey`.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header of a push to `endpoint`: `vapid t=JWT, k=KEY` (RFC 8292),
    /// the token for the endpoint's origin, naming the contact. Signed here rather than by
    /// `WebPushBuilder::with_vapid`, whose `aud` drops the endpoint's port (a push service on
    /// a port of its own, as the tests' is, would refuse it).
    pub fn vapid_header(&self, endpoint: &str) -> Result<String, PushError> {
        let audience = push::audience(endpoint)
            .ok_or_else(|| PushError::Build("the endpoint has no origin".to_owned()))?;
        let claims = Claims::create(JwtDuration::from_hours(VAPID_HOURS))
            .with_audience(audience)
            .with_subject(&self.contact);
        let token = self
            .key
            .sign(claims)
            .map_err(|error| PushError::Build(error.to_string()))?;
        Ok(format!("vapid t={token}, k={}", self.public))
    }

    /// Encrypts `message` for `subscription` and POSTs it; the push service's status.
    pub async fn send(
        &self,
        subscription: &Subscription,
        message: &PushMessage,
    ) -> Result<u16, PushError> {
        let build = |why: &str| PushError::Build(why.to_owned());
        let point = push::decode_base64url(&subscription.p256dh).ok_or_else(|| build("p256dh"))?;
        let ua_public = web_push_native::p256::PublicKey::from_sec1_bytes(&point)
            .map_err(|_| build("p256dh"))?;
        let secret = push::decode_base64url(&subscription.auth)
            .filter(|secret| secret.len() == 16)
            .ok_or_else(|| build("auth"))?;
        let endpoint = subscription
            .endpoint
            .parse()
            .map_err(|_| build("endpoint"))?;
        let body = serde_json::to_vec(message).map_err(|error| build(&error.to_string()))?;
        let request = WebPushBuilder::new(endpoint, ua_public, Auth::clone_from_slice(&secret))
            .with_valid_duration(Duration::from_secs(push::TTL_SECS))
            .build(body)
            .map_err(|error| build(&error.to_string()))?;
        let (parts, body) = request.into_parts();
        let answer = self
            .http
            .post(subscription.endpoint.as_str())
            .headers(parts.headers)
            .header("Urgency", message.urgency().header())
            .header(
                header::AUTHORIZATION,
                self.vapid_header(&subscription.endpoint)?,
            )
            .body(body)
            .send()
            .await
            .map_err(|error| PushError::Send(error.without_url().to_string()))?;
        Ok(answer.status().as_u16())
    }
}

enum KeyRead {
    Missing,
    Open,
    Bad,
    Io(std::io::Error),
}

/// The private key of the file at `path`, refused when others may read it.
fn read_key(path: &Path) -> Result<Vec<u8>, KeyRead> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(KeyRead::Missing),
        Err(error) => return Err(KeyRead::Io(error)),
    };
    let mode = file.metadata().map_err(KeyRead::Io)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(KeyRead::Open);
    }
    let mut text = String::new();
    file.take(KEY_FILE_MAX)
        .read_to_string(&mut text)
        .map_err(|_| KeyRead::Bad)?;
    push::decode_base64url(&text)
        .filter(|key| key.len() == 32)
        .ok_or(KeyRead::Bad)
}

/// The origin of `endpoint`, for the log (the whole URL is a capability, never logged).
fn origin(endpoint: &str) -> String {
    push::audience(endpoint).unwrap_or_else(|| "(no origin)".to_owned())
}

/// Where the watcher reads the `[notify]` delay, each time it lists (so an edit applies
/// without a restart, as the daemon's own notifications do).
pub type DelaySource = Arc<dyn Fn() -> Duration + Send + Sync>;

/// Sends the pushes [`Watch::observe`] decides to every paired device's subscriptions, until
/// the process ends; without a [`Push`] it returns. It is a client of the daemon's event
/// stream (`sessions/subscribe`: the list, then every change as the daemon publishes it),
/// folded again each [`WATCH_EVERY`] too so that a delay runs out without a change; a daemon
/// that offers no stream (several hosts) is listed each [`WATCH_EVERY`] instead.
pub async fn watch(web: Arc<Web>, delay: DelaySource) {
    let Some(sender) = web.push.clone() else {
        return;
    };
    let mut watch = Watch::new();
    let mut tick = tokio::time::interval(WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        match web.daemon.list_stream().await {
            Ok(Some((sessions, mut changes))) => {
                let mut sessions = sessions;
                loop {
                    let messages =
                        fold(&web, &mut watch, &delay, &[(LOCAL_HOST, Some(&sessions))]).await;
                    send_all(&web, &sender, messages);
                    tokio::select! {
                        change = changes.recv() => match change {
                            Some(ListEvent::Changed(summary)) => {
                                match sessions.iter_mut().find(|s| s.id == summary.id) {
                                    Some(known) => *known = *summary,
                                    None => sessions.push(*summary),
                                }
                            }
                            Some(ListEvent::Removed(id)) => sessions.retain(|s| s.id != id),
                            // The daemon went away: connect again.
                            None => break,
                        },
                        _ = tick.tick() => {}
                    }
                }
                tick.tick().await;
            }
            Ok(None) => {
                tick.tick().await;
                let Ok(hosts) =
                    tokio::time::timeout(super::CALL_DEADLINE, web.daemon.list_hosts()).await
                else {
                    continue;
                };
                let listed: Vec<(&str, Option<&Vec<SessionSummary>>)> = hosts
                    .iter()
                    .map(|(host, list)| (host.as_str(), list.as_ref().ok()))
                    .collect();
                let messages = fold(&web, &mut watch, &delay, &listed).await;
                send_all(&web, &sender, messages);
            }
            Err(error) => {
                tracing::debug!(%error, "push: the daemon's session list");
                tick.tick().await;
            }
        }
    }
}

/// Folds each host's list into `watch` at the clock's now, with the `[notify]` delay now.
async fn fold(
    web: &Web,
    watch: &mut Watch,
    delay: &DelaySource,
    hosts: &[(&str, Option<&Vec<SessionSummary>>)],
) -> Vec<PushMessage> {
    let source = Arc::clone(delay);
    // The delay is read from the user's file: off the runtime's workers.
    let delay_ms = tokio::task::spawn_blocking(move || source())
        .await
        .map(|delay| u64::try_from(delay.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let now = (web.clock)();
    let mut messages = Vec::new();
    for (host, sessions) in hosts {
        messages.extend(watch.observe(host, sessions.map(Vec::as_slice), now, delay_ms));
    }
    messages
}

/// Sends each message to every subscription, each push in a task of its own.
fn send_all(web: &Arc<Web>, sender: &Arc<Push>, messages: Vec<PushMessage>) {
    if messages.is_empty() {
        return;
    }
    let targets = match web.devices.load() {
        Ok(devices) => push::targets(&devices),
        Err(error) => {
            tracing::warn!(%error, "push: cannot read the paired devices");
            return;
        }
    };
    for message in messages {
        for target in &targets {
            let (web, sender, target, message) = (
                Arc::clone(web),
                Arc::clone(sender),
                target.clone(),
                message.clone(),
            );
            tokio::spawn(async move { deliver(&web, &sender, &target, &message).await });
        }
    }
}

/// Sends one push and acts on the answer: a subscription gone (404, 410) is forgotten.
async fn deliver(web: &Web, sender: &Push, target: &Subscription, message: &PushMessage) {
    let at = origin(&target.endpoint);
    match sender.send(target, message).await {
        Ok(status) => match push::verdict(status) {
            Verdict::Delivered => {
                tracing::info!(push_service = %at, event = %message.event, "push: sent");
            }
            Verdict::Gone => {
                tracing::info!(push_service = %at, status, "push: subscription gone, forgotten");
                let _writing = web.writing.lock().unwrap_or_else(PoisonError::into_inner);
                let saved = web.devices.load().and_then(|mut devices| {
                    if push::drop_endpoint(&mut devices, &target.endpoint) {
                        web.devices.save(&devices)
                    } else {
                        Ok(())
                    }
                });
                if let Err(error) = saved {
                    tracing::warn!(%error, "push: cannot forget a subscription");
                }
            }
            Verdict::Failed => {
                tracing::warn!(push_service = %at, status, "push: refused by the push service");
            }
        },
        Err(error) => tracing::warn!(push_service = %at, %error, "push: not sent"),
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// `GET /api/push/key`: the VAPID public key.
pub(crate) async fn key(State(web): State<Arc<Web>>) -> Response {
    match &web.push {
        Some(sender) => Json(json!({ "key": sender.public_key() })).into_response(),
        None => error(StatusCode::SERVICE_UNAVAILABLE, "push is not set up"),
    }
}

#[derive(Deserialize)]
pub(crate) struct Keys {
    p256dh: String,
    auth: String,
}

/// A browser's `PushSubscription.toJSON()` (its `expirationTime` ignored).
#[derive(Deserialize)]
pub(crate) struct SubscribeBody {
    endpoint: String,
    keys: Keys,
}

/// `POST /api/push/subscription`: keeps the subscription for the calling device.
pub(crate) async fn subscribe(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<SubscribeBody>,
) -> Response {
    if web.push.is_none() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "push is not set up");
    }
    let Some(device) = caller.device else {
        return error(StatusCode::UNAUTHORIZED, "pair this device first");
    };
    let subscription = match push::validate(
        &body.endpoint,
        &body.keys.p256dh,
        &body.keys.auth,
        (web.clock)(),
    ) {
        Ok(subscription) => subscription,
        Err(refused) => return error(StatusCode::BAD_REQUEST, refused.to_string()),
    };
    let _writing = web.writing.lock().unwrap_or_else(PoisonError::into_inner);
    let mut devices = match web.devices.load() {
        Ok(devices) => devices,
        Err(failed) => return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string()),
    };
    let count = match push::subscribe(&mut devices, &device.id, subscription) {
        Ok(count) => count,
        Err(refused) => return error(StatusCode::UNAUTHORIZED, refused.to_string()),
    };
    if let Err(failed) = web.devices.save(&devices) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string());
    }
    tracing::info!(device = %device.id, push_service = %origin(&body.endpoint), "push: subscribed");
    Json(json!({ "subscriptions": count })).into_response()
}

#[derive(Deserialize)]
pub(crate) struct UnsubscribeBody {
    endpoint: String,
}

/// `DELETE /api/push/subscription`: forgets one of the calling device's subscriptions.
pub(crate) async fn unsubscribe(
    State(web): State<Arc<Web>>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<UnsubscribeBody>,
) -> Response {
    let Some(device) = caller.device else {
        return error(StatusCode::UNAUTHORIZED, "pair this device first");
    };
    let _writing = web.writing.lock().unwrap_or_else(PoisonError::into_inner);
    let mut devices = match web.devices.load() {
        Ok(devices) => devices,
        Err(failed) => return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string()),
    };
    let removed = push::unsubscribe(&mut devices, &device.id, &body.endpoint);
    if removed {
        if let Err(failed) = web.devices.save(&devices) {
            return error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string());
        }
    }
    Json(json!({ "removed": removed })).into_response()
}

const SERVICE_WORKER: &str = include_str!("../assets/sw.js");
const MANIFEST: &str = include_str!("../assets/manifest.webmanifest");

/// `GET /sw.js`: the service worker (shows a push, opens the inbox on a tap).
pub(crate) async fn service_worker() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SERVICE_WORKER,
    )
        .into_response()
}

/// `GET /manifest.webmanifest`: what a phone's "Add to Home Screen" needs (iOS delivers push
/// to a home-screen web app only).
pub(crate) async fn manifest() -> Response {
    (
        [(header::CONTENT_TYPE, "application/manifest+json")],
        MANIFEST,
    )
        .into_response()
}
