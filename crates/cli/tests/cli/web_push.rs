//! `panewise web`'s Web Push, end to end: a fake push service on 127.0.0.1 written here, a
//! subscription registered through the web API with a paired device's token (as the page's
//! "Notify this device" does; headless Chromium has no push service to make a real one), a
//! mock session under `--approval ask` that asks. The push service receives the POST, checks
//! its VAPID `Authorization` (the JWT's ES256 signature against the key the server hands out,
//! `aud` the push service's origin) and decrypts the `aes128gcm` body with the subscription's
//! private key and auth secret: it names the session and the tool. A session whose approval
//! mode answered for itself pushes its end only. A 410 from the push service then drops the
//! subscription from the device's record.

use std::collections::HashSet;
use std::time::Duration;

use base64ct::{Base64UrlUnpadded, Encoding};
use panewise_api::{AgentState, WaitingFor};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use web_push_native::jwt_simple::prelude::{
    ECDSAP256PublicKeyLike, ES256PublicKey, NoCustomClaims, VerificationOptions,
};
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;
use web_push_native::p256::SecretKey;
use web_push_native::Auth;

use crate::daemon::{Daemon, DEADLINE};
use crate::web::{free_port, get, http, new_asking, paired, post, until_session};

/// One request the fake push service received.
#[derive(Debug)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(have, _)| have.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The fake push service: answers each request with the next status of `statuses` (the last
/// one again when they run out) and hands what it received on.
async fn push_service(
    statuses: Vec<u16>,
) -> (
    u16,
    mpsc::UnboundedReceiver<Received>,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sent, received) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut statuses = statuses.into_iter().peekable();
        let mut last = 201;
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // The head, then Content-Length bytes of body.
            let (head_end, length) = loop {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "the push request ended early: {got:?}");
                got.extend_from_slice(&buf[..n]);
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length:"))
                        .map_or(0, |value| value.trim().parse::<usize>().unwrap());
                    break (end + 4, length);
                }
            };
            while got.len() < head_end + length {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "the push body ended early");
                got.extend_from_slice(&buf[..n]);
            }
            let head = String::from_utf8(got[..head_end - 4].to_vec()).unwrap();
            let mut lines = head.split("\r\n");
            let request_line = lines.next().unwrap().to_owned();
            let headers = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
                .collect();
            if let Some(status) = statuses.next() {
                last = status;
            }
            let answer =
                format!("HTTP/1.1 {last} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            stream.write_all(answer.as_bytes()).await.unwrap();
            let _ = sent.send(Received {
                request_line,
                headers,
                body: got[head_end..head_end + length].to_vec(),
            });
        }
    });
    (port, received, task)
}

async fn next_push(received: &mut mpsc::UnboundedReceiver<Received>, what: &str) -> Received {
    tokio::time::timeout(DEADLINE, received.recv())
        .await
        .unwrap_or_else(|_| panic!("no push for {what} within {DEADLINE:?}"))
        .unwrap()
}

/// What the push service checks of a push: the VAPID token signed by `key` for `audience`,
/// the headers of RFC 8030/8291; the payload decrypted with the subscription's keys.
fn open_push(push: &Received, key: &str, audience: &str, secret: &SecretKey, auth: &[u8]) -> Value {
    assert!(
        push.request_line.starts_with("POST /push/phone-1 "),
        "{push:?}"
    );
    assert_eq!(
        push.header("Content-Encoding"),
        Some("aes128gcm"),
        "{push:?}"
    );
    assert_eq!(push.header("TTL"), Some("3600"), "{push:?}");
    let vapid = push
        .header("Authorization")
        .expect("a VAPID Authorization header");
    let rest = vapid.strip_prefix("vapid ").expect("the vapid scheme");
    let mut token = None;
    let mut public = None;
    for part in rest.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => token = Some(value),
            Some(("k", value)) => public = Some(value),
            _ => panic!("{vapid}"),
        }
    }
    assert_eq!(public, Some(key), "the key the server hands out signs");
    let verifier =
        ES256PublicKey::from_bytes(&Base64UrlUnpadded::decode_vec(key).unwrap()).unwrap();
    let options = VerificationOptions {
        allowed_audiences: Some(HashSet::from([audience.to_owned()])),
        ..VerificationOptions::default()
    };
    let claims = verifier
        .verify_token::<NoCustomClaims>(token.unwrap(), Some(options))
        .unwrap_or_else(|error| panic!("the VAPID token does not verify: {error}"));
    assert_eq!(claims.subject.as_deref(), Some("mailto:panewise@localhost"));
    assert!(claims.expires_at.is_some(), "{claims:?}");
    // Another audience is refused: the check above is a check.
    let elsewhere = VerificationOptions {
        allowed_audiences: Some(HashSet::from(["http://127.0.0.1".to_owned()])),
        ..VerificationOptions::default()
    };
    assert!(verifier
        .verify_token::<NoCustomClaims>(token.unwrap(), Some(elsewhere))
        .is_err());
    let plain = web_push_native::decrypt(push.body.clone(), secret, &Auth::clone_from_slice(auth))
        .expect("the payload decrypts with the subscription's keys");
    serde_json::from_slice(&plain).unwrap()
}

