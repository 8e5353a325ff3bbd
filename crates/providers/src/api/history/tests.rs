//! RenderedHistory against serde's bodies and a whole-request pairing check.

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::api::{ModelRequest, ToolDefinition};
use crate::error::PairingError;

fn user(text: &str) -> ApiMessage<'static> {
    ApiMessage::User {
        text: Cow::Owned(text.to_owned()),
    }
}

fn assistant(text: &str) -> ApiMessage<'static> {
    ApiMessage::Assistant {
        text: Cow::Owned(text.to_owned()),
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ApiMessage<'static> {
    ApiMessage::ToolCall {
        call_id: Cow::Owned(id.to_owned()),
        name: Cow::Owned(name.to_owned()),
        arguments: Cow::Owned(arguments.to_owned()),
    }
}

fn result(id: &str, name: &str, output: &str, is_error: bool) -> ApiMessage<'static> {
    ApiMessage::ToolResult {
        call_id: Cow::Owned(id.to_owned()),
        name: Cow::Owned(name.to_owned()),
        output: Cow::Owned(output.to_owned()),
        is_error,
    }
}

fn tools() -> Vec<ToolDefinition<'static>> {
    vec![ToolDefinition {
        name: Cow::Borrowed("shell"),
        description: Cow::Borrowed("Runs a \"command\"."),
        parameters: Cow::Owned(json!({"type": "object", "properties": {"input": []}})),
    }]
}

/// The pairing check as the own loop's request builder states it, over the flat messages:
/// the reference the history's counts must agree with.
fn reference_pairing(messages: &[ApiMessage<'_>]) -> Result<(), PairingError> {
    let mut calls: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            ApiMessage::ToolCall { call_id, .. } => {
                if calls.insert(call_id, (index, false)).is_some() {
                    return Err(PairingError::DuplicateCall {
                        call_id: call_id.to_string(),
                        index,
                    });
                }
            }
            ApiMessage::ToolResult { call_id, .. } => match calls.get_mut(call_id.as_ref()) {
                Some((_, answered)) => *answered = true,
                None => {
                    return Err(PairingError::ResultWithoutCall {
                        call_id: call_id.to_string(),
                        index,
                    })
                }
            },
            ApiMessage::User { .. }
            | ApiMessage::Assistant { .. }
            | ApiMessage::Compaction { .. } => {}
        }
    }
    match calls
        .iter()
        .filter(|(_, (_, answered))| !answered)
        .min_by_key(|(_, (index, _))| *index)
    {
        Some((call_id, (index, _))) => Err(PairingError::CallWithoutResult {
            call_id: (*call_id).to_owned(),
            index: *index,
        }),
        None => Ok(()),
    }
}

/// A request's prompt caching: whether it is on, and the session's cache key.
type Cache = (bool, Option<&'static str>);

/// Caching on with a key, on without one, and off (a key given but not to be sent).
const CACHES: [Cache; 3] = [
    (true, Some("panewise-0f")),
    (true, None),
    (false, Some("k")),
];

/// Caching as the own loop asks for it by default.
const ON: Cache = (true, Some("panewise-0f"));

/// What a whole-request render gives for `entries`: the pairing check, then serde.
fn reference_body(
    api: ApiKind,
    entries: &[Vec<ApiMessage<'static>>],
    system: Option<&str>,
    tools: &[ToolDefinition<'static>],
    (prompt_cache, cache_key): Cache,
) -> Result<Vec<u8>, RequestError> {
    let messages: Vec<ApiMessage<'static>> = entries.iter().flatten().cloned().collect();
    reference_pairing(&messages)?;
    api.body(&ModelRequest {
        model: Cow::Borrowed("claude-\"x\""),
        system: system.map(Cow::Borrowed),
        messages: Cow::Owned(messages),
        tools: Cow::Borrowed(tools),
        max_output_tokens: 512,
        prompt_cache,
        cache_key: cache_key.map(Cow::Borrowed),
        context_management: None,
    })
}

fn head<'a>(
    system: Option<&'a str>,
    tools: &'a [ToolDefinition<'a>],
    (prompt_cache, cache_key): Cache,
) -> RequestHead<'a> {
    RequestHead {
        model: "claude-\"x\"",
        system,
        tools,
        max_output_tokens: 512,
        prompt_cache,
        cache_key,
        context_management: None,
    }
}

fn round(api: ApiKind) -> Vec<Vec<ApiMessage<'static>>> {
    vec![
        vec![user("run \"it\"\n")],
        vec![
            assistant("I'll run it."),
            call("c1", "shell", r#" {"command": "echo a"} "#),
            call("c2", "shell", ""),
        ],
        vec![result("c1", "shell", "a\u{1}é", false)],
        vec![result("c2", "shell", "boom", api == ApiKind::Gemini)],
        vec![assistant("Done.")],
    ]
}

