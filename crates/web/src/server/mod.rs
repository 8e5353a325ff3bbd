//! The shell: the axum router over [`Web`] (the pairing code, the devices, the daemon), the
//! guard as a middleware in front of every route, and the listeners. Every decision is made
//! by the pure modules; what is here is reading headers, calling the daemon and writing
//! responses.

mod daemon;
mod handlers;
mod listen;
mod push;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use daemon::{
    list_stream, subscription, Daemon, DaemonError, ListEvent, ListStream, LocalDaemon, LogEvent,
    CALL_DEADLINE, LOCAL_HOST,
};
pub use listen::{check_bind, serve, BindError, Listen};
pub use push::{watch as watch_pushes, DelaySource, Push, PushError, SEND_TIMEOUT, WATCH_EVERY};

use crate::guard::{self, Credential, Facts};
use crate::pairing::{Device, Devices, PairingCode};

/// The clock the shell reads: ms since the epoch.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;
/// The randomness the shell draws: fills the buffer, or says why it could not.
pub type Random = Arc<dyn Fn(&mut [u8]) -> Result<(), String> + Send + Sync>;

/// The OS's clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    })
}

/// The OS's randomness (getrandom).
pub fn system_random() -> Random {
    Arc::new(|buf: &mut [u8]| getrandom::fill(buf).map_err(|error| error.to_string()))
}

/// Where the paired devices are kept: a JSON file (0600), read on every check so that
/// `panewise web revoke` from another process takes effect at once; or memory (tests).
#[derive(Debug)]
pub enum DeviceStore {
    /// A file.
    File(PathBuf),
    /// Memory only.
    Memory(Mutex<Devices>),
}

impl DeviceStore {
    /// The devices now.
    pub fn load(&self) -> Result<Devices, std::io::Error> {
        match self {
            DeviceStore::File(path) => match std::fs::read(path) {
                Ok(bytes) => serde_json::from_slice(&bytes)
                    .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error)),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Ok(Devices::default())
                }
                Err(error) => Err(error),
            },
            DeviceStore::Memory(devices) => Ok(devices
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()),
        }
    }

    /// Keeps `devices` (the file written whole, mode 0600, then renamed into place).
    pub fn save(&self, devices: &Devices) -> Result<(), std::io::Error> {
        match self {
            DeviceStore::File(path) => {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let temporary = path.with_extension("json.new");
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&temporary)?;
                file.write_all(
                    &serde_json::to_vec_pretty(devices).map_err(std::io::Error::other)?,
                )?;
                file.sync_all()?;
                std::fs::rename(&temporary, path)
            }
            DeviceStore::Memory(memory) => {
                *memory.lock().unwrap_or_else(PoisonError::into_inner) = devices.clone();
                Ok(())
            }
        }
    }
}

/// Everything the handlers share.
pub struct Web {
    pub(crate) daemon: Arc<dyn Daemon>,
    pub(crate) allowed: Vec<String>,
    pub(crate) pairing: Mutex<PairingCode>,
    pub(crate) devices: DeviceStore,
    pub(crate) clock: Clock,
    pub(crate) random: Random,
    /// When the daemon last answered, and whether the last try failed.
    pub(crate) heard: Mutex<(Option<u64>, bool)>,
    /// The Web Push sender, when push is set up.
    pub(crate) push: Option<Arc<Push>>,
    /// Held while the device store is read, changed and written back, so two changes made
    /// at once (two subscriptions, a subscription and a push service's "gone") both stay.
    pub(crate) writing: Mutex<()>,
}

impl Web {
    /// A server state: `allowed` the Host allow-list, a fresh pairing code drawn from
    /// `random` at `clock`'s now.
    pub fn new(
        daemon: Arc<dyn Daemon>,
        allowed: Vec<String>,
        devices: DeviceStore,
        clock: Clock,
        random: Random,
    ) -> Result<Web, String> {
        let mut code = [0u8; 16];
        random(&mut code)?;
        Ok(Web {
            daemon,
            allowed,
            pairing: Mutex::new(PairingCode::issue(code, clock())),
            devices,
            clock,
            random,
            heard: Mutex::new((None, false)),
            push: None,
            writing: Mutex::new(()),
        })
    }

