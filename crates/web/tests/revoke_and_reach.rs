//! Two promises of the shell against the real router: a revoked device's open transcript
//! stream closes (and its token is refused) at once; a daemon that cannot be reached is said
//! (`reach: unreachable`), never shown as an empty, live list; every host's requests are in
//! one inbox and a host that is down is said.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use panewise_api::Method;
use panewise_web::guard::allowed_hosts;
use panewise_web::pairing::Devices;
use panewise_web::server::{router, Daemon, DaemonError, DeviceStore, LogEvent, Web};
use tokio::sync::mpsc;
use tower::ServiceExt;

/// A daemon whose log subscriptions stay open (their senders kept), or that is unreachable.
struct Fake {
    reachable: bool,
    open: Mutex<Vec<mpsc::Sender<LogEvent>>>,
}

#[async_trait::async_trait]
impl Daemon for Fake {
    async fn call(
        &self,
        _client: &str,
        _method: Method,
        _params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        if self.reachable {
            Ok(serde_json::json!({ "sessions": [] }))
        } else {
            Err(DaemonError::unreachable("cannot reach the panewise daemon"))
        }
    }

    async fn subscribe(
        &self,
        _client: &str,
        _session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
        let (events, receiver) = mpsc::channel(4);
        self.open.lock().unwrap().push(events);
        Ok(receiver)
    }
}

fn serve(reachable: bool) -> (axum::Router, Arc<Web>, String, String) {
    let mut devices = Devices::default();
    let (device, token) = devices.pair("phone", [5; 32], 0);
    let web = Arc::new(
        Web::new(
            Arc::new(Fake {
                reachable,
                open: Mutex::default(),
            }),
            allowed_hosts(7455, &[]),
            DeviceStore::Memory(Mutex::new(devices)),
            Arc::new(|| 1_000),
            Arc::new(|buf: &mut [u8]| {
                buf.fill(1);
                Ok(())
            }),
        )
        .unwrap(),
    );
    (router(Arc::clone(&web)), web, token, device.id)
}

fn get(path: &str, token: &str) -> Request<Body> {
    Request::builder()
        .uri(path)
        .header(header::HOST, "127.0.0.1:7455")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn a_revoked_device_s_stream_closes_and_its_token_is_refused() {
    let (app, web, token, id) = serve(true);
    let response = app
        .clone()
        .oneshot(get("/api/sessions/s1/transcript", &token))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut devices = web_devices(&web);
    devices.revoke(&id).unwrap();
    web_store(&web, &devices);
    // The stream ends (keep-alive comments aside) within a second of the revocation.
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(frame) = body.frame().await {
            frame.unwrap();
        }
    })
    .await;
    assert!(ended.is_ok(), "the revoked device's stream is still open");
    let refused = app.oneshot(get("/api/inbox", &token)).await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_unreachable_daemon_is_said_not_shown_as_an_empty_list() {
    let (app, _web, token, _id) = serve(false);
    let response = app.oneshot(get("/api/inbox", &token)).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let said: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(said["reach"], "unreachable", "{said}");
    assert!(
        said["error"].as_str().unwrap().contains("cannot reach"),
        "{said}"
    );
}

fn web_devices(web: &Web) -> Devices {
    web.devices().load().unwrap()
}

fn web_store(web: &Web, devices: &Devices) {
    web.devices().save(devices).unwrap();
}

/// A daemon that reaches this machine and two hosts: `devbox` with a waiting session, `gone`
/// down.
struct Hosts;

fn waiting(id: &str, since: u64) -> panewise_api::SessionSummary {
    serde_json::from_value(serde_json::json!({
        "v": 1, "id": id, "name": id, "provider": "mock", "model": null, "cwd": "/",
        "state": "needs_input",
        "waiting_for": {"kind": "approval", "id": format!("r-{id}"), "tool": "shell", "argument": "ls"},
        "tool": null, "tool_arg": null, "context_pct": null, "context_window_source": null,
        "tokens": null, "cost_usd": null, "cost_source": null, "waiting_since_ms": since,
        "failure_kind": null, "log": "x", "approval": "ask", "started_at_ms": 0, "turns": 0,
        "attached": 0, "worktree": null, "failure": null
    }))
    .unwrap()
}

#[async_trait::async_trait]
impl Daemon for Hosts {
    async fn call(
        &self,
        _client: &str,
        _method: Method,
        _params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        Ok(serde_json::json!({ "sessions": [] }))
    }

    async fn list_hosts(
        &self,
    ) -> Vec<(
        String,
        Result<Vec<panewise_api::SessionSummary>, DaemonError>,
    )> {
        vec![
            ("local".to_owned(), Ok(vec![waiting("a", 20)])),
            ("devbox".to_owned(), Ok(vec![waiting("devbox:b", 10)])),
            (
                "gone".to_owned(),
                Err(DaemonError::unreachable("gone: ssh: connection refused")),
            ),
        ]
    }

    async fn subscribe(
        &self,
        _client: &str,
        _session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
        Err(DaemonError::unreachable("no logs here"))
    }
}

#[tokio::test]
async fn every_host_s_requests_are_in_one_inbox_and_a_host_that_is_down_is_said() {
    let (_, token) = Devices::default().pair("phone", [5; 32], 0);
    let mut devices = Devices::default();
    let _ = devices.pair("phone", [5; 32], 0);
    let web = Arc::new(
        Web::new(
            Arc::new(Hosts),
            allowed_hosts(7455, &[]),
            DeviceStore::Memory(Mutex::new(devices)),
            Arc::new(|| 1_000),
            Arc::new(|buf: &mut [u8]| {
                buf.fill(1);
                Ok(())
            }),
        )
        .unwrap(),
    );
    let app = router(web);
    let body = |response: axum::response::Response| async move {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
    };
    let inbox = body(
        app.clone()
            .oneshot(get("/api/inbox", &token))
            .await
            .unwrap(),
    )
    .await;
    let items: Vec<(&str, &str)> = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["host"].as_str().unwrap(),
                item["session"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(items, [("devbox", "devbox:b"), ("local", "a")], "{inbox}");
    assert_eq!(inbox["reach"], "live", "{inbox}");
    assert_eq!(
        inbox["hosts"],
        serde_json::json!([
            {"host": "local", "error": null},
            {"host": "devbox", "error": null},
            {"host": "gone", "error": "gone: ssh: connection refused"},
        ])
    );
    let sessions = body(app.oneshot(get("/api/sessions", &token)).await.unwrap()).await;
    let hosts: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["local", "devbox"], "{sessions}");
}
