//! The shell against a real OTLP receiver on 127.0.0.1, over HTTP and over gRPC: the spans
//! arrive nested under the session's span with their attributes, the metrics arrive, the
//! headers go out as headers (gRPC metadata) only, and a down endpoint neither fails nor holds
//! up the shutdown.

use std::time::{Duration, Instant};

use panewise_pane_state::log::Actor;
use panewise_pane_state::Msg;
use panewise_protocol::SessionStats;
use panewise_providers::{ProviderEvent, ToolStatus};
use panewise_session_protocol::Update;
use panewise_telemetry::receiver::Receiver;
use panewise_telemetry::{Protocol, SessionInfo, Settings, Telemetry};

fn settings(endpoint: String) -> Settings {
    Settings {
        traces_endpoint: Some(format!("{endpoint}/v1/traces")),
        metrics_endpoint: Some(format!("{endpoint}/v1/metrics")),
        protocol: Protocol::HttpProtobuf,
        headers: [("x-api-key".to_owned(), "sk-secret-value".to_owned())].into(),
        service_name: "panewise-test".to_owned(),
        resource: Default::default(),
        content: false,
    }
}

/// Over gRPC both signals go to the base URL (the services are named in the request).
fn grpc_settings(endpoint: String) -> Settings {
    Settings {
        traces_endpoint: Some(endpoint.clone()),
        metrics_endpoint: Some(endpoint),
        protocol: Protocol::Grpc,
        ..settings(String::new())
    }
}

