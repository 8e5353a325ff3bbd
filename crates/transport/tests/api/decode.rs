//! The pure stream decoders over the SSE bodies the mock sent the real CLIs (copied from the
//! fixtures' `mock_response` into `tests/data/api/`), framed by the same SSE parser the
//! transport uses, whole and split into small pieces.

use std::path::PathBuf;

use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use panewise_providers::{ApiKind, ProviderEvent};

fn bodies() -> Vec<(String, ApiKind, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/api");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let api = ApiKind::ALL
                .into_iter()
                .find(|api| name.starts_with(api.name()))
                .unwrap_or_else(|| panic!("{name}: which API?"));
            (name, api, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(found.len() >= 6, "the copied bodies are there");
    found
}

async fn decode(api: ApiKind, body: &str, piece: usize) -> Vec<ProviderEvent> {
    let pieces: Vec<Result<Vec<u8>, std::convert::Infallible>> = body
        .as_bytes()
        .chunks(piece)
        .map(|chunk| Ok(chunk.to_vec()))
        .collect();
    let mut events = futures_util::stream::iter(pieces).eventsource();
    let mut decoder = api.decoder();
    let mut out = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        decoder.feed(&event.event, &event.data, &mut out);
    }
    decoder.finish(&mut out);
    out
}

#[tokio::test]
async fn the_recorded_bodies_decode_to_their_events() {
    for (name, api, body) in bodies() {
        let events = decode(api, &body, body.len()).await;
        assert_eq!(
            decode(api, &body, 7).await,
            events,
            "{name}: split into pieces"
        );
        assert!(
            matches!(events.last(), Some(ProviderEvent::CallEnded { .. })),
            "{name}: ends with its usage"
        );
        assert!(
            !events.iter().any(|event| matches!(
                event,
                ProviderEvent::Unknown { .. }
                    | ProviderEvent::Warning { .. }
                    | ProviderEvent::Failure { .. }
            )),
            "{name}: every event understood"
        );
        // The first answer of each capture is the tool call, the second the text.
        let calls = events
            .iter()
            .filter(|event| matches!(event, ProviderEvent::ToolCallRequested { .. }))
            .count();
        assert_eq!(calls, usize::from(name.ends_with("-1")), "{name}");
        insta::assert_json_snapshot!(name.clone(), events);
    }
}

#[tokio::test]
async fn a_body_cut_before_its_last_event_is_a_disconnection() {
    for (name, api, body) in bodies() {
        // Everything up to the last event's start: the call's end never arrives.
        let cut = body
            .trim_end()
            .rfind("\n\n")
            .map_or("", |end| &body[..end + 2]);
        // (Gemini's end is the chunk with its finish reason, the last one.)
        let events = decode(api, cut, cut.len().max(1)).await;
        match events.last() {
            Some(ProviderEvent::Failure { failure }) => assert_eq!(
                failure.kind,
                panewise_providers::FailureKind::StreamDisconnected,
                "{name}"
            ),
            other => panic!("{name}: ended with {other:?}"),
        }
    }
}
