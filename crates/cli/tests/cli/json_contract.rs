//! `docs/JSON.md` is the contract of `panewise run --json`: every type a line can carry is
//! listed there with every field it may hold, and nothing is listed that cannot be emitted.
//!
//! The lines checked are real: `panewise run --json` over the mock's scenarios (an answer with a
//! tool, parallel tools, a failing tool, a rate limit, a cut stream, an approval asked and
//! denied). The list of types that can be emitted comes from serde itself: the agent's events
//! are `ProviderEvent`'s tags, read from the error a tag it does not know gets.

use std::collections::{BTreeMap, BTreeSet};

use panewise_mock_server::Scenario;

use crate::run_own_loop::Machine;

/// panewise's own lines of `run --json`, beside the agent's events.
const OWN_LINES: [&str; 3] = ["session_started", "approval_answered", "session_ended"];

/// The `type`s of one section of `docs/JSON.md` and the fields listed for each, from bullets
/// written ``- `type` {`field`, …}: …`` (a bullet may go on over indented lines).
fn documented(section: &str) -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(crate::workspace_path("docs/JSON.md")).unwrap();
    let start = doc
        .find(section)
        .unwrap_or_else(|| panic!("docs/JSON.md has no section {section}"));
    let rest = &doc[start + section.len()..];
    let body = &rest[..rest.find("\n# ").unwrap_or(rest.len())];
    let mut bullets: Vec<String> = Vec::new();
    for line in body.lines() {
        if let Some(bullet) = line.strip_prefix("- `") {
            bullets.push(bullet.to_owned());
        } else if let (Some(last), true) = (bullets.last_mut(), line.starts_with("  ")) {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    let mut types = BTreeMap::new();
    for bullet in bullets {
        let Some((name, after)) = bullet.split_once('`') else {
            continue;
        };
        let Some(fields) = after
            .trim_start()
            .strip_prefix('{')
            .and_then(|fields| fields.split_once('}'))
            .map(|(fields, _)| fields)
        else {
            continue;
        };
        let fields = fields
            .split(',')
            .map(|field| field.trim().trim_matches('`').to_owned())
            .filter(|field| !field.is_empty())
            .collect();
        types.insert(name.to_owned(), fields);
    }
    assert!(!types.is_empty(), "no types listed under {section}");
    types
}

/// Every tag `ProviderEvent` deserialises, as serde lists them for a tag it does not know.
fn provider_event_tags() -> BTreeSet<String> {
    let error =
        serde_json::from_str::<panewise_providers::ProviderEvent>(r#"{"type":"no such event"}"#)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
    let expected = error
        .split_once("expected one of ")
        .map(|(_, list)| list.split(" at line ").next().unwrap_or(list))
        .unwrap_or_else(|| panic!("serde did not list the tags: {error}"));
    expected
        .split(", ")
        .map(|tag| {
            tag.trim()
                .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_')
                .trim_matches('`')
                .to_owned()
        })
        .filter(|tag| !tag.is_empty())
        .collect()
}

/// The lines `panewise run --json` printed with the mock serving `scenario`.
fn run_lines(scenario: Scenario, extra: &[&str]) -> Vec<serde_json::Value> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(crate::start(scenario));
    let machine = Machine::new();
    std::fs::write(
        machine.path("project/panewise.toml"),
        format!("[providers.mock]\nbase_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    let mut args = vec!["run", "--json"];
    args.extend_from_slice(extra);
    args.push("print hello with the shell");
    let output = machine.run(&args);
    runtime.block_on(server.shutdown());
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{scenario:?}: not JSON ({error}): {line}"))
        })
        .collect();
    assert!(!lines.is_empty(), "{scenario:?} printed nothing");
    lines
}

#[test]
fn every_line_of_run_json_is_listed_with_its_fields_and_every_listed_type_can_be_emitted() {
    let listed = documented("# `panewise run --json`");
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let runs = [
        (Scenario::ToolThenAnswer, &[][..]),
        (Scenario::ParallelCalls, &[][..]),
        (Scenario::FailingTool, &[][..]),
        (Scenario::RateLimit, &[][..]),
        (Scenario::StreamCut, &[][..]),
        // `ask` with nobody at a terminal: the request is asked and denied by the session.
        (Scenario::ToolThenAnswer, &["--approval", "ask"][..]),
        (Scenario::ToolThenAnswer, &["--approval", "read-only"][..]),
    ];
    for (scenario, extra) in runs {
        let lines = run_lines(scenario, extra);
        assert_eq!(lines[0]["type"], "session_started", "{scenario:?}");
        assert_eq!(
            lines.last().map(|line| line["type"].clone()),
            Some("session_ended".into()),
            "{scenario:?}"
        );
        for line in &lines {
            assert_eq!(line["v"], 1, "{scenario:?}: {line}");
            let kind = line["type"].as_str().unwrap_or_default().to_owned();
            let fields = listed
                .get(&kind)
                .unwrap_or_else(|| panic!("{scenario:?}: `{kind}` is not in docs/JSON.md: {line}"));
            for key in line.as_object().into_iter().flat_map(|line| line.keys()) {
                assert!(
                    key == "v" || key == "type" || fields.contains(key),
                    "{scenario:?}: `{kind}` carries `{key}`, which docs/JSON.md does not list: {line}"
                );
            }
            seen.insert(kind);
        }
    }
    for kind in [
        "session_started",
        "approval_answered",
        "session_ended",
        "tool_ended",
    ] {
        assert!(seen.contains(kind), "no run emitted `{kind}`");
    }
    // The reverse: everything listed can be emitted, and everything that can be is listed.
    let mut emittable: BTreeSet<String> = provider_event_tags();
    assert!(emittable.remove("session_started"), "{emittable:?}");
    emittable.insert("agent_session_started".to_owned());
    emittable.extend(OWN_LINES.map(str::to_owned));
    let listed_types: BTreeSet<String> = listed.keys().cloned().collect();
    assert_eq!(
        listed_types, emittable,
        "docs/JSON.md's run section and what run --json can emit differ"
    );
}
