//! Usage and cost fields with absurd values never panic and never wrap: they saturate, or the
//! line is refused with a decode error naming the line and the field.

use panewise_providers::{decode_all, fold_events, summarize, Mapper, ModelTable, Provider};

fn decode_errors(provider: Provider, stream: &str) -> Vec<String> {
    decode_all(provider, stream.as_bytes())
        .0
        .into_iter()
        .filter_map(Result::err)
        .map(|error| error.to_string())
        .collect()
}

const CLAUDE_INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s","model":"m"}"#;

fn claude_result(usage: &str, extra: &str) -> String {
    format!(
        "{CLAUDE_INIT}\n{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"usage\":{usage}{extra}}}\n"
    )
}

#[test]
fn a_bad_token_count_is_refused_naming_the_line_and_the_field() {
    for (value, shown) in [
        ("-5", "`-5`"),
        ("1.5", "`1.5`"),
        ("18446744073709551616", "`18446744073709551616`"),
        ("1e400", "`1e400`"),
        ("\"12\"", "`\"12\"`"),
    ] {
        let stream = claude_result(&format!("{{\"input_tokens\":{value}}}"), "");
        let errors = decode_errors(Provider::ClaudeCode, &stream);
        assert_eq!(errors.len(), 1, "{value}: {errors:?}");
        assert!(errors[0].starts_with("line 2: "), "{errors:?}");
        assert!(errors[0].contains(shown), "{value}: {errors:?}");
        assert!(errors[0].contains("`input_tokens`"), "{value}: {errors:?}");
        assert!(!errors[0].contains("line 1 column"), "{errors:?}");
        let stream = format!(
            "{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{value},\"output_tokens\":1}}}}\n"
        );
        let errors = decode_errors(Provider::Codex, &stream);
        assert_eq!(errors.len(), 1, "codex {value}: {errors:?}");
    }
}

#[test]
fn a_bad_cost_is_refused_naming_the_field() {
    for cost in ["-1", "-0.5"] {
        let stream = claude_result("{}", &format!(",\"total_cost_usd\":{cost}"));
        let errors = decode_errors(Provider::ClaudeCode, &stream);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("`total_cost_usd`"), "{errors:?}");
    }
}

#[test]
fn a_negative_zero_cost_reads_as_zero_and_no_reported_cost_is_absent() {
    let stream = claude_result("{\"input_tokens\":1}", ",\"total_cost_usd\":-0.0");
    let (decoded, counts) = decode_all(Provider::ClaudeCode, stream.as_bytes());
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    let cost = summary.cost_usd.unwrap();
    assert!(cost == 0.0 && cost.is_sign_positive(), "{cost}");
    // A model breakdown without any `costUSD`: the cost is not reported, not zero.
    let stream = claude_result(
        "{}",
        r#","model_usage_since_last_result":{"m":{"inputTokens":5,"outputTokens":1}}"#,
    );
    let (decoded, counts) = decode_all(Provider::ClaudeCode, stream.as_bytes());
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.cost_usd, None);
    assert_eq!(summary.input_tokens, Some(5));
}

#[test]
fn sums_that_overflow_saturate() {
    let huge = u64::MAX;
    let stream = claude_result(
        &format!("{{\"input_tokens\":{huge},\"cache_creation_input_tokens\":3080}}"),
        &format!(
            r#","model_usage_since_last_result":{{"a":{{"inputTokens":{huge},"outputTokens":{huge}}},"b":{{"inputTokens":3080,"outputTokens":{huge}}}}}"#
        ),
    );
    let (decoded, counts) = decode_all(Provider::ClaudeCode, stream.as_bytes());
    assert_eq!(counts.decode_errors, 0);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::ClaudeCode, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.input_tokens, Some(huge));
    assert_eq!(summary.output_tokens, Some(huge));
    // The same through a per-call usage line and Codex's and Gemini's sums.
    let stream = format!(
        "{{\"type\":\"thread.started\",\"thread_id\":\"t\"}}\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{huge},\"cached_input_tokens\":{huge},\"cache_write_input_tokens\":{huge},\"output_tokens\":{huge}}}}}\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n"
    );
    let (decoded, counts) = decode_all(Provider::Codex, stream.as_bytes());
    assert_eq!(counts.decode_errors, 0);
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::Codex, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.output_tokens, Some(huge));
    let stream = format!(
        "{{\"type\":\"result\",\"status\":\"success\",\"stats\":{{\"total_tokens\":{huge},\"input_tokens\":{huge},\"output_tokens\":{huge},\"models\":{{\"m\":{{\"total_tokens\":{huge},\"input_tokens\":{huge},\"output_tokens\":{huge}}}}}}}}}\n"
    );
    let (decoded, counts) = decode_all(Provider::GeminiCli, stream.as_bytes());
    assert_eq!(counts.decode_errors, 0, "{decoded:?}");
    let events: Vec<_> = decoded.into_iter().map(Result::unwrap).collect();
    let mut mapper = Mapper::new(Provider::GeminiCli, ModelTable::built_in());
    let fold = fold_events(&mut mapper, &events);
    let summary = summarize(&mapper, counts, &events, &fold.state);
    assert_eq!(summary.output_tokens, Some(huge));
}