#[test]
fn a_round_renders_as_serde_renders_it_for_every_api() {
    let tools = tools();
    for api in ApiKind::ALL {
        for system in [None, Some("be \"brief\"")] {
            for tools in [&tools[..], &[]] {
                for cache in CACHES {
                    let entries = round(api);
                    let mut history = RenderedHistory::new(api);
                    for entry in &entries {
                        history.push(entry);
                    }
                    let expected = reference_body(api, &entries, system, tools, cache);
                    assert!(expected.is_ok(), "{api}: {expected:?}");
                    let got = history.body(&head(system, tools, cache));
                    assert_eq!(got, expected, "{api} {cache:?}");
                    assert_eq!(history.message_count(), 7);
                }
            }
        }
    }
}

#[test]
fn an_empty_history_renders_an_empty_array() {
    let tools = tools();
    for api in ApiKind::ALL {
        let history = RenderedHistory::new(api);
        for cache in CACHES {
            assert_eq!(
                history.body(&head(None, &tools, cache)),
                reference_body(api, &[], None, &tools, cache)
            );
        }
    }
}

#[test]
fn edits_rerender_only_their_entries_and_keep_the_bytes_exact() {
    let tools = tools();
    for api in ApiKind::ALL {
        let mut entries = round(api);
        let mut history = RenderedHistory::new(api);
        for entry in &entries {
            history.push(entry);
        }
        // Mask the first result, then fold the first round into a summary.
        let masked = vec![result("c1", "shell", "[masked: 3 chars]", false)];
        assert_eq!(history.replace(2, &masked), Ok(()));
        entries[2] = masked;
        let summary = vec![user("<summary>ran two commands</summary>")];
        assert_eq!(history.splice(0..4, Some(&summary)), Ok(()));
        entries.splice(0..4, [summary]);
        for cache in CACHES {
            assert_eq!(
                history.body(&head(Some("s"), &tools, cache)),
                reference_body(api, &entries, Some("s"), &tools, cache)
            );
        }
        assert_eq!(history.len(), 2);
        assert_eq!(history.message_count(), 2);
        assert_eq!(history.call_name("c1"), None);
    }
}

#[test]
fn pairing_errors_are_the_whole_request_checks() {
    let tools = tools();
    let cases: Vec<(Vec<Vec<ApiMessage<'static>>>, &str)> = vec![
        (
            vec![vec![result("c9", "shell", "x", false)]],
            "ResultWithoutCall",
        ),
        (
            vec![vec![call("c1", "shell", "{}")], vec![user("hm")]],
            "CallWithoutResult",
        ),
        (
            vec![
                vec![call("c1", "shell", "{}")],
                vec![result("c1", "shell", "x", false)],
                vec![call("c1", "shell", "{}")],
            ],
            "DuplicateCall",
        ),
        (
            vec![
                vec![result("c1", "shell", "early", false)],
                vec![call("c1", "shell", "{}")],
                vec![result("c1", "shell", "late", false)],
            ],
            "ResultWithoutCall",
        ),
    ];
    for (entries, kind) in cases {
        for api in ApiKind::ALL {
            let mut history = RenderedHistory::new(api);
            for entry in &entries {
                history.push(entry);
            }
            let got = history.body(&head(None, &tools, ON));
            assert_eq!(got, reference_body(api, &entries, None, &tools, ON));
            assert!(format!("{got:?}").contains(kind), "{kind}: {got:?}");
        }
    }
}

#[test]
fn bad_arguments_fail_every_body_until_their_call_leaves() {
    let tools = tools();
    for api in ApiKind::ALL {
        let mut entries = vec![
            vec![user("go")],
            vec![call("c1", "shell", "{not json")],
            vec![result("c1", "shell", "x", false)],
            vec![user("next")],
        ];
        let mut history = RenderedHistory::new(api);
        for entry in &entries {
            history.push(entry);
        }
        let got = history.body(&head(None, &tools, ON));
        assert!(
            matches!(got, Err(RequestError::ToolArguments { .. })),
            "{got:?}"
        );
        assert_eq!(got, reference_body(api, &entries, None, &tools, ON));
        assert_eq!(history.splice(1..3, None), Ok(()));
        entries.drain(1..3);
        assert_eq!(
            history.body(&head(None, &tools, ON)),
            reference_body(api, &entries, None, &tools, ON)
        );
    }
}

#[test]
fn edits_outside_the_history_are_errors() {
    let mut history = RenderedHistory::new(ApiKind::Anthropic);
    history.push(&[user("a")]);
    assert!(history.replace(1, &[user("b")]).is_err());
    assert!(history.splice(0..2, None).is_err());
    assert!(history.splice(1..1, Some(&[user("b")])).is_err());
    assert_eq!(history.splice(1..1, None), Ok(()));
    assert_eq!(history.len(), 1);
}

