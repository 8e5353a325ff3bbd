//! A client that subscribes to a flooding session and never reads: the daemon's memory stays
//! within the bound of that client's queue, the client is dropped once its queue has stayed
//! full past the stall limit, and what it reads afterwards ends with why and where each
//! subscription resumes (`daemon/dropped`).

use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use panewise_api::{CreateParams, ListParams, ListResult, Method, PromptParams};

use crate::daemon::{create, Daemon, DEADLINE};

const SESSION: &str = "7b0c3a52-0000-4000-8000-00000000f100";

/// A Claude Code that answers one prompt with a flood of text deltas (`yes`, cut at
/// `lines`), then ends its turn and waits for more, as Claude Code does.
fn flooding_claude(dir: &std::path::Path, lines: u64) -> std::path::PathBuf {
    let delta = format!(
        r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"flood flood flood flood flood flood flood flood"}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}"#
    );
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "2.0.0 (Claude Code)"; exit 0; fi
read -r initialize
read -r prompt
echo '{{"type":"system","subtype":"init","cwd":"/tmp","session_id":"{SESSION}","tools":["Bash"],"model":"claude-opus-5-5","permissionMode":"default"}}'
echo '{{"type":"stream_event","event":{{"type":"message_start","message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":10,"output_tokens":1}}}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"stream_event","event":{{"type":"content_block_start","index":0,"content_block":{{"type":"text","text":""}}}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
yes '{delta}' | head -n {lines}
echo '{{"type":"stream_event","event":{{"type":"content_block_stop","index":0}},"session_id":"{SESSION}","parent_tool_use_id":null}}'
echo '{{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"num_turns":1,"result":"done","session_id":"{SESSION}","total_cost_usd":0.01,"usage":{{"input_tokens":10,"output_tokens":5}}}}'
cat > /dev/null
"#
    );
    let path = dir.join("flooding-claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The resident memory of process `pid`, KiB.
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_keeps_the_daemon_bounded_and_is_told_why_it_was_dropped() {
    let fixtures = tempfile::tempdir().unwrap();
    let fake = flooding_claude(fixtures.path(), 400_000);
    let daemon = Daemon::start_custom(
        None,
        &["--client-stall-secs", "2"],
        &[("PANEWISE_CLAUDE", fake.as_path())],
    )
    .await;
    let pid = daemon.pid().as_raw();
    let client = daemon.connect("watcher").await;
    let cwd = daemon.dir.path().join("work");
    let session = create(
        &client,
        CreateParams {
            provider: Some("claude-code".to_owned()),
            cwd: Some(cwd.display().to_string()),
            approval: Some("full-access".to_owned()),
            name: Some("flood".to_owned()),
            ..CreateParams::default()
        },
    )
    .await;
    let before = rss_kib(pid);

    // The client that never reads: it subscribes (attached, so its going shows in the list)
    // and then only holds the socket open.
    let mut silent = std::os::unix::net::UnixStream::connect(daemon.socket()).unwrap();
    writeln!(
        silent,
        r#"{{"jsonrpc":"2.0","id":1,"method":"daemon/hello","params":{{"api_version":{},"client":"silent"}}}}"#,
        panewise_api::API_VERSION
    )
    .unwrap();
    writeln!(
        silent,
        r#"{{"jsonrpc":"2.0","id":2,"method":"session/subscribe","params":{{"session":"{}","from_line":0,"attach":true}}}}"#,
        session.id
    )
    .unwrap();
    let _: panewise_api::Ack = client
        .call(
            Method::Prompt,
            PromptParams {
                session: session.id.clone(),
                text: "flood".to_owned(),
            },
        )
        .await
        .unwrap();

    // Until the daemon lets the silent client go (its attach is released), the daemon's
    // memory is sampled.
    let mut peak = before;
    let until = Instant::now() + DEADLINE;
    let mut attached_seen = false;
    loop {
        peak = peak.max(rss_kib(pid));
        let list: ListResult = client.call(Method::List, ListParams {}).await.unwrap();
        let attached = list
            .sessions
            .iter()
            .find(|s| s.id == session.id)
            .map_or(0, |s| s.attached);
        attached_seen |= attached == 1;
        if attached_seen && attached == 0 {
            break;
        }
        assert!(
            Instant::now() < until,
            "the silent client was never dropped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its queue is bounded at 4,096 lines or 8 MiB; the log it did not read grows far larger
    // while the daemon's memory is still sampled (on a loaded machine the client may be
    // dropped before the flood is big: the agent goes on flooding).
    let mut log_bytes = std::fs::metadata(&session.log).map_or(0, |m| m.len());
    while log_bytes <= 20 * 1024 * 1024 && Instant::now() < until {
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(50)).await;
        log_bytes = std::fs::metadata(&session.log).map_or(0, |m| m.len());
    }
    assert!(
        log_bytes > 20 * 1024 * 1024,
        "the flood was too small to show anything: {log_bytes} bytes"
    );
    let growth_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "daemon RSS {} MiB before, peak {} MiB while a {} MiB log flooded a client that read nothing",
        before / 1024,
        peak / 1024,
        log_bytes / (1024 * 1024)
    );
    assert!(
        growth_mib < 48,
        "the daemon grew {growth_mib} MiB for a client that reads nothing"
    );

    // Reading now: what was in flight, then why it was dropped, then the end.
    silent
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let reader = std::io::BufReader::new(silent);
    let mut last = None;
    let mut count = 0u64;
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        count += 1;
        last = Some(line);
    }
    let last: serde_json::Value = serde_json::from_slice(&last.unwrap_or_default()).unwrap();
    assert_eq!(last["method"], "daemon/dropped", "after {count} lines");
    let reason = last["params"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("read nothing for 2 s"), "{reason}");
    let resume = &last["params"]["resume"][0];
    assert_eq!(resume["session"], serde_json::json!(session.id));
    assert!(resume["from_line"].as_u64().unwrap_or(0) > 0, "{resume}");
}