    /// The same server, sending Web Push with `push` (the `/api/push` routes answer 503
    /// without it).
    pub fn with_push(mut self, push: Push) -> Web {
        self.push = Some(Arc::new(push));
        self
    }

    /// The pairing code to print (in the URL fragment, never the query).
    pub fn pairing_code(&self) -> String {
        self.pairing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .code()
            .to_owned()
    }

    /// Where the paired devices are kept (`panewise web revoke` writes the same store).
    pub fn devices(&self) -> &DeviceStore {
        &self.devices
    }

    /// The device holding `token`, if it is still paired.
    pub(crate) fn device(&self, token: &str) -> Option<Device> {
        match self.devices.load() {
            Ok(devices) => devices.verify(token).cloned(),
            Err(error) => {
                tracing::warn!(%error, "cannot read the paired devices");
                None
            }
        }
    }

    pub(crate) fn note_daemon(&self, ok: bool) {
        let mut heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        if ok {
            *heard = (Some((self.clock)()), false);
        } else {
            heard.1 = true;
        }
    }
}

/// Who called: the device whose token came with the request, on a device route.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) device: Option<Device>,
    pub(crate) token: Option<String>,
}

/// The bearer token of `headers`, when the Authorization header is one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The guard, in front of every route ([`guard::check`]).
async fn guard_layer(State(web): State<Arc<Web>>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let token = bearer(headers).map(str::to_owned);
    let device = token.as_deref().and_then(|token| web.device(token));
    let credential = match (&token, &device) {
        (None, _) => Credential::Missing,
        (Some(_), None) => Credential::Invalid,
        (Some(_), Some(_)) => Credential::Device,
    };
    // HTTP/1.1 sends Host; an absolute-form request target carries it in the URI instead.
    let host =
        text(headers, header::HOST).or_else(|| request.uri().authority().map(|a| a.as_str()));
    let facts = Facts {
        method: request.method().as_str(),
        path: request.uri().path(),
        host,
        origin: text(headers, header::ORIGIN),
        content_type: text(headers, header::CONTENT_TYPE),
        credential,
    };
    let mut response = match guard::check(&facts, &web.allowed) {
        Ok(_) => {
            request.extensions_mut().insert(Caller { device, token });
            next.run(request).await
        }
        Err(refusal) => {
            let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
            (
                status,
                axum::Json(serde_json::json!({ "error": refusal.text() })),
            )
                .into_response()
        }
    };
    secure_headers(response.headers_mut());
    response
}

/// The strict policy: scripts and styles from this origin only (no inline script, no eval),
/// no frames, no referrer, no caching of anything (the API's answers are secrets).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; manifest-src 'self'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn secure_headers(headers: &mut HeaderMap) {
    let set = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// The router: every route of [`crate::routes::ROUTES`], behind the guard.
pub fn router(web: Arc<Web>) -> Router {
    use axum::routing::post;
    Router::new()
        .route("/", get(handlers::page))
        .route("/app.js", get(handlers::script))
        .route("/app.css", get(handlers::style))
        .route("/sw.js", get(push::service_worker))
        .route("/manifest.webmanifest", get(push::manifest))
        .route("/api/pair", post(handlers::pair))
        .route("/api/inbox", get(handlers::inbox))
        .route(
            "/api/sessions",
            get(handlers::sessions).post(handlers::create),
        )
        .route("/api/sessions/{id}/transcript", get(handlers::transcript))
        .route("/api/sessions/{id}/approve", post(handlers::approve))
        .route("/api/sessions/{id}/answer", post(handlers::answer))
        .route("/api/sessions/{id}/prompt", post(handlers::prompt))
        .route("/api/sessions/{id}/interrupt", post(handlers::interrupt))
        .route("/api/sessions/{id}/stop", post(handlers::stop))
        .route("/api/devices", get(handlers::devices))
        .route("/api/push/key", get(push::key))
        .route(
            "/api/push/subscription",
            post(push::subscribe).delete(push::unsubscribe),
        )
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&web),
            guard_layer,
        ))
        .with_state(web)
}
