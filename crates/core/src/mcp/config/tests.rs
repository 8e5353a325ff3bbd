use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "HOME_DIR" => Some("/home/me".to_owned()),
        "TOKEN" => Some("secret".to_owned()),
        _ => None,
    }
}

#[test]
fn expansion_table() {
    let cases = [
        ("plain", "plain"),
        ("${HOME_DIR}/x", "/home/me/x"),
        ("Bearer ${TOKEN}", "Bearer secret"),
        ("${UNSET}", ""),
        ("${UNSET:-fallback}", "fallback"),
        ("${TOKEN:-fallback}", "secret"),
        ("${unterminated", "${unterminated"),
        ("$TOKEN", "$TOKEN"),
    ];
    for (input, expected) in cases {
        assert_eq!(expand_vars(input, &env), expected, "{input}");
    }
}

#[test]
fn server_names_table() {
    let cases = [
        ("files", true),
        ("my-server_2", true),
        ("", false),
        ("_x", false),
        ("a__b", false),
        ("a b", false),
        ("a.b", false),
    ];
    for (name, valid) in cases {
        assert_eq!(valid_server_name(name), valid, "{name}");
    }
}

#[test]
fn toml_tables_are_read_strictly() {
    let ok = parse_table(
        &json!({"project_servers": true, "tool_timeout_secs": 30, "servers": {
            "files": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
            "web": {"url": "http://127.0.0.1:3001/mcp", "env_headers": {"Authorization": "TOKEN"}, "tool_timeout_secs": 5},
            "off": {"command": "x", "enabled": false}
        }}),
        Source::User,
    )
    .unwrap();
    assert_eq!(ok.project_servers, Some(true));
    assert_eq!(ok.tool_timeout_secs, Some(30));
    assert_eq!(
        ok.servers["files"].transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "x".into()],
            env: BTreeMap::from([("A".to_owned(), "1".to_owned())]),
        }
    );
    assert_eq!(ok.servers["web"].tool_timeout_secs, Some(5));
    assert!(!ok.servers["off"].enabled);

    let refused = [
        (json!({"nope": 1}), "mcp.nope"),
        (json!({"project_servers": "yes"}), "mcp.project_servers"),
        (json!({"tool_timeout_secs": 0}), "mcp.tool_timeout_secs"),
        (json!({"tool_budget_tokens": -1}), "mcp.tool_budget_tokens"),
        (json!({"servers": {"a": {}}}), "mcp.servers.a"),
        (
            json!({"servers": {"a": {"command": "x", "url": "http://h"}}}),
            "mcp.servers.a",
        ),
        (
            json!({"servers": {"a": {"command": "x", "colour": 1}}}),
            "mcp.servers.a",
        ),
        (
            json!({"servers": {"a": {"url": "ftp://h"}}}),
            "mcp.servers.a.url",
        ),
        (
            json!({"servers": {"a": {"url": "http://h", "args": ["x"]}}}),
            "mcp.servers.a",
        ),
        (
            json!({"servers": {"a": {"command": "x", "env_headers": {"A": "B"}}}}),
            "mcp.servers.a.env_headers",
        ),
        (
            json!({"servers": {"a__b": {"command": "x"}}}),
            "mcp.servers.a__b",
        ),
        (
            json!({"servers": {"a": {"command": "x", "tool_timeout_secs": 99999}}}),
            "mcp.servers.a.tool_timeout_secs",
        ),
    ];
    for (table, key) in refused {
        let problem = parse_table(&table, Source::User).unwrap_err();
        assert_eq!(problem.key, key, "{table}: {}", problem.reason);
    }
}

#[test]
fn mcp_json_reads_claude_codes_shapes() {
    let text = r#"{"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME_DIR}"], "env": {"K": "${TOKEN}"}},
        "web": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}"#;
    let servers = parse_mcp_json(text, &env).unwrap();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].source, Source::McpJson);
    assert_eq!(
        servers[0].transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                "/home/me".into()
            ],
            env: BTreeMap::from([("K".to_owned(), "secret".to_owned())]),
        }
    );
    match &servers[1].transport {
        Transport::Http { url, headers, .. } => {
            assert_eq!(url, "http://127.0.0.1:3001/mcp");
            assert_eq!(headers["Authorization"], "Bearer secret");
        }
        other => panic!("{other:?}"),
    }
    let refused = [
        (
            r#"{"mcpServers": {"a": {"type": "sse", "url": "http://h"}}}"#,
            "mcpServers.a.type",
        ),
        (r#"{"mcpServers": {"a": {}}}"#, "mcpServers.a"),
        (
            r#"{"mcpServers": {"a__b": {"command": "x"}}}"#,
            "mcpServers.a__b",
        ),
        (r#"{"mcpServers": 3}"#, "mcpServers"),
    ];
    for (text, key) in refused {
        assert_eq!(parse_mcp_json(text, &env).unwrap_err().key, key, "{text}");
    }
    assert!(parse_mcp_json("{}", &env).unwrap().is_empty());
}

fn server(name: &str, source: Source, command: &str) -> ServerConfig {
    ServerConfig {
        name: name.to_owned(),
        transport: Transport::Stdio {
            command: command.to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
        },
        tool_timeout_secs: None,
        enabled: true,
        source,
    }
}

#[test]
fn merge_layers_and_gates_project_servers() {
    let user = McpSettings {
        servers: BTreeMap::from([
            ("a".to_owned(), server("a", Source::User, "user-a")),
            ("b".to_owned(), server("b", Source::User, "user-b")),
        ]),
        project_servers: None,
        tool_timeout_secs: Some(9),
        tool_budget_tokens: None,
    };
    let project = McpSettings {
        servers: BTreeMap::from([("b".to_owned(), server("b", Source::Project, "project-b"))]),
        ..McpSettings::default()
    };
    let settings = project.over(user);
    let json = [
        server("a", Source::McpJson, "json-a"),
        server("c", Source::McpJson, "json-c"),
    ];
    // (project_servers, expected: name -> (command, started))
    let cases = [
        (
            true,
            [
                ("a", "json-a", true),
                ("b", "project-b", true),
                ("c", "json-c", true),
            ],
        ),
        (
            false,
            [
                ("a", "json-a", false),
                ("b", "project-b", false),
                ("c", "json-c", false),
            ],
        ),
    ];
    for (trusted, expected) in cases {
        let plans = merge(&settings, &json, trusted);
        let got: Vec<(&str, &str, bool)> = plans
            .iter()
            .map(|plan| {
                let Transport::Stdio { command, .. } = &plan.server().transport else {
                    unreachable!()
                };
                (
                    plan.server().name.as_str(),
                    command.as_str(),
                    matches!(plan, Plan::Start(_)),
                )
            })
            .collect();
        assert_eq!(got, expected, "project_servers = {trusted}");
        assert!(plans
            .iter()
            .all(|plan| plan.server().tool_timeout_secs == Some(9)));
    }
    // A user server stays started whatever the project says; a disabled one never starts.
    let mut only_user = McpSettings::default();
    only_user
        .servers
        .insert("u".into(), server("u", Source::User, "x"));
    let mut off = server("off", Source::User, "x");
    off.enabled = false;
    only_user.servers.insert("off".into(), off);
    let plans = merge(&only_user, &[], false);
    assert!(matches!(&plans[0], Plan::NotStarted { why, .. } if why == "enabled = false"));
    assert!(matches!(&plans[1], Plan::Start(_)));
}
