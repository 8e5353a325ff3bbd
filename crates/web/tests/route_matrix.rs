//! The route matrix: Host × Origin × method and route × Content-Type × credential against the
//! real router (tower `oneshot`, a fake daemon that counts its calls). No request without a
//! paired device's token reaches the daemon or succeeds on a device route; no request from a
//! foreign or absent Origin changes anything; no request under another Host is answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use panewise_api::Method;
use panewise_web::guard::allowed_hosts;
use panewise_web::pairing::Devices;
use panewise_web::routes::{lookup, Lookup};
use panewise_web::server::{router, Daemon, DaemonError, DeviceStore, LogEvent, Push, Web};
use tokio::sync::mpsc;
use tower::ServiceExt;

const PORT: u16 = 7455;

#[derive(Default)]
struct FakeDaemon {
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Daemon for FakeDaemon {
    async fn call(
        &self,
        _client: &str,
        method: Method,
        _params: serde_json::Value,
    ) -> Result<serde_json::Value, DaemonError> {
        if method != Method::List {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
        Ok(match method {
            Method::List => serde_json::json!({ "sessions": [] }),
            _ => serde_json::json!({ "ok": true }),
        })
    }

    async fn subscribe(
        &self,
        _client: &str,
        _session: &str,
    ) -> Result<mpsc::Receiver<LogEvent>, DaemonError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (events, receiver) = mpsc::channel(4);
        let _ = events.try_send(LogEvent::Ended);
        Ok(receiver)
    }
}

fn web(daemon: Arc<FakeDaemon>) -> (Arc<Web>, String) {
    let mut devices = Devices::default();
    let (_device, token) = devices.pair("phone", [9; 32], 0);
    let web = Web::new(
        daemon,
        allowed_hosts(PORT, &[]),
        DeviceStore::Memory(Mutex::new(devices)),
        Arc::new(|| 1_000),
        Arc::new(|buf: &mut [u8]| {
            buf.fill(4);
            Ok(())
        }),
    )
    .unwrap()
    .with_push(Push::new(&[3; 32], "mailto:test@example.com".to_owned()).unwrap());
    (Arc::new(web), token)
}

/// A browser's subscription body: a real P-256 point and a 16-byte auth secret.
fn subscription_body() -> String {
    use base64ct::{Base64UrlUnpadded, Encoding};
    use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;
    let secret = web_push_native::p256::SecretKey::from_slice(&[7; 32]).unwrap();
    serde_json::json!({
        "endpoint": "https://push.example/send/abc",
        "keys": {
            "p256dh": Base64UrlUnpadded::encode_string(
                secret.public_key().to_encoded_point(false).as_bytes()
            ),
            "auth": Base64UrlUnpadded::encode_string(&[5; 16]),
        }
    })
    .to_string()
}

/// How many push subscriptions the store holds.
fn subscriptions(web: &Web) -> usize {
    web.devices()
        .load()
        .unwrap()
        .devices
        .iter()
        .map(|device| device.subscriptions.len())
        .sum()
}

#[derive(Clone, Copy, Debug)]
enum Cred {
    None,
    Wrong,
    NotBearer,
    Valid,
}

#[tokio::test]
async fn no_request_without_a_device_token_allowed_host_and_origin_succeeds() {
    let daemon = Arc::new(FakeDaemon::default());
    let (web, token) = web(Arc::clone(&daemon));
    let app = router(Arc::clone(&web));
    let subscribe = subscription_body();
    let hosts: [(Option<&str>, bool); 5] = [
        (Some("127.0.0.1:7455"), true),
        (Some("localhost:7455"), true),
        (Some("evil.test:7455"), false),
        (Some("127.0.0.1:8080"), false),
        (None, false),
    ];
    let origins: [(Option<&str>, bool); 5] = [
        (Some("http://127.0.0.1:7455"), true),
        (None, false),
        (Some("http://127.0.0.1:8080"), false),
        (Some("null"), false),
        (Some("http://evil.test:7455"), false),
    ];
    // (method, path, body, device route)
    let routes: [(&str, &str, &str, bool); 12] = [
        ("GET", "/api/inbox", "", true),
        ("GET", "/api/sessions", "", true),
        ("GET", "/api/devices", "", true),
        ("GET", "/api/sessions/s1/transcript", "", true),
        (
            "POST",
            "/api/sessions/s1/approve",
            r#"{"request":"r1","decision":"allow_once"}"#,
            true,
        ),
        ("POST", "/api/sessions/s1/stop", "{}", true),
        ("POST", "/api/sessions", r#"{"prompt":"x"}"#, true),
        ("DELETE", "/api/sessions/s1/stop", "{}", true),
        ("PUT", "/api/sessions/s1/prompt", r#"{"text":"x"}"#, true),
        ("GET", "/api/push/key", "", true),
        ("POST", "/api/push/subscription", subscribe.as_str(), true),
        (
            "DELETE",
            "/api/push/subscription",
            r#"{"endpoint":"https://push.example/send/abc"}"#,
            true,
        ),
    ];
    let content_types: [(Option<&str>, bool); 3] = [
        (Some("application/json"), true),
        (Some("text/plain"), false),
        (None, false),
    ];
    let creds = [Cred::None, Cred::Wrong, Cred::NotBearer, Cred::Valid];
    let mut cases = 0;
    let mut succeeded = 0;
    for (host, host_ok) in hosts {
        for (origin, origin_ok) in origins {
            for (method, path, body, _device) in routes {
                for (content_type, json_ok) in content_types {
                    for cred in creds {
                        let reads = method == "GET";
                        // Reads carry neither Origin nor body variations that matter: skip
                        // duplicates so each case is distinct.
                        if reads && (content_type.is_some() || origin.is_some() && !origin_ok) {
                            continue;
                        }
                        cases += 1;
                        let mut request = Request::builder().method(method).uri(path);
                        if let Some(host) = host {
                            request = request.header(header::HOST, host);
                        }
                        if let Some(origin) = origin {
                            request = request.header(header::ORIGIN, origin);
                        }
                        if let Some(content_type) = content_type {
                            request = request.header(header::CONTENT_TYPE, content_type);
                        }
                        request = match cred {
                            Cred::None => request,
                            Cred::Wrong => request.header(header::AUTHORIZATION, "Bearer pw1_00"),
                            Cred::NotBearer => {
                                request.header(header::AUTHORIZATION, format!("Basic {token}"))
                            }
                            Cred::Valid => {
                                request.header(header::AUTHORIZATION, format!("Bearer {token}"))
                            }
                        };
                        let before = daemon.calls.load(Ordering::SeqCst);
                        let subscribed = subscriptions(&web);
                        let response = app
                            .clone()
                            .oneshot(request.body(Body::from(body.to_owned())).unwrap())
                            .await
                            .unwrap();
                        let after = daemon.calls.load(Ordering::SeqCst);
                        let status = response.status();
                        let what = format!(
                            "{method} {path} host={host:?} origin={origin:?} type={content_type:?} cred={cred:?}: {status}"
                        );
                        assert!(
                            response.headers().get(header::SET_COOKIE).is_none(),
                            "{what}"
                        );
                        assert!(
                            response
                                .headers()
                                .get(header::CONTENT_SECURITY_POLICY)
                                .is_some(),
                            "{what}"
                        );
                        let known_method = matches!(lookup(method, path), Lookup::Found(_));
                        let should = host_ok
                            && known_method
                            && matches!(cred, Cred::Valid)
                            && (reads || origin_ok && json_ok);
                        assert_eq!(status.is_success(), should, "{what}");
                        if !should {
                            assert_eq!(after, before, "nothing reached the daemon: {what}");
                            assert_eq!(subscriptions(&web), subscribed, "no subscription: {what}");
                        } else {
                            succeeded += 1;
                        }
                        if !host_ok {
                            assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{what}");
                        }
                    }
                }
            }
        }
    }
    assert!(cases >= 40, "{cases} cases");
    assert!(succeeded > 0);
}

#[tokio::test]
async fn the_page_is_public_under_an_allowed_host_only_and_pairing_needs_the_code() {
    let daemon = Arc::new(FakeDaemon::default());
    let (web, _token) = web(Arc::clone(&daemon));
    let code = web.pairing_code();
    let app = router(Arc::clone(&web));
    // (method, path, Host, Origin, body, status)
    type Row<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        String,
        StatusCode,
    );
    let table: [Row<'_>; 11] = [
        (
            "GET",
            "/sw.js",
            Some("127.0.0.1:7455"),
            None,
            String::new(),
            StatusCode::OK,
        ),
        (
            "GET",
            "/manifest.webmanifest",
            Some("localhost:7455"),
            None,
            String::new(),
            StatusCode::OK,
        ),
        (
            "GET",
            "/sw.js",
            Some("evil.test:7455"),
            None,
            String::new(),
            StatusCode::MISDIRECTED_REQUEST,
        ),
        (
            "GET",
            "/",
            Some("127.0.0.1:7455"),
            None,
            String::new(),
            StatusCode::OK,
        ),
        (
            "GET",
            "/app.js",
            Some("localhost:7455"),
            None,
            String::new(),
            StatusCode::OK,
        ),
        (
            "GET",
            "/",
            Some("evil.test:7455"),
            None,
            String::new(),
            StatusCode::MISDIRECTED_REQUEST,
        ),
        (
            "GET",
            "/app.css",
            Some("rebind.example:7455"),
            None,
            String::new(),
            StatusCode::MISDIRECTED_REQUEST,
        ),
        (
            "POST",
            "/api/pair",
            Some("127.0.0.1:7455"),
            None,
            format!(r#"{{"code":"{code}"}}"#),
            StatusCode::FORBIDDEN,
        ),
        (
            "POST",
            "/api/pair",
            Some("127.0.0.1:7455"),
            Some("http://127.0.0.1:8080"),
            format!(r#"{{"code":"{code}"}}"#),
            StatusCode::FORBIDDEN,
        ),
        (
            "POST",
            "/api/pair",
            Some("127.0.0.1:7455"),
            Some("http://127.0.0.1:7455"),
            r#"{"code":"0000"}"#.to_owned(),
            StatusCode::FORBIDDEN,
        ),
        (
            "POST",
            "/api/pair",
            Some("127.0.0.1:7455"),
            Some("http://127.0.0.1:7455"),
            format!(r#"{{"code":"{code}","device":"phone"}}"#),
            StatusCode::OK,
        ),
    ];
    for (method, path, host, origin, body, want) in table {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(host) = host {
            request = request.header(header::HOST, host);
        }
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        let response = app
            .clone()
            .oneshot(request.body(Body::from(body.clone())).unwrap())
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            want,
            "{method} {path} {host:?} {origin:?} {body}"
        );
    }
    // The code is single use: the same exchange again is refused.
    let again = Request::builder()
        .method("POST")
        .uri("/api/pair")
        .header(header::HOST, "127.0.0.1:7455")
        .header(header::ORIGIN, "http://127.0.0.1:7455")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(format!(r#"{{"code":"{code}"}}"#)))
        .unwrap();
    let response = app.oneshot(again).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(daemon.calls.load(Ordering::SeqCst), 0);
}
