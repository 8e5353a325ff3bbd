use std::collections::BTreeSet;

use serde_json::json;

use super::*;

#[test]
fn namespacing_table() {
    let cases = [
        ("files", "read_text_file", "mcp__files__read_text_file"),
        ("web", "echo", "mcp__web__echo"),
        ("web", "get.sum", "mcp__web__get_sum"),
        ("w", "a b/c", "mcp__w__a_b_c"),
    ];
    for (server, tool, expected) in cases {
        assert_eq!(namespaced(server, tool), expected);
        assert_eq!(split(expected).map(|(s, _)| s), Some(server));
    }
    let long = namespaced("server", &"x".repeat(100));
    assert_eq!(long.len(), MAX_NAME_LEN);
    let splits = [
        (
            "mcp__files__read_text_file",
            Some(("files", "read_text_file")),
        ),
        ("mcp__a__b__c", Some(("a", "b__c"))),
        ("mcp__files", None),
        ("mcp____x", None),
        ("shell", None),
        ("mcp_tool_search", None),
    ];
    for (name, expected) in splits {
        assert_eq!(split(name), expected, "{name}");
    }
}

#[test]
fn approval_class_is_the_read_only_hint_only() {
    let cases = [
        (None, false),
        (Some(json!({})), false),
        (Some(json!({"readOnlyHint": true})), true),
        (Some(json!({"readOnlyHint": false})), false),
        (Some(json!({"readOnlyHint": "true"})), false),
        (
            Some(json!({"readOnlyHint": true, "destructiveHint": true})),
            true,
        ),
        (
            Some(json!({"destructiveHint": false, "idempotentHint": true})),
            false,
        ),
    ];
    for (annotations, reads) in cases {
        assert_eq!(only_reads(annotations.as_ref()), reads, "{annotations:?}");
    }
}

#[test]
fn listed_tools_are_read_from_json() {
    let tool = McpTool::from_listed(
        "files",
        &json!({"name": "read_text_file", "description": "Read a file",
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
                "annotations": {"readOnlyHint": true}}),
    )
    .unwrap();
    assert_eq!(tool.namespaced, "mcp__files__read_text_file");
    assert!(tool.read_only);
    let bare = McpTool::from_listed("w", &json!({"name": "x"})).unwrap();
    assert_eq!(bare.schema, json!({"type": "object"}));
    assert!(!bare.read_only);
    assert_eq!(
        McpTool::from_listed("w", &json!({"description": "no name"})),
        None
    );
}

#[test]
fn budget_table() {
    let costs = [100, 200, 50, 400];
    let cases: [(Option<u64>, &[usize]); 6] = [
        (None, &[0, 1, 2, 3]),
        (Some(0), &[]),
        (Some(99), &[]),
        (Some(100), &[0]),
        (Some(349), &[0, 1]),
        (Some(10_000), &[0, 1, 2, 3]),
    ];
    for (budget, expected) in cases {
        let loaded = loaded_under_budget(&costs, budget);
        assert_eq!(
            loaded.into_iter().collect::<Vec<_>>(),
            expected.to_vec(),
            "{budget:?}"
        );
    }
}

fn tool(name: &str, description: &str) -> McpTool {
    McpTool::from_listed("s", &json!({"name": name, "description": description})).unwrap()
}

#[test]
fn search_table() {
    let tools = vec![
        tool("echo", "Echoes back the input"),
        tool("get_sum", "Returns the sum of two numbers"),
        tool("read_file", "Read a file; echo-safe"),
        tool("list_dir", "List a directory"),
    ];
    let all: BTreeSet<usize> = (0..tools.len()).collect();
    let cases: [(&str, &BTreeSet<usize>, Vec<usize>); 5] = [
        ("echo", &all, vec![0, 2]),
        ("sum numbers", &all, vec![1]),
        ("nothing-like-it", &all, vec![]),
        ("", &all, vec![]),
        ("echo", &BTreeSet::from([2, 3]), vec![2]),
    ];
    for (query, deferred, expected) in cases {
        assert_eq!(search(&tools, deferred, query), expected, "{query}");
    }
    let text = search_result("echo", &[&tools[0]], 3);
    assert!(
        text.starts_with("[tool search: echo] loaded 1 tool(s)"),
        "{text}"
    );
    assert!(text.contains("- mcp__s__echo: Echoes back the input"));
    assert!(search_result("x", &[], 3).contains("no deferred tool matches"));
}

#[test]
fn search_arguments() {
    assert_eq!(
        search_query(&json!({"query": "echo"})),
        Ok("echo".to_owned())
    );
    assert_eq!(
        search_query(&json!("{\"query\":\"sum\"}")),
        Ok("sum".to_owned())
    );
    assert!(search_query(&json!({})).is_err());
    assert!(search_query(&json!("not json")).is_err());
}
