//! `panewise web` in a real browser: Debian's headless `chromium`, driven over WebDriver by
//! `chromedriver` (fantoccini), against a real daemon running the offline mock. `.ci/run`
//! installs both; without them this test fails, saying what to install (it never skips).
//!
//! One browser serves every case, in order: pairing through the URL fragment; the layout at
//! 390×844 (no horizontal overflow, action buttons at least 44 px and 16 px apart); a page
//! on another loopback port that POSTs to the API changes nothing; a mock session under
//! `--approval ask` is approved from the page, finishes, and its log names the web client;
//! three sessions' approvals answered from the page; five approvals queued in one session (the
//! mock's `five-approvals`) answered from the page as they come; a page under a name rebound to
//! 127.0.0.1 (`--host-resolver-rules`) is refused; a stopped daemon is said within 30 s with
//! every action disabled.

use std::io::BufRead;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use panewise_api::{AgentState, ListParams, ListResult, Method, SessionSummary, WaitingFor};
use serde_json::{json, Value};

use crate::daemon::{Daemon, DEADLINE};

/// A process of this test, killed when the test ends however it ends.
pub(crate) struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn which(program: &str) -> std::path::PathBuf {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "{program} is not installed: the browser test of `panewise web` needs Debian's \
             chromium and chromium-driver (`apt-get install -y chromium chromium-driver`; \
             .ci/run installs them)"
        )
    })
}

