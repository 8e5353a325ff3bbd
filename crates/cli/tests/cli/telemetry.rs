//! `panewise run` exporting to a real OTLP/HTTP receiver on 127.0.0.1 (the protobuf schema
//! decoded): the offline mock's session arrives as `invoke_agent` with its model calls and
//! its tool nested under it, no key in any value; with the endpoint down the run still
//! succeeds, quickly, with one warning.

use std::time::{Duration, Instant};

use panewise_telemetry::receiver::Receiver;

use crate::run_own_loop::{stderr, Machine};

const PROVIDER_KEY: &str = "sk-ant-never-exported-123";
const COLLECTOR_KEY: &str = "collector-key-456";

fn run_with(endpoint: &str) -> (std::process::Output, Duration) {
    let machine = Machine::new();
    let mut command = machine.command(&["run", "print hello with the shell"]);
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{COLLECTOR_KEY}"),
        )
        .env("OTEL_SERVICE_NAME", "panewise-e2e")
        .env("ANTHROPIC_API_KEY", PROVIDER_KEY);
    let started = Instant::now();
    let output = command.output().unwrap();
    (output, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_exports_the_session_as_nested_genai_spans() {
    let receiver = Receiver::start().await.unwrap();
    let endpoint = receiver.endpoint();
    let (output, _) = tokio::task::spawn_blocking(move || run_with(&endpoint))
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let arrived = receiver
        .wait_until(Duration::from_secs(10), |r| {
            r.spans().iter().any(|span| span.name == "invoke_agent")
                && r.metric_names()
                    .iter()
                    .any(|name| name == "gen_ai.client.token.usage")
        })
        .await;
    let spans = receiver.spans();
    assert!(arrived, "{spans:#?}\n{}", stderr(&output));
    let root = spans
        .iter()
        .find(|span| span.name == "invoke_agent")
        .unwrap();
    assert_eq!(root.service_name, "panewise-e2e");
    assert_eq!(root.attributes["gen_ai.agent.name"], "panewise");
    assert_eq!(root.attributes["gen_ai.provider.name"], "panewise.mock");
    let children: Vec<_> = spans
        .iter()
        .filter(|span| span.parent_span_id == root.span_id)
        .collect();
    let chat = children
        .iter()
        .find(|span| span.name.starts_with("chat "))
        .unwrap_or_else(|| panic!("no chat span in {spans:#?}"));
    for key in [
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
    ] {
        assert!(chat.attributes.contains_key(key), "{key} in {chat:#?}");
    }
    let tool = children
        .iter()
        .find(|span| span.name == "execute_tool shell")
        .unwrap_or_else(|| panic!("no tool span in {spans:#?}"));
    assert_eq!(tool.attributes["gen_ai.tool.name"], "shell");
    assert!(tool.attributes.contains_key("gen_ai.tool.call.id"));
    // No key in any exported value; the collector's went out as a header.
    assert!(!receiver.saw_text(PROVIDER_KEY));
    assert!(!receiver.saw_value(COLLECTOR_KEY));
    assert!(receiver.saw_text(COLLECTOR_KEY));
    assert!(!stderr(&output).contains(COLLECTOR_KEY));
}

#[test]
fn a_down_endpoint_costs_one_warning_not_the_session() {
    // A port that was free a moment ago: nothing listens there.
    let endpoint = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (output, took) = run_with(&endpoint);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    // A hang would never end; a whole debug session on a loaded machine can take seconds.
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(
        err.matches("panewise: telemetry: cannot export").count(),
        1,
        "{err}"
    );
    assert!(!err.contains(COLLECTOR_KEY), "{err}");
}

/// The daemon, configured by its user file's `[telemetry]` table: each hosted session is an
/// `invoke_agent` trace, and one stopped while it waited on approval ends its wait denied by
/// the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_exports_each_hosted_session() {
    use crate::daemon::{create, mock, until_state, Daemon};
    use nix::sys::signal::{kill, Signal};
    use panewise_api::AgentState;

    let receiver = Receiver::start().await.unwrap();
    let config = format!(
        "[telemetry]\nendpoint = \"{}\"\nservice_name = \"panewise-daemon\"\n",
        receiver.endpoint()
    );
    let mut daemon = Daemon::start_with(Some(&config)).await;
    let client = daemon.connect("otel").await;
    let asking = create(&client, mock("asking", "ask", "run the tool")).await;
    let idle = create(&client, mock("idle", "full-access", "say hello")).await;
    until_state(&client, &asking.id, |s| s.state == AgentState::NeedsInput).await;
    until_state(&client, &idle.id, |s| s.state == AgentState::Done).await;
    kill(daemon.pid(), Signal::SIGTERM).unwrap();
    let (status, stderr) = daemon.exited().await;
    assert!(status.success(), "{status:?}: {stderr}");
    let arrived = receiver
        .wait_until(Duration::from_secs(10), |r| {
            r.spans()
                .iter()
                .filter(|span| span.name == "invoke_agent")
                .count()
                == 2
        })
        .await;
    let spans = receiver.spans();
    assert!(arrived, "{spans:#?}\n{stderr}");
    for session in [&asking, &idle] {
        let root = spans
            .iter()
            .find(|span| {
                span.name == "invoke_agent"
                    && span.attributes["gen_ai.conversation.id"] == session.id
            })
            .unwrap_or_else(|| panic!("no span of {} in {spans:#?}", session.id));
        assert_eq!(root.service_name, "panewise-daemon");
        assert!(spans
            .iter()
            .any(|span| span.parent_span_id == root.span_id && span.name.starts_with("chat ")));
    }
    let wait = spans
        .iter()
        .find(|span| span.name == "panewise.approval.wait")
        .unwrap_or_else(|| panic!("no approval wait in {spans:#?}"));
    assert_eq!(wait.attributes["panewise.approval.decision"], "denied");
    assert_eq!(wait.attributes["panewise.approval.by"], "session");
}

