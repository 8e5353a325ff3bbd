//! Unknown types are kept and counted; malformed lines are numbered errors and decoding goes on.

use panewise_providers::{decode_all, Decoder, Provider, ProviderEvent};

#[test]
fn unknown_line_types_are_kept_verbatim_and_counted() {
    let stream = concat!(
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#,
        "\n",
        r#"{"type":"system","subtype":"hook_started","hook":"x"}"#,
        "\n",
    );
    let (decoded, counts) = decode_all(Provider::ClaudeCode, stream.as_bytes());
    assert_eq!(counts.unknown_events, 2);
    assert_eq!(counts.decode_errors, 0);
    assert_eq!(
        decoded[1],
        Ok(ProviderEvent::Unknown {
            event_type: Some("system/hook_started".into()),
            raw: r#"{"type":"system","subtype":"hook_started","hook":"x"}"#.into(),
        })
    );
    for provider in [Provider::Codex, Provider::GeminiCli] {
        let (decoded, counts) = decode_all(provider, b"{\"type\":\"brand.new\"}\n");
        assert_eq!(counts.unknown_events, 1, "{provider}");
        assert!(
            matches!(&decoded[0], Ok(ProviderEvent::Unknown { event_type: Some(kind), .. }) if kind == "brand.new")
        );
    }
}

#[test]
fn a_malformed_line_is_an_error_with_its_number_and_decoding_continues() {
    let stream = b"{\"type\":\"turn.started\"}\n\n{not json\n[1,2]\n{\"type\":\"turn.started\"}";
    let (decoded, counts) = decode_all(Provider::Codex, stream);
    assert_eq!(counts.lines, 5);
    assert_eq!(counts.decode_errors, 2);
    assert_eq!(counts.events, 2);
    let error_lines: Vec<u64> = decoded
        .iter()
        .filter_map(|item| item.as_ref().err().map(|error| error.line))
        .collect();
    assert_eq!(error_lines, vec![3, 4]);
    assert!(matches!(
        decoded.last(),
        Some(Ok(ProviderEvent::TurnStarted { .. }))
    ));
}

#[test]
fn crlf_line_ends_and_invalid_utf8_are_handled() {
    let (decoded, counts) = decode_all(
        Provider::Codex,
        b"{\"type\":\"turn.started\"}\r\n\xff\xfe\n",
    );
    assert_eq!(decoded[0], Ok(ProviderEvent::TurnStarted { prompt: None }));
    assert_eq!(counts.decode_errors, 1);
}

#[test]
fn an_endless_line_is_reported_once_and_skipped() {
    let mut decoder = Decoder::new(Provider::GeminiCli).with_max_line_bytes(16);
    let mut out = Vec::new();
    decoder.feed(&[b'x'; 10], &mut out);
    decoder.feed(&[b'x'; 10], &mut out);
    decoder.feed(b"x\n{\"type\":\"init\"}\n", &mut out);
    decoder.finish(&mut out);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0].as_ref().err().map(|error| error.line), Some(1));
    assert!(matches!(out[1], Ok(ProviderEvent::SessionStarted { .. })));
}

#[test]
fn every_capture_names_its_cli_in_its_first_lines() {
    for (provider, path) in crate::fixtures() {
        let bytes = crate::fixture(&path);
        let detected = bytes
            .split(|byte| *byte == b'\n')
            .take(3)
            .find_map(panewise_providers::Provider::detect);
        assert_eq!(detected, Some(provider), "{path}");
    }
    assert_eq!(
        panewise_providers::Provider::detect(b"{\"type\":\"error\"}"),
        None
    );
    assert_eq!(panewise_providers::Provider::detect(b"not json"), None);
}