#[test]
fn write_body_reuses_the_callers_buffer() {
    let tools = tools();
    let mut history = RenderedHistory::new(ApiKind::OpenAi);
    for entry in round(ApiKind::OpenAi) {
        history.push(&entry);
    }
    let mut out = b"left over".to_vec();
    assert_eq!(
        history.write_body(&head(None, &tools, ON), &mut out),
        Ok(())
    );
    assert_eq!(Ok(out), history.body(&head(None, &tools, ON)));
    assert!(history.fragment_bytes() > 0);
    assert!(history.heap_bytes() > history.fragment_bytes());
}

/// The history's running counts, recounted from its entries: the shortcut the body takes
/// must agree with the walk.
fn recount(history: &RenderedHistory) -> (usize, usize, usize, usize) {
    let mut calls: BTreeMap<&str, CallMarks> = BTreeMap::new();
    let (mut parts, mut bytes, mut broken) = (0, 0, 0);
    for entry in &history.entries {
        for (index, part) in entry.parts.iter().enumerate() {
            parts += 1;
            match &part.json {
                Ok(json) => bytes += json.len(),
                Err(_) => broken += 1,
            }
            if let Some((link, id)) = &part.link {
                calls.entry(id).or_default().marks.push(Mark {
                    at: (entry.seq, index as u32),
                    link: *link,
                });
            }
        }
    }
    let unpaired = calls.values().filter(|marks| !marks.is_paired()).count();
    (parts, bytes, broken, unpaired)
}

fn counts(history: &RenderedHistory) -> (usize, usize, usize, usize) {
    (
        history.parts,
        history.fragment_bytes,
        history.broken,
        history.unpaired,
    )
}

const IDS: [&str; 4] = ["c0", "c1", "c2", "c3"];
const ARGUMENTS: [&str; 6] = ["{}", "", "  ", r#" {"path": "a\"b"} "#, "[1, 2]", "{oops"];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z \"\\\\\n\t\u{1}\u{7f}é🚀/<>&']{0,24}",
        Just(String::new()),
    ]
}

fn message() -> impl Strategy<Value = ApiMessage<'static>> {
    prop_oneof![
        text().prop_map(|text| user(&text)),
        text().prop_map(|text| assistant(&text)),
        (0..IDS.len(), "[a-z_\"]{0,6}", 0..ARGUMENTS.len()).prop_map(|(id, name, arguments)| call(
            IDS[id],
            &name,
            ARGUMENTS[arguments]
        )),
        (0..IDS.len(), "[a-z_]{0,6}", text(), any::<bool>())
            .prop_map(|(id, name, output, error)| result(IDS[id], &name, &output, error)),
    ]
}

fn entry() -> impl Strategy<Value = Vec<ApiMessage<'static>>> {
    prop::collection::vec(message(), 0..4)
}

