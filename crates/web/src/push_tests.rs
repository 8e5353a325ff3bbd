use super::*;
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;

fn point() -> String {
    let secret = web_push_native::p256::SecretKey::from_slice(&[7; 32])
        .unwrap_or_else(|error| unreachable!("{error}"));
    Base64UrlUnpadded::encode_string(secret.public_key().to_encoded_point(false).as_bytes())
}

fn b64(bytes: &[u8]) -> String {
    Base64UrlUnpadded::encode_string(bytes)
}

#[test]
fn subscriptions_are_checked() {
    let good = point();
    let auth = b64(&[1; 16]);
    let mut off_curve = vec![4u8];
    off_curve.extend([1u8; 64]);
    let long = format!("https://push.example/{}", "a".repeat(ENDPOINT_MAX));
    // (endpoint, p256dh, auth, accepted)
    let table: Vec<(&str, String, String, Result<(), SubscriptionError>)> = vec![
        (
            "https://fcm.googleapis.com/fcm/send/abc",
            good.clone(),
            auth.clone(),
            Ok(()),
        ),
        (
            "https://web.push.apple.com:443/QX",
            good.clone(),
            auth.clone(),
            Ok(()),
        ),
        (
            "http://127.0.0.1:9/push",
            good.clone(),
            auth.clone(),
            Ok(()),
        ),
        ("http://127.9.9.9/push", good.clone(), auth.clone(), Ok(())),
        ("http://[::1]:8080/push", good.clone(), auth.clone(), Ok(())),
        (
            "http://localhost:9/push",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint(
                "must be https (plain http only to a loopback address such as 127.0.0.1)",
            )),
        ),
        (
            "http://10.0.0.1/push",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint(
                "must be https (plain http only to a loopback address such as 127.0.0.1)",
            )),
        ),
        (
            "ftp://push.example/x",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint("must be https")),
        ),
        (
            "https://user@push.example/x",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint("must not carry a user name")),
        ),
        (
            "/relative",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint("has no host")),
        ),
        (
            "https://push.example/a b",
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint("is not a URL")),
        ),
        (
            &long,
            good.clone(),
            auth.clone(),
            Err(SubscriptionError::Endpoint("is longer than 2048 bytes")),
        ),
        (
            "https://p.example/",
            b64(&[4; 64]),
            auth.clone(),
            Err(SubscriptionError::P256dh),
        ),
        (
            "https://p.example/",
            b64(&off_curve),
            auth.clone(),
            Err(SubscriptionError::P256dh),
        ),
        (
            "https://p.example/",
            "!!".to_owned(),
            auth.clone(),
            Err(SubscriptionError::P256dh),
        ),
        (
            "https://p.example/",
            good.clone(),
            b64(&[1; 15]),
            Err(SubscriptionError::Auth),
        ),
        (
            "https://p.example/",
            good.clone(),
            b64(&[1; 17]),
            Err(SubscriptionError::Auth),
        ),
        (
            "https://p.example/",
            good.clone(),
            format!("{auth}=="),
            Ok(()),
        ),
    ];
    for (endpoint, p256dh, auth, want) in table {
        let got = validate(endpoint, &p256dh, &auth, 5).map(|_| ());
        assert_eq!(got, want, "{endpoint} {p256dh} {auth}");
    }
}

fn subscription(endpoint: &str, at: u64) -> Subscription {
    Subscription {
        endpoint: endpoint.to_owned(),
        p256dh: point(),
        auth: b64(&[1; 16]),
        added_at_ms: at,
    }
}

#[test]
fn a_device_keeps_its_newest_subscriptions_and_revoking_it_drops_them() {
    let mut devices = Devices::default();
    let (phone, _) = devices.pair("phone", [1; 32], 0);
    let (tablet, _) = devices.pair("tablet", [2; 32], 0);
    for n in 0..6 {
        let count = subscribe(
            &mut devices,
            &phone.id,
            subscription(&format!("https://p/{n}"), n),
        );
        assert_eq!(count, Ok((n as usize + 1).min(SUBSCRIPTIONS_PER_DEVICE)));
    }
    let kept: Vec<String> = targets(&devices).into_iter().map(|s| s.endpoint).collect();
    assert_eq!(
        kept,
        ["https://p/2", "https://p/3", "https://p/4", "https://p/5"]
    );
    // The same endpoint again replaces, it is never kept twice; another device taking it
    // takes it away from the first.
    assert_eq!(
        subscribe(&mut devices, &phone.id, subscription("https://p/5", 9)),
        Ok(4)
    );
    assert_eq!(
        subscribe(&mut devices, &tablet.id, subscription("https://p/5", 10)),
        Ok(1)
    );
    assert_eq!(targets(&devices).len(), 4);
    assert_eq!(
        subscribe(&mut devices, "nobody", subscription("https://p/x", 1)),
        Err(SubscriptionError::UnknownDevice)
    );
    assert!(unsubscribe(&mut devices, &phone.id, "https://p/2"));
    assert!(!unsubscribe(&mut devices, &phone.id, "https://p/2"));
    assert!(
        !unsubscribe(&mut devices, &phone.id, "https://p/5"),
        "the tablet's now"
    );
    assert!(drop_endpoint(&mut devices, "https://p/3"));
    assert!(!drop_endpoint(&mut devices, "https://p/3"));
    let left: Vec<String> = targets(&devices).into_iter().map(|s| s.endpoint).collect();
    assert_eq!(left, ["https://p/4", "https://p/5"]);
    assert!(devices.revoke(&tablet.id).is_ok());
    let left: Vec<String> = targets(&devices).into_iter().map(|s| s.endpoint).collect();
    assert_eq!(
        left,
        ["https://p/4"],
        "the revoked device's subscription went with it"
    );
    assert!(devices.revoke(&phone.id).is_ok());
    assert!(targets(&devices).is_empty());
}