/// A stand-in for `claude` that records its `TRACEPARENT`, then speaks one turn of Claude
/// Code's stream-json: its init, an answer with usage, the result.
fn recording_claude(machine: &Machine) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = machine.path("fake-claude");
    let recorded = machine.path("traceparent.txt");
    let init = r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5","cwd":"/tmp","tools":["Bash"]}"#;
    let text = r#"{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Done"}],"usage":{"input_tokens":10,"output_tokens":2}},"session_id":"s1","parent_tool_use_id":null}"#;
    let result = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5,"num_turns":1,"result":"Done","session_id":"s1","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":2}}"#;
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in --version) echo '2.1.0 (Claude Code)'; exit 0;; esac\n\
         printf '%s' \"$TRACEPARENT\" > {}\nread init\nread prompt\necho '{init}'\n\
         echo '{text}'\necho '{result}'\ncat > /dev/null\n",
        recorded.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A supervised CLI is given the session span's W3C context in `TRACEPARENT`, so that its
/// own spans nest under panewise's: the value names the exported `invoke_agent` span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_cli_gets_the_session_spans_traceparent() {
    let receiver = Receiver::start().await.unwrap();
    let endpoint = receiver.endpoint();
    let machine = Machine::new();
    let claude = recording_claude(&machine);
    let mut command = machine.command(&[
        "run",
        "--provider",
        "claude-code",
        "--approval",
        "full-access",
        "--claude",
        &claude.display().to_string(),
        "say done",
    ]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let arrived = receiver
        .wait_until(Duration::from_secs(10), |r| {
            r.spans().iter().any(|span| span.name == "invoke_agent")
        })
        .await;
    let spans = receiver.spans();
    assert!(arrived, "{spans:#?}\n{}", stderr(&output));
    let root = spans
        .iter()
        .find(|span| span.name == "invoke_agent")
        .unwrap();
    assert_eq!(root.attributes["gen_ai.agent.name"], "claude-code");
    let traceparent = std::fs::read_to_string(machine.path("traceparent.txt")).unwrap();
    assert_eq!(
        traceparent,
        format!("00-{}-{}-01", root.trace_id, root.span_id),
        "{spans:#?}"
    );
    assert!(spans
        .iter()
        .any(|span| span.parent_span_id == root.span_id && span.name.starts_with("chat ")));
}

/// Content goes out only when opted into, and then the prompt does but the API key in
/// panewise's environment is in no exported byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_is_exported_only_when_opted_into_and_never_a_key() {
    const PROMPT: &str = "print hello with the shell";
    for opted in [false, true] {
        let receiver = Receiver::start().await.unwrap();
        let endpoint = receiver.endpoint();
        let machine = Machine::new();
        let mut command = machine.command(&["run", PROMPT]);
        command
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("ANTHROPIC_API_KEY", PROVIDER_KEY)
            .env(
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                opted.to_string(),
            );
        let output = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let arrived = receiver
            .wait_until(Duration::from_secs(10), |r| {
                r.spans().iter().any(|span| span.name == "invoke_agent")
                    && !r.metric_names().is_empty()
            })
            .await;
        assert!(arrived, "{:#?}", receiver.spans());
        assert_eq!(receiver.saw_bytes(PROMPT), opted, "opted in: {opted}");
        assert!(!receiver.saw_bytes(PROVIDER_KEY), "opted in: {opted}");
        let spans = receiver.spans();
        let tool = spans
            .iter()
            .find(|span| span.name == "execute_tool shell")
            .unwrap_or_else(|| panic!("no tool span in {spans:#?}"));
        assert_eq!(
            tool.attributes.contains_key("gen_ai.tool.call.result"),
            opted,
            "{tool:#?}"
        );
    }
}