/// One request line's answer on a fresh connection: the daemon still serves.
async fn still_answers(daemon: &Daemon) {
    let client = daemon.connect("probe").await;
    let _: ListResult = tokio::time::timeout(DEADLINE, client.call(Method::List, ListParams {}))
        .await
        .expect("answered in time")
        .unwrap();
}

/// What the daemon answers to `bytes` on a connection of its own.
async fn answer_to(daemon: &Daemon, bytes: &[u8]) -> serde_json::Value {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let stream = tokio::net::UnixStream::connect(daemon.socket())
        .await
        .unwrap();
    let (read, mut write) = stream.into_split();
    write.write_all(bytes).await.unwrap();
    let mut lines = tokio::io::BufReader::new(read).lines();
    let line = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .expect("answered in time")
        .unwrap()
        .unwrap_or_default();
    serde_json::from_str(&line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_get_errors_and_the_daemon_answers_throughout_within_its_memory() {
    use tokio::io::AsyncWriteExt;
    let daemon = Daemon::start().await;
    let pid = daemon.pid().as_raw();
    let before = rss_kib(pid);
    let mut peak = before;

    // Bytes that are not UTF-8, nesting 100,000 deep, and parameters of the wrong type: an
    // error each, with the id when one could be read.
    let mut invalid = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}".to_vec();
    invalid.push(b'\n');
    let answer = answer_to(&daemon, &invalid).await;
    assert!(answer["error"]["code"].as_i64().is_some(), "{answer}");
    let mut deep = "[".repeat(100_000).into_bytes();
    deep.extend_from_slice(&"]".repeat(100_000).into_bytes());
    deep.push(b'\n');
    let answer = answer_to(&daemon, &deep).await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let wrong = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/subscribe\",\"params\":{\"session\":7,\"from_line\":\"x\"}}\n";
    let answer = answer_to(&daemon, wrong).await;
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (serde_json::json!(3), serde_json::json!(-32602))
    );
    still_answers(&daemon).await;

    // 64 MiB without a newline: read and dropped as it comes, never held.
    let mut endless = tokio::net::UnixStream::connect(daemon.socket())
        .await
        .unwrap();
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..64 {
        endless.write_all(&chunk).await.unwrap();
        peak = peak.max(rss_kib(pid));
    }
    still_answers(&daemon).await;
    drop(endless);

    // 200 requests half sent and held open, then 500 connections at once.
    let mut held = Vec::new();
    for _ in 0..200 {
        let mut stream = tokio::net::UnixStream::connect(daemon.socket())
            .await
            .unwrap();
        stream
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sess")
            .await
            .unwrap();
        held.push(stream);
    }
    still_answers(&daemon).await;
    let hellos = (0..500).map(|n| {
        let socket = daemon.socket();
        tokio::spawn(async move {
            let client = panewise_supervisor::Client::connect(&socket, &format!("c{n}")).await;
            client.map(|_| ())
        })
    });
    let mut answered = 0;
    for hello in hellos.collect::<Vec<_>>() {
        if matches!(hello.await, Ok(Ok(()))) {
            answered += 1;
        }
    }
    peak = peak.max(rss_kib(pid));
    assert_eq!(answered, 500, "every connection was answered");
    still_answers(&daemon).await;
    drop(held);
    let growth_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "daemon RSS {} MiB before, peak {} MiB under hostile clients",
        before / 1024,
        peak / 1024
    );
    assert!(growth_mib < 64, "the daemon grew {growth_mib} MiB");
}