/// A DELETE or other JSON request to the web server as the page sends it; status and answer.
async fn send(port: u16, token: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let answer = http(
        port,
        &format!(
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        1 << 20,
        DEADLINE,
    )
    .await;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_push_reaches_a_fake_push_service_signed_and_decryptable() {
    let daemon = Daemon::start().await;
    // The first two pushes are taken, the third answered "gone".
    let (service, mut received, _service) = push_service(vec![201, 201, 410]).await;

    let port = free_port();
    let mut command = daemon.command();
    command.args(["web", "--port", &port.to_string()]);
    let (_web, token) = paired(command, port, "phone").await;

    // The VAPID key is made once, kept 0600 beside the devices, and handed out to devices.
    let key = get(port, &token, "/api/push/key").await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(Base64UrlUnpadded::decode_vec(&key).unwrap().len(), 65);
    let web_dir = daemon.dir.path().join("data/panewise/web");
    let key_file = web_dir.join("vapid.key");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&key_file).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "{}", key_file.display());

    // The browser's side of the subscription, as `PushSubscription.toJSON()` gives it.
    let secret = SecretKey::from_slice(&[7u8; 32]).unwrap();
    let auth = [5u8; 16];
    let endpoint = format!("http://127.0.0.1:{service}/push/phone-1");
    let subscription = json!({
        "endpoint": endpoint,
        "expirationTime": null,
        "keys": {
            "p256dh": Base64UrlUnpadded::encode_string(
                secret.public_key().to_encoded_point(false).as_bytes()
            ),
            "auth": Base64UrlUnpadded::encode_string(&auth),
        }
    });
    let kept = post(
        port,
        &token,
        "/api/push/subscription",
        &subscription.to_string(),
    )
    .await;
    assert_eq!(kept, json!({ "subscriptions": 1 }));
    // An endpoint over plain http to anything but loopback is refused.
    let (status, refused) = send(
        port,
        &token,
        "POST",
        "/api/push/subscription",
        &json!({ "endpoint": "http://push.example/x", "keys": subscription["keys"] }).to_string(),
    )
    .await;
    assert_eq!(status, 400, "{refused}");

    // A session whose approval mode answers its tool call itself never waits: its end is
    // pushed, nothing before it.
    let out = daemon.run(&[
        "new",
        "--name",
        "trusted",
        "--approval",
        "full-access",
        "run the tool",
    ]);
    assert!(out.status.success(), "{out:?}");
    let audience = format!("http://127.0.0.1:{service}");
    let first = next_push(&mut received, "the trusted session's end").await;
    let payload = open_push(&first, &key, &audience, &secret, &auth);
    assert_eq!(
        (&payload["event"], &payload["name"]),
        (&json!("done"), &json!("trusted")),
        "{payload}"
    );

    // A mock session asks: the push names the session and the tool.
    let asker = new_asking(&daemon, "pushed");
    let waiting = until_session(&daemon, &asker, |s| s.state == AgentState::NeedsInput).await;
    let Some(WaitingFor::Approval {
        id: request, tool, ..
    }) = waiting.waiting_for.clone()
    else {
        panic!("{waiting:?}");
    };
    let push = next_push(&mut received, "the approval").await;
    assert_eq!(push.header("Urgency"), Some("high"), "{push:?}");
    let payload = open_push(&push, &key, &audience, &secret, &auth);
    assert_eq!(payload["v"], json!(1), "{payload}");
    assert_eq!(payload["event"], json!("needs_input"), "{payload}");
    assert_eq!(payload["session"], json!(asker), "{payload}");
    assert_eq!(payload["name"], json!("pushed"), "{payload}");
    assert_eq!(payload["host"], json!("local"), "{payload}");
    assert_eq!(payload["tool"], json!(tool), "{payload}");
    assert_eq!(payload["summary"], json!("echo hello"), "{payload}");
    // Nothing secret rides along: no token, no pairing code, no endpoint.
    let text = payload.to_string();
    assert!(!text.contains(&token) && !text.contains("/push/"), "{text}");

    // Approved (over the API): the session finishes; that push is answered 410, and the
    // subscription is gone from the device's record.
    let answer = post(
        port,
        &token,
        &format!("/api/sessions/{asker}/approve"),
        &json!({ "request": request, "decision": "allow_once" }).to_string(),
    )
    .await;
    assert!(answer.get("error").is_none(), "{answer}");
    let done = next_push(&mut received, "the end of the turn").await;
    assert_eq!(done.header("Urgency"), Some("normal"), "{done:?}");
    let payload = open_push(&done, &key, &audience, &secret, &auth);
    assert_eq!(payload["event"], json!("done"), "{payload}");
    let devices_file = web_dir.join("devices.json");
    let until = std::time::Instant::now() + DEADLINE;
    loop {
        let devices: Value =
            serde_json::from_slice(&std::fs::read(&devices_file).unwrap()).unwrap();
        let subscriptions = &devices["devices"][0]["subscriptions"];
        if subscriptions.is_null() {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "still subscribed after a 410: {devices}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Already gone: the page's own unsubscribe finds nothing to remove.
    let (status, removed) = send(
        port,
        &token,
        "DELETE",
        "/api/push/subscription",
        &json!({ "endpoint": endpoint }).to_string(),
    )
    .await;
    assert_eq!((status, removed), (200, json!({ "removed": false })));
}