fn session(telemetry: &Telemetry) {
    let export = telemetry.session(SessionInfo {
        id: "sess-42".to_owned(),
        agent: "panewise".to_owned(),
        provider: "mock".to_owned(),
        model: Some("mock-model".to_owned()),
    });
    let updates = [
        Update::Recorded {
            at: 0,
            msg: Msg::TurnStart {
                at: 0,
                content: Some("a prompt".to_owned()),
            },
        },
        Update::Agent(ProviderEvent::CallEnded {
            model: None,
            stop_reason: Some("tool_use".to_owned()),
            stats: SessionStats {
                input_tokens: Some(12),
                output_tokens: Some(5),
                ..SessionStats::default()
            },
        }),
        Update::Ask {
            id: "r1".to_owned(),
            tool: "shell".to_owned(),
            summary: "echo hello".to_owned(),
            offers_session: false,
        },
        Update::Answered {
            id: "r1".to_owned(),
            tool: "shell".to_owned(),
            approved: true,
            for_session: false,
            by: Actor::Person,
            reason: None,
        },
        Update::Agent(ProviderEvent::ToolStarted {
            name: "shell".to_owned(),
            call_id: "c1".to_owned(),
            arg: Some("echo hello".to_owned()),
            input: None,
        }),
        Update::Agent(ProviderEvent::ToolEnded {
            call_id: "c1".to_owned(),
            status: ToolStatus::Success,
            exit_code: Some(0),
            output: Some("hello".to_owned()),
        }),
    ];
    for update in &updates {
        export.observe(update);
    }
    export.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_arrives_as_nested_spans_with_its_metrics() {
    let receiver = Receiver::start().await.expect("a receiver");
    let telemetry = Telemetry::start(&settings(receiver.endpoint())).expect("telemetry");
    assert_eq!(arrives(telemetry, &receiver).await, Ok(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_grpc_a_session_arrives_as_nested_spans_with_its_metrics() {
    let receiver = Receiver::start().await.expect("a receiver");
    let telemetry = Telemetry::start(&grpc_settings(receiver.grpc_endpoint())).expect("telemetry");
    assert_eq!(arrives(telemetry, &receiver).await, Ok(()));
    // It came over gRPC: tonic's client names itself, reqwest's would not.
    assert!(receiver.saw_text("content-type: application/grpc"));
}

/// Over gRPC from a thread with no tokio runtime (a foreground CLI command's): the exporter
/// brings its own.
#[test]
fn over_grpc_export_needs_no_runtime_of_the_callers() {
    let runtime = tokio::runtime::Runtime::new().expect("the receiver's runtime");
    let receiver = runtime.block_on(Receiver::start()).expect("a receiver");
    let telemetry = Telemetry::start(&grpc_settings(receiver.grpc_endpoint())).expect("telemetry");
    session(&telemetry);
    assert!(telemetry.shutdown(Duration::from_secs(10)));
    drop(telemetry);
    let arrived = runtime.block_on(receiver.wait_until(Duration::from_secs(10), |r| {
        r.spans().len() >= 4 && !r.metric_names().is_empty()
    }));
    assert!(arrived, "{:#?}", receiver.spans());
}

/// Exports one session and checks what the receiver got; the first thing missing, if any.
async fn arrives(telemetry: Telemetry, receiver: &Receiver) -> Result<(), String> {
    session(&telemetry);
    let flushed = tokio::task::spawn_blocking(move || telemetry.shutdown(Duration::from_secs(10)))
        .await
        .map_err(|error| format!("the shutdown thread: {error}"))?;
    assert!(flushed);
    let arrived = receiver
        .wait_until(Duration::from_secs(10), |r| {
            r.spans().len() >= 4 && !r.metric_names().is_empty()
        })
        .await;
    assert!(arrived, "{:#?}", receiver.spans());
    let spans = receiver.spans();
    let root = spans
        .iter()
        .find(|span| span.name == "invoke_agent")
        .ok_or("no session span")?;
    assert_eq!(root.parent_span_id, "");
    assert_eq!(root.service_name, "panewise-test");
    assert_eq!(root.attributes["gen_ai.conversation.id"], "sess-42");
    for name in [
        "chat mock-model",
        "execute_tool shell",
        "panewise.approval.wait",
    ] {
        let span = spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("no {name} in {spans:#?}"));
        assert_eq!(span.parent_span_id, root.span_id, "{name}");
        assert_eq!(span.trace_id, root.trace_id, "{name}");
    }
    let chat = spans.iter().find(|span| span.name == "chat mock-model");
    let chat = chat.ok_or("no chat span")?;
    assert_eq!(chat.attributes["gen_ai.usage.input_tokens"], "12");
    assert_eq!(chat.attributes["gen_ai.usage.output_tokens"], "5");
    assert_eq!(
        chat.attributes["gen_ai.response.finish_reasons"],
        "tool_use"
    );
    let metrics = receiver.metric_names();
    for name in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
    ] {
        assert!(metrics.iter().any(|m| m == name), "{metrics:?}");
    }
    // The model call's token counts, by type, and the approval, by decision and answerer.
    let tokens = |kind: &str| {
        receiver.metric_point("gen_ai.client.token.usage", &[("gen_ai.token.type", kind)])
    };
    let input = tokens("input").ok_or("no input token usage")?;
    assert_eq!((input.sum, input.count), (12.0, 1), "{input:?}");
    let output = tokens("output").ok_or("no output token usage")?;
    assert_eq!((output.sum, output.count), (5.0, 1), "{output:?}");
    assert_eq!(input.attributes["gen_ai.request.model"], "mock-model");
    let approvals = receiver
        .metric_point(
            "panewise.approvals",
            &[("panewise.approval.decision", "approved")],
        )
        .ok_or("no approval counted")?;
    assert_eq!(approvals.sum, 1.0, "{approvals:?}");
    assert!(receiver
        .metric_point("panewise.approval.wait.duration", &[])
        .is_some_and(|wait| wait.count == 1));
    // The key went out as a header, and nowhere else; content stayed home.
    assert!(receiver.saw_text("sk-secret-value"));
    assert!(!receiver.saw_value("sk-secret-value"));
    assert!(!receiver.saw_value("echo hello") && !receiver.saw_value("a prompt"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_down_endpoint_costs_no_more_than_the_deadline() {
    // A port that was free a moment ago: nothing listens there.
    let endpoint = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        format!("http://{}", listener.local_addr().expect("its address"))
    };
    for settings in [settings(endpoint.clone()), grpc_settings(endpoint.clone())] {
        let protocol = settings.protocol;
        let telemetry = Telemetry::start(&settings).expect("telemetry");
        session(&telemetry);
        let started = Instant::now();
        let _flushed =
            tokio::task::spawn_blocking(move || telemetry.shutdown(Duration::from_secs(5)))
                .await
                .expect("the shutdown thread");
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{protocol:?}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn over_grpc_an_https_endpoint_is_a_clear_error() {
    let started = Telemetry::start(&grpc_settings("https://collector.example:4317".to_owned()));
    let error = started.err().map(|error| error.to_string());
    assert!(
        error.as_deref().is_some_and(|text| text.contains("tls")),
        "{error:?}"
    );
}