#[test]
fn verdicts_and_audiences() {
    for (status, want) in [
        (201, Verdict::Delivered),
        (200, Verdict::Delivered),
        (404, Verdict::Gone),
        (410, Verdict::Gone),
        (400, Verdict::Failed),
        (403, Verdict::Failed),
        (413, Verdict::Failed),
        (429, Verdict::Failed),
        (503, Verdict::Failed),
        (301, Verdict::Failed),
    ] {
        assert_eq!(verdict(status), want, "{status}");
    }
    for (endpoint, want) in [
        (
            "https://fcm.googleapis.com/fcm/send/x",
            Some("https://fcm.googleapis.com"),
        ),
        (
            "https://web.push.apple.com:443/x",
            Some("https://web.push.apple.com"),
        ),
        (
            "https://push.example:8443/x",
            Some("https://push.example:8443"),
        ),
        (
            "http://127.0.0.1:4711/push/a",
            Some("http://127.0.0.1:4711"),
        ),
        ("http://127.0.0.1:80/a", Some("http://127.0.0.1")),
        ("http://[::1]:9/a", Some("http://[::1]:9")),
        ("ftp://x/a", None),
        ("nonsense", None),
    ] {
        assert_eq!(audience(endpoint).as_deref(), want, "{endpoint}");
    }
}

fn session(id: &str, state: &str, request: Option<&str>, attached: u32) -> SessionSummary {
    let waiting = match request {
        Some(request) if request.starts_with('q') => serde_json::json!({
            "kind": "question", "id": request, "questions": ["Which branch?", "Why?"]
        }),
        Some(request) => serde_json::json!({
            "kind": "approval", "id": request, "tool": "shell", "argument": "echo hello"
        }),
        None => serde_json::Value::Null,
    };
    let json = serde_json::json!({
        "v": 1, "id": id, "name": format!("n-{id}"), "provider": "mock", "model": null, "cwd": "/",
        "state": state, "waiting_for": waiting,
        "tool": null, "tool_arg": null, "context_pct": null, "context_window_source": null,
        "tokens": null, "cost_usd": null, "cost_source": null, "waiting_since_ms": null,
        "failure_kind": null, "log": "x", "approval": "ask", "started_at_ms": 0, "turns": 2,
        "attached": attached, "worktree": null, "failure": null
    });
    serde_json::from_value(json).unwrap_or_else(|error| unreachable!("{error}"))
}