/// chromedriver on a free port, and a headless chromium session at 390×844 that maps
/// `evil.test` to 127.0.0.1 (what a rebound name does).
async fn browser() -> (Owned, Client) {
    let chromium = which("chromium");
    let port = free_port();
    let driver = Owned(
        Command::new(which("chromedriver"))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": chromium,
            // A desktop window is at least 500 px wide; the phone's viewport is emulated.
            "mobileEmulation": { "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 3.0 } },
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=390,844", "--host-resolver-rules=MAP evil.test 127.0.0.1",
            ],
        }),
    );
    let until = Instant::now() + DEADLINE;
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return (driver, client),
            Err(error) => assert!(Instant::now() < until, "no chromedriver session: {error}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `script` (a JS expression returning a value) until `done` holds; the last value.
async fn until_js(
    client: &Client,
    what: &str,
    script: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let until = Instant::now() + DEADLINE;
    loop {
        let value = client
            .execute(&format!("return {script};"), vec![])
            .await
            .unwrap();
        if done(&value) {
            return value;
        }
        assert!(Instant::now() < until, "{what}: still {value}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the element `css` finds once it is there and enabled (found again after the page
/// rebuilt it).
async fn click(client: &Client, css: &str) {
    let until = Instant::now() + DEADLINE;
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await {
            if element.click().await.is_ok() {
                return;
            }
        }
        assert!(Instant::now() < until, "nothing to click at {css}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The daemon's summary of session `id`, polled until `done` holds.
pub(crate) async fn until_session(
    daemon: &Daemon,
    id: &str,
    done: impl Fn(&SessionSummary) -> bool,
) -> SessionSummary {
    let client = daemon.connect("web-test").await;
    let until = Instant::now() + DEADLINE;
    loop {
        let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
        if let Some(found) = list.sessions.into_iter().find(|s| s.id == id) {
            if done(&found) {
                return found;
            }
            assert!(Instant::now() < until, "session {id}: {found:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn new_asking(daemon: &Daemon, name: &str) -> String {
    let out = daemon.run(&["new", "--name", name, "--approval", "ask", "run the tool"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned()
}

fn request_of(session: &SessionSummary) -> String {
    match &session.waiting_for {
        Some(WaitingFor::Approval { id, .. }) => id.clone(),
        other => panic!("{} waits for {other:?}", session.name),
    }
}

/// A page on another loopback port whose script POSTs an approval to the API, the ways a
/// foreign page can (a `no-cors` text/plain POST, a CORS JSON POST), then sets its title.
fn foreign_page(port: u16, session: &str, request: &str) -> (std::thread::JoinHandle<()>, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let own = listener.local_addr().unwrap().port();
    let target = format!("http://127.0.0.1:{port}/api/sessions/{session}/approve");
    let body = json!({ "request": request, "decision": "allow_once" }).to_string();
    let html = format!(
        "<!doctype html><title>loading</title><script>\
         const body = {body:?};\
         fetch({target:?}, {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body}})\
           .catch(() => null)\
           .then(() => fetch({target:?}, {{method: 'POST', headers: {{'Content-Type': 'application/json'}}, body}}))\
           .catch(() => null)\
           .finally(() => {{ document.title = 'sent'; }});\
         </script>"
    );
    let server = std::thread::spawn(move || {
        // One page load (and a favicon request at most).
        for stream in listener.incoming().take(2) {
            let Ok(mut stream) = stream else { return };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
            let _ = std::io::Write::write_all(&mut stream, response.as_bytes());
        }
    });
    (server, own)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_in_a_real_browser_approves_refuses_rebinding_and_foreign_pages() {
    let daemon = Daemon::start().await;
    let asker = new_asking(&daemon, "asker");
    let waiting = until_session(&daemon, &asker, |s| s.state == AgentState::NeedsInput).await;
    let first_request = request_of(&waiting);

    // `panewise web` on a free port; its first lines say where and the pairing code.
    let port = free_port();
    let mut web = daemon.command();
    web.args(["web", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut web = Owned(web.spawn().unwrap());
    let mut said = std::io::BufReader::new(web.0.stdout.take().unwrap());
    let mut url = None;
    for _ in 0..4 {
        let mut line = String::new();
        said.read_line(&mut line).unwrap();
        if let Some(rest) = line.trim().strip_prefix("panewise web: open ") {
            url = Some(rest.to_owned());
            break;
        }
    }
    let url = url.expect("panewise web printed the address with the pairing code");
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/#pair=")),
        "{url}"
    );

    let (_driver, client) = browser().await;
    client.goto(&url).await.unwrap();
    // Paired: the code is gone from the address, the inbox shows the waiting request.
    until_js(&client, "the inbox item", &format!(
        "document.querySelector('li.card[data-request=\"{first_request}\"] button.allow-once') !== null"
    ), |v| v == &json!(true)).await;
    let address = client.current_url().await.unwrap();
    assert!(!address.as_str().contains("pair="), "{address}");
    let shown = until_js(
        &client,
        "the argument",
        "document.querySelector('li.card pre.argument').textContent",
        |v| v.is_string(),
    )
    .await;
    assert_eq!(shown, json!("echo hello"));

    // The layout at phone size: one column, nothing wider than the screen, big buttons apart.
    let layout = client
        .execute(
            "const w = window.innerWidth;\
             const buttons = [...document.querySelectorAll('button')].filter(b => b.offsetParent !== null);\
             const small = buttons.filter(b => { const r = b.getBoundingClientRect(); return r.width < 44 || r.height < 44; }).map(b => b.textContent);\
             let close = [];\
             for (const row of document.querySelectorAll('li.card .row')) {\
               const rs = [...row.querySelectorAll('button')].map(b => b.getBoundingClientRect());\
               for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {\
                 const a = rs[i], b = rs[j];\
                 const gap = Math.max(b.left - a.right, a.left - b.right, b.top - a.bottom, a.top - b.bottom);\
                 if (gap < 16) close.push(gap);\
               }\
             }\
             return {w, scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth, buttons: buttons.length, small, close};",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(layout["w"], json!(390), "{layout}");
    assert!(
        layout["scroll"].as_i64().unwrap() <= 390,
        "horizontal overflow: {layout}"
    );
    assert!(
        layout["body"].as_i64().unwrap() <= 390,
        "horizontal overflow: {layout}"
    );
    assert!(layout["buttons"].as_i64().unwrap() >= 3, "{layout}");
    assert_eq!(layout["small"], json!([]), "buttons under 44 px: {layout}");
    assert_eq!(
        layout["close"],
        json!([]),
        "buttons under 16 px apart: {layout}"
    );

    // A page on another loopback port POSTs an approval: nothing changes.
    let (server, foreign) = foreign_page(port, &asker, &first_request);
    client
        .goto(&format!("http://127.0.0.1:{foreign}/"))
        .await
        .unwrap();
    until_js(&client, "the foreign page's posts", "document.title", |v| {
        v == &json!("sent")
    })
    .await;
    let _ = server.join();
    let still = until_session(&daemon, &asker, |_| true).await;
    assert_eq!(still.state, AgentState::NeedsInput, "{still:?}");
    assert_eq!(request_of(&still), first_request);

    // Approved from the page: the session runs the tool and finishes; its log names the web
    // client and the device.
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    click(
        &client,
        &format!("li.card[data-request=\"{first_request}\"] button.allow-once:not([disabled])"),
    )
    .await;
    let done = until_session(&daemon, &asker, |s| {
        matches!(s.state, AgentState::Done | AgentState::Idle)
    })
    .await;
    let log = std::fs::read_to_string(&done.log).unwrap();
    assert!(
        log.contains(r#""client":"panewise web (Linux browser)""#),
        "the log names the web client: {log}"
    );

    // Three sessions waiting at once, each answered from the page.
    let ids: Vec<String> = ["one", "two", "three"]
        .iter()
        .map(|name| new_asking(&daemon, name))
        .collect();
    for id in &ids {
        let waiting = until_session(&daemon, id, |s| s.state == AgentState::NeedsInput).await;
        let request = request_of(&waiting);
        click(
            &client,
            &format!("li.card[data-request=\"{request}\"] button.allow-once:not([disabled])"),
        )
        .await;
    }
    for id in &ids {
        let done = until_session(&daemon, id, |s| {
            matches!(s.state, AgentState::Done | AgentState::Idle)
        })
        .await;
        let log = std::fs::read_to_string(&done.log).unwrap();
        assert!(
            log.contains(r#""client":"panewise web (Linux browser)""#),
            "{log}"
        );
    }

    // Five approvals queued in one session (the mock's `five-approvals`: five shell calls in
    // one answer, asked one after another), every one answered from the page as it comes.
    let out = daemon.run(&[
        "new",
        "--name",
        "five",
        "--approval",
        "ask",
        "--mock-scenario",
        "five-approvals",
        "go",
    ]);
    assert!(out.status.success(), "{out:?}");
    let five = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    let mut answered: Vec<String> = Vec::new();
    let done = loop {
        // Idle also reads between `new`'s prompt and its turn's start: only an idle session
        // that was asked something has finished.
        let now = until_session(&daemon, &five, |s| {
            (s.state == AgentState::NeedsInput && !answered.contains(&request_of(s)))
                || s.state == AgentState::Done
                || (s.state == AgentState::Idle && !answered.is_empty())
        })
        .await;
        if now.state != AgentState::NeedsInput {
            break now;
        }
        let request = request_of(&now);
        click(
            &client,
            &format!("li.card[data-request=\"{request}\"] button.allow-once:not([disabled])"),
        )
        .await;
        answered.push(request);
    };
    let log = std::fs::read_to_string(&done.log).unwrap();
    assert_eq!(answered.len(), 5, "five approvals: {answered:?} {log}");
    for request in &answered {
        assert!(
            log.lines().any(|line| line.contains(request.as_str())
                && line.contains(r#""client":"panewise web (Linux browser)""#)),
            "{request} answered by the web client: {log}"
        );
    }
    for n in 1..=5 {
        assert!(
            log.contains(&format!("approval {n}\\n")),
            "approval {n} ran: {log}"
        );
    }
    assert!(
        log.contains("All five commands printed their number. Done."),
        "{log}"
    );

    // A page under a name rebound to 127.0.0.1 is refused (421), the page itself included.
    client
        .goto(&format!("http://evil.test:{port}/"))
        .await
        .unwrap();
    let body = client
        .execute(
            "return document.body ? document.body.innerText : '';",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        body.as_str()
            .unwrap_or("")
            .contains("does not answer to that Host"),
        "{body}"
    );
    assert!(client.find(Locator::Id("inbox")).await.is_err());

    // The daemon stopped: within 30 s the page says so and disables every action.
    client
        .goto(&format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap();
    until_js(
        &client,
        "the page live again",
        "document.body.dataset.live",
        |v| v == &json!("yes"),
    )
    .await;
    let stopped = daemon.run(&["daemon", "stop"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let since = Instant::now();
    until_js(
        &client,
        "the page saying the daemon is unreachable",
        "document.body.dataset.live === 'no' && document.getElementById('status').textContent.includes('unreachable') \
         && [...document.querySelectorAll('button.action')].every(b => b.disabled)",
        |v| v == &json!(true),
    )
    .await;
    assert!(
        since.elapsed() < Duration::from_secs(30),
        "{:?}",
        since.elapsed()
    );

    client.close().await.unwrap();
    drop(web);
}

/// A fixed-seed generator (64-bit LCG): the cut points are random but the same every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// One HTTP/1.0 exchange on loopback (the answer is delimited by the connection's close, so
/// no chunked decoding): the bytes read before `budget` bytes, the close, the `ended` event,
/// or `idle` without a byte (a live stream then waits for more: that is a cut too).
pub(crate) async fn http(port: u16, request: &str, budget: usize, idle: Duration) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while got.len() < budget {
        let want = buf.len().min(budget - got.len());
        match tokio::time::timeout(idle, stream.read(&mut buf[..want])).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
        if String::from_utf8_lossy(&got).contains("event: ended\ndata: {}\n\n") {
            break;
        }
    }
    got
}

/// The complete SSE events of a response's body (an event cut short is dropped, as a
/// browser drops it): (event, id, data).
fn sse_events(response: &[u8]) -> Vec<(String, Option<String>, String)> {
    let text = String::from_utf8_lossy(response);
    let Some((_, body)) = text.split_once("\r\n\r\n") else {
        return Vec::new();
    };
    let mut events = Vec::new();
    let mut rest = body;
    while let Some((block, after)) = rest.split_once("\n\n") {
        rest = after;
        let (mut event, mut id, mut data) = ("message".to_owned(), None, String::new());
        for line in block.lines() {
            if let Some((field, value)) = line.split_once(':') {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => event = value.to_owned(),
                    "id" => id = Some(value.to_owned()),
                    "data" => data.push_str(value),
                    _ => {}
                }
            }
        }
        if !data.is_empty() {
            events.push((event, id, data));
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transcript_cut_twenty_times_equals_the_fold_and_attach() {
    let daemon = Daemon::start().await;
    let out = daemon.run(&[
        "new",
        "--name",
        "talker",
        "--approval",
        "full-access",
        "--mock-scenario",
        "multi-round",
        "go",
    ]);
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();

    let port = free_port();
    let mut web = daemon.command();
    web.args(["web", "--port", &port.to_string()]);
    let (web, token) = paired(web, port, "cutter").await;

    // Twenty reads cut at random byte counts, each resumed with Last-Event-ID; prompts sent
    // between them, so lines keep arriving while the stream is cut.
    let mut random = Lcg(41);
    let mut got: Vec<(u64, Value)> = Vec::new();
    let mut ended = false;
    let mut cut = 0;
    while !ended {
        let last = got.last().map(|(index, _)| *index);
        let resume = last
            .map(|index| format!("Last-Event-ID: {index}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "GET /api/sessions/{id}/transcript HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\
             Authorization: Bearer {token}\r\n{resume}\r\n"
        );
        let (budget, idle) = if cut < 20 {
            (
                usize::try_from(200 + random.below(1_500)).unwrap(),
                Duration::from_millis(300),
            )
        } else {
            (usize::MAX, DEADLINE)
        };
        for (event, event_id, data) in sse_events(&http(port, &request, budget, idle).await) {
            match event.as_str() {
                "line" => {
                    let data: Value = serde_json::from_str(&data).unwrap();
                    let index = data["index"].as_u64().unwrap();
                    assert_eq!(event_id, Some(index.to_string()));
                    got.push((index, data));
                }
                "ended" => ended = true,
                _ => {}
            }
        }
        cut += 1;
        if cut % 5 == 0 && cut <= 15 {
            let sent = daemon.run(&["send", "talker", "again"]);
            assert!(sent.status.success(), "{sent:?}");
        }
        if cut == 20 {
            // Let the session settle and end, so the uncut read reaches its end.
            until_session(&daemon, &id, |s| {
                matches!(s.state, AgentState::Done | AgentState::Idle)
            })
            .await;
            let stopped = daemon.run(&["stop", "talker"]);
            assert!(stopped.status.success(), "{stopped:?}");
        }
        assert!(cut < 40, "the transcript never ended: {} events", got.len());
    }

    // No gap, no duplicate: exactly the transcript the log folds to, in order.
    let log = until_session(&daemon, &id, |_| true).await.log;
    let mut fold = panewise_web::inbox::TranscriptFold::new(None);
    let expected: Vec<(u64, Value)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .enumerate()
        .filter_map(|(index, line)| fold.fold(u64::try_from(index).unwrap(), line))
        .map(|event| (event.index, serde_json::to_value(&event).unwrap()))
        .collect();
    assert!(expected.len() > 20, "{} entries", expected.len());
    assert_eq!(got, expected);

    // And the page's lines are `panewise attach`'s lines, line for line (its stdin kept open
    // until it exits on its own at the session's end).
    let mut attach = daemon.command();
    attach
        .args(["attach", "talker"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut attached = Owned(attach.spawn().unwrap());
    let held = attached.0.stdin.take();
    let mut printed = String::new();
    std::io::Read::read_to_string(attached.0.stdout.as_mut().unwrap(), &mut printed).unwrap();
    drop(held);
    drop(attached);
    let paged: String = got
        .iter()
        .flat_map(|(_, event)| event["lines"].as_array().unwrap().clone())
        .map(|line| {
            panewise_tui::wording::labelled(
                line["label"].as_str().unwrap(),
                line["text"].as_str().unwrap(),
            )
        })
        .collect();
    let printed: Vec<&str> = printed.lines().collect();
    let paged: Vec<&str> = paged.lines().collect();
    assert!(paged.len() > 20, "{} lines", paged.len());
    for (at, (page, attached)) in paged.iter().zip(&printed).enumerate() {
        assert_eq!(page, attached, "line {at}");
    }
    assert_eq!(paged.len(), printed.len(), "{printed:#?}");
    drop(web);
}

/// `panewise web` started by `command` on `port`, and a device token paired over HTTP with
/// the code it printed, as the page would.
pub(crate) async fn paired(mut command: Command, port: u16, device: &str) -> (Owned, String) {
    command.stdout(Stdio::piped());
    let mut web = Owned(command.spawn().unwrap());
    let mut said = std::io::BufReader::new(web.0.stdout.take().unwrap());
    let mut code = None;
    for _ in 0..4 {
        let mut line = String::new();
        said.read_line(&mut line).unwrap();
        if let Some((_, rest)) = line.trim().split_once("#pair=") {
            code = Some(rest.to_owned());
            break;
        }
    }
    let code = code.expect("a pairing code");
    let body = json!({ "code": code, "device": device }).to_string();
    let answer = post(port, "", "/api/pair", &body).await;
    let token = answer["token"].as_str().unwrap().to_owned();
    (web, token)
}

/// A JSON POST to the web server as the page sends it (`token` empty: none), its JSON answer.
pub(crate) async fn post(port: u16, token: &str, path: &str, body: &str) -> Value {
    let bearer = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    let answer = http(
        port,
        &format!(
            "POST {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             {bearer}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        1 << 20,
        DEADLINE,
    )
    .await;
    let answer = String::from_utf8_lossy(&answer);
    serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1)
        .unwrap_or_else(|error| panic!("{error}: {answer}"))
}

/// A GET of the API with the device's token, its JSON answer.
pub(crate) async fn get(port: u16, token: &str, path: &str) -> Value {
    let answer = http(
        port,
        &format!(
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
        ),
        1 << 20,
        DEADLINE,
    )
    .await;
    let answer = String::from_utf8_lossy(&answer);
    serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1)
        .unwrap_or_else(|error| panic!("{error}: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_remote_the_inbox_lists_every_host_and_answers_a_remote_request() {
    use crate::daemon_ssh::{local_daemon, RemoteSide, Sshd, HOST};
    let sshd = Sshd::start();
    let remote = RemoteSide::new();
    let daemon = local_daemon(&remote).await;
    let new = |name: &str, remote_host: Option<&str>| {
        let mut command = daemon.command();
        command.env("PANEWISE_SSH_COMMAND", sshd.ssh_command());
        command.arg("new");
        if let Some(host) = remote_host {
            command.args(["--remote", host]);
        }
        let out = command
            .args(["--name", name, "--approval", "ask", "go"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}\nsshd: {}", sshd.log());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_owned()
    };
    let far = new("far", Some(HOST));
    let near = new("near", None);
    assert!(far.starts_with(&format!("{HOST}:")), "{far}");

    let port = free_port();
    let mut web = daemon.command();
    web.env("PANEWISE_SSH_COMMAND", sshd.ssh_command()).args([
        "web",
        "--port",
        &port.to_string(),
        "--remote",
        HOST,
    ]);
    let (web, token) = paired(web, port, "phone").await;

    // Both hosts' waiting requests in one inbox, each with its host; both hosts' sessions in
    // one list.
    let since = Instant::now();
    let items = loop {
        let inbox = get(port, &token, "/api/inbox").await;
        let items = inbox["items"].as_array().cloned().unwrap_or_default();
        let hosts: Vec<(&str, &str)> = items
            .iter()
            .map(|item| {
                (
                    item["host"].as_str().unwrap_or(""),
                    item["session"].as_str().unwrap_or(""),
                )
            })
            .collect();
        if hosts.contains(&(HOST, far.as_str())) && hosts.contains(&("local", near.as_str())) {
            break items;
        }
        assert!(since.elapsed() < DEADLINE, "{inbox}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let sessions = get(port, &token, "/api/sessions").await;
    let listed: Vec<(String, String)> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["host"].as_str().unwrap().to_owned(),
                s["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        listed.contains(&(HOST.to_owned(), far.clone())),
        "{sessions}"
    );
    assert!(
        listed.contains(&("local".to_owned(), near.clone())),
        "{sessions}"
    );

    // The remote request answered through the page's API: the remote session finishes and its
    // log, on the remote host, names the web client and the device.
    let item = items
        .iter()
        .find(|item| item["session"] == json!(far))
        .unwrap();
    let request = item["waiting_for"]["id"].as_str().unwrap();
    let answer = post(
        port,
        &token,
        &format!("/api/sessions/{far}/approve"),
        &json!({ "request": request, "decision": "allow_once" }).to_string(),
    )
    .await;
    assert!(answer.get("error").is_none_or(Value::is_null), "{answer}");
    let far_id = far.strip_prefix(&format!("{HOST}:")).unwrap().to_owned();
    let since = Instant::now();
    let log = loop {
        let client = remote.direct("check").await;
        let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
        let session = list.sessions.into_iter().find(|s| s.id == far_id).unwrap();
        if matches!(session.state, AgentState::Done | AgentState::Idle) {
            break std::fs::read_to_string(&session.log).unwrap();
        }
        assert!(since.elapsed() < DEADLINE, "{session:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        log.lines()
            .any(|line| line.contains(request)
                && line.contains(r#""client":"panewise web (phone)""#)),
        "{log}"
    );
    drop(web);
}