#[derive(Debug, Clone)]
enum Op {
    Push(Vec<ApiMessage<'static>>),
    Replace(usize, Vec<ApiMessage<'static>>),
    Splice(usize, usize, Option<Vec<ApiMessage<'static>>>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => entry().prop_map(Op::Push),
        1 => (any::<usize>(), entry()).prop_map(|(at, entry)| Op::Replace(at, entry)),
        1 => (any::<usize>(), 0usize..4, prop::option::of(entry()))
            .prop_map(|(at, len, inserted)| Op::Splice(at, len, inserted)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// After every push and edit, the assembled body is byte for byte the whole-request
    /// render of the same messages, or fails with the same error, in every API.
    #[test]
    fn the_assembled_body_is_the_whole_request_render(
        ops in prop::collection::vec(op(), 0..24),
        api in prop::sample::select(ApiKind::ALL.to_vec()),
        system in prop::option::of(text()),
        with_tools in any::<bool>(),
        cache in prop::sample::select(CACHES.to_vec()),
    ) {
        let tools = if with_tools { tools() } else { Vec::new() };
        let mut history = RenderedHistory::new(api);
        let mut entries: Vec<Vec<ApiMessage<'static>>> = Vec::new();
        for op in ops {
            match op {
                Op::Push(entry) => {
                    history.push(&entry);
                    entries.push(entry);
                }
                Op::Replace(at, entry) => {
                    if entries.is_empty() {
                        prop_assert!(history.replace(0, &entry).is_err());
                        continue;
                    }
                    let at = at % entries.len();
                    prop_assert_eq!(history.replace(at, &entry), Ok(()));
                    entries[at] = entry;
                }
                Op::Splice(at, len, inserted) => {
                    let start = at % (entries.len() + 1);
                    let end = (start + len).min(entries.len());
                    let result = history.splice(start..end, inserted.as_deref());
                    if start == end && inserted.is_some() {
                        prop_assert!(result.is_err());
                        continue;
                    }
                    prop_assert_eq!(result, Ok(()));
                    entries.splice(start..end, inserted);
                }
            }
            let expected = reference_body(api, &entries, system.as_deref(), &tools, cache);
            prop_assert_eq!(history.body(&head(system.as_deref(), &tools, cache)), expected);
            prop_assert_eq!(history.len(), entries.len());
            prop_assert_eq!(counts(&history), recount(&history));
            prop_assert_eq!(history.calls.len(), entries.iter().flatten().filter(|m| matches!(m, ApiMessage::ToolCall { .. } | ApiMessage::ToolResult { .. })).map(|m| match m { ApiMessage::ToolCall { call_id, .. } | ApiMessage::ToolResult { call_id, .. } => call_id.to_string(), _ => String::new() }).collect::<std::collections::BTreeSet<_>>().len());
            prop_assert_eq!(history.message_count(), entries.iter().map(Vec::len).sum::<usize>());
        }
    }
}

#[test]
fn marked_bodies_are_serdes_marked_bodies() {
    let tools = tools();
    // (marks, the `cache_control`s an Anthropic body with caching carries: system, last
    // tool, and one per mark inside the 7 blocks)
    let table: [(&[usize], usize); 5] = [
        (&[6], 3),
        (&[2, 6], 4),
        (&[0, 3], 4),
        (&[], 2),
        (&[6, 40], 3), // past the last block: ignored
    ];
    for api in ApiKind::ALL {
        let entries = round(api);
        let mut history = RenderedHistory::new(api);
        for entry in &entries {
            history.push(entry);
        }
        let messages: Vec<ApiMessage<'static>> = entries.iter().flatten().cloned().collect();
        for (marks, count) in table {
            for cache in CACHES {
                let request = ModelRequest {
                    model: Cow::Borrowed("claude-\"x\""),
                    system: Some(Cow::Borrowed("s")),
                    messages: Cow::Borrowed(&messages),
                    tools: Cow::Borrowed(&tools),
                    max_output_tokens: 512,
                    prompt_cache: cache.0,
                    cache_key: cache.1.map(Cow::Borrowed),
                    context_management: None,
                };
                let want = match api {
                    ApiKind::Anthropic => anthropic::body_with_breakpoints(&request, marks),
                    _ => api.body(&request),
                };
                let mut got = Vec::new();
                let head = head(Some("s"), &tools, cache);
                assert_eq!(history.write_body_marked(&head, marks, &mut got), Ok(()));
                assert_eq!(Ok(got.clone()), want, "{api} {marks:?} {cache:?}");
                let found = String::from_utf8_lossy(&got)
                    .matches("cache_control")
                    .count();
                let expected = if api == ApiKind::Anthropic && cache.0 {
                    count
                } else {
                    0
                };
                assert_eq!(found, expected, "{api} {marks:?} {cache:?}");
            }
        }
        // The last block alone is `write_body`'s placement.
        let mut marked = Vec::new();
        let on = head(Some("s"), &tools, ON);
        assert_eq!(history.write_body_marked(&on, &[6], &mut marked), Ok(()));
        assert_eq!(history.body(&on), Ok(marked));
    }
}

#[test]
fn block_hashes_change_only_where_the_history_was_edited() {
    for api in ApiKind::ALL {
        let entries = round(api);
        let mut history = RenderedHistory::new(api);
        for entry in &entries {
            history.push(entry);
        }
        let before: Vec<u64> = history.block_hashes().collect();
        assert_eq!(before.len(), 7);
        // (block, entry): the assistant's entry holds blocks 1 to 3.
        let table = [
            (0, 0),
            (1, 1),
            (3, 1),
            (4, 2),
            (5, 3),
            (6, 4),
            (7, 5),
            (99, 5),
        ];
        for (block, entry) in table {
            assert_eq!(history.entry_of_block(block), entry, "{api} block {block}");
        }
        // Masking entry 2 (block 4) changes that block's hash and no other.
        let masked = vec![result("c1", "shell", "[masked]", false)];
        assert_eq!(history.replace(2, &masked), Ok(()));
        let after: Vec<u64> = history.block_hashes().collect();
        let changed: Vec<usize> = (0..7).filter(|&i| before[i] != after[i]).collect();
        assert_eq!(changed, [4], "{api}");
        // Rendered again unchanged, a block hashes as before.
        assert_eq!(history.replace(2, &entries[2]), Ok(()));
        assert!(history.block_hashes().eq(before.iter().copied()), "{api}");
    }
}