/// One step of a watch: at `now` the host's list (None: unreachable), and the pushes
/// expected, as (event, session, summary).
type Step = (
    u64,
    Option<Vec<SessionSummary>>,
    Vec<(&'static str, &'static str, &'static str)>,
);

#[test]
fn pushes_go_on_the_notify_edges_after_the_delay_once() {
    let ask = |id, request| session(id, "needs_input", Some(request), 0);
    let working = |id| session(id, "working", None, 0);
    let done = |id| session(id, "done", None, 0);
    let approve = ("needs_input", "s1", "echo hello");
    let table: Vec<(&str, u64, Vec<Step>)> = vec![
        (
            "what waited before the start is the baseline; a request after it is no edge",
            0,
            vec![
                (0, Some(vec![ask("s1", "r1")]), vec![]),
                (1000, Some(vec![ask("s1", "r1")]), vec![]),
                (2000, Some(vec![ask("s1", "r2")]), vec![]),
                (3000, Some(vec![working("s1")]), vec![]),
                (4000, Some(vec![ask("s1", "r3")]), vec![approve]),
                (5000, Some(vec![ask("s1", "r4")]), vec![]),
            ],
        ),
        (
            "a new session asking, then done",
            0,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![working("s1")]), vec![]),
                (2000, Some(vec![ask("s1", "r1")]), vec![approve]),
                (3000, Some(vec![working("s1")]), vec![]),
                (
                    4000,
                    Some(vec![done("s1")]),
                    vec![("done", "s1", "2 turn(s) done")],
                ),
                (5000, Some(vec![done("s1")]), vec![]),
            ],
        ),
        (
            "the state must last the delay, then goes once",
            5000,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![ask("s1", "r1")]), vec![]),
                (5999, Some(vec![ask("s1", "r1")]), vec![]),
                (6000, Some(vec![ask("s1", "r1")]), vec![approve]),
                (9000, Some(vec![ask("s1", "r1")]), vec![]),
            ],
        ),
        (
            "answered before the delay ran out: nothing",
            5000,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![ask("s1", "r1")]), vec![]),
                (3000, Some(vec![working("s1")]), vec![]),
                (9000, Some(vec![working("s1")]), vec![]),
            ],
        ),
        (
            "answered by the approval mode: the session never waited, only its end is pushed",
            0,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![working("s1")]), vec![]),
                (
                    2000,
                    Some(vec![done("s1")]),
                    vec![("done", "s1", "2 turn(s) done")],
                ),
            ],
        ),
        (
            "attached at the edge, or when due: nothing",
            1000,
            vec![
                (0, Some(vec![]), vec![]),
                (
                    1000,
                    Some(vec![session("s1", "needs_input", Some("r1"), 1)]),
                    vec![],
                ),
                (3000, Some(vec![ask("s1", "r1")]), vec![]),
                (4000, Some(vec![ask("s2", "r9")]), vec![]),
                (
                    4500,
                    Some(vec![session("s2", "needs_input", Some("r9"), 2)]),
                    vec![],
                ),
                (6000, Some(vec![ask("s2", "r9")]), vec![]),
            ],
        ),
        (
            "a host that cannot be listed keeps what was seen",
            0,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![ask("s1", "r1")]), vec![approve]),
                (2000, None, vec![]),
                (3000, Some(vec![ask("s1", "r1")]), vec![]),
            ],
        ),
        (
            "a question, and a session gone and back",
            0,
            vec![
                (0, Some(vec![]), vec![]),
                (
                    1000,
                    Some(vec![ask("s1", "q1")]),
                    vec![("needs_input", "s1", "Which branch? / Why?")],
                ),
                (2000, Some(vec![]), vec![]),
                (
                    3000,
                    Some(vec![ask("s1", "q1")]),
                    vec![("needs_input", "s1", "Which branch? / Why?")],
                ),
            ],
        ),
        (
            "idle, working, failed: never",
            0,
            vec![
                (0, Some(vec![]), vec![]),
                (1000, Some(vec![session("s1", "idle", None, 0)]), vec![]),
                (2000, Some(vec![working("s1")]), vec![]),
                (3000, Some(vec![session("s1", "failed", None, 0)]), vec![]),
            ],
        ),
    ];
    for (name, delay, steps) in table {
        let mut watch = Watch::new();
        for (at, list, want) in steps {
            let got: Vec<(String, String, String)> = watch
                .observe("local", list.as_deref(), at, delay)
                .into_iter()
                .map(|m| (m.event, m.session, m.summary))
                .collect();
            let want: Vec<(String, String, String)> = want
                .into_iter()
                .map(|(e, s, t)| (e.to_owned(), s.to_owned(), t.to_owned()))
                .collect();
            assert_eq!(got, want, "{name}: at {at}");
        }
    }
}

#[test]
fn a_push_is_short_and_on_one_line() {
    let mut summary = session("s1", "needs_input", Some("r1"), 0);
    summary.waiting_for = Some(WaitingFor::Approval {
        id: "r1".to_owned(),
        tool: "shell\u{1b}[31m".to_owned(),
        argument: format!("rm -rf /tmp/x\n\techo \u{7}done {}", "𝄞".repeat(500)),
    });
    summary.name = "name\r\nInjected: header".to_owned();
    let pushed = message("devbox", &summary);
    assert_eq!(pushed.tool.as_deref(), Some("shell[31m"));
    assert_eq!(pushed.name, "name Injected: header");
    assert!(
        pushed.summary.starts_with("rm -rf /tmp/x echo done 𝄞"),
        "{}",
        pushed.summary
    );
    assert_eq!(pushed.summary.chars().count(), SUMMARY_CHARS);
    assert!(pushed.summary.ends_with('…'));
    assert_eq!(pushed.urgency(), Urgency::High);
    let json = serde_json::to_vec(&pushed).unwrap_or_default();
    // The worst case (four-byte characters in every field) stays far under the 4 KB a push
    // service takes.
    summary.name = "𝄞".repeat(500);
    summary.provider = "𝄞".repeat(500);
    summary.id = "𝄞".repeat(500);
    let worst = serde_json::to_vec(&message(&"𝄞".repeat(500), &summary)).unwrap_or_default();
    assert!(
        json.len() < worst.len() && worst.len() < 2048,
        "{}",
        worst.len()
    );
    let done = message("local", &session("s2", "done", None, 0));
    assert_eq!(done.urgency(), Urgency::Normal);
    assert_eq!(done.tool, None);
    assert_eq!(clean("  a \n\n b  ", 10), "a b");
}
