//! The MCP tools a session offers, as pure data and decisions: their namespaced names
//! (`mcp__server__tool`), whether a call of one only reads (its `readOnlyHint` annotation),
//! what their definitions cost in tokens, which of them a tool budget defers, and the local
//! search tool (`mcp_tool_search`) that loads deferred ones.
//!
//! No I/O here: the client (`panewise_mcp::client`) lists the tools, and the own loop decides with
//! these functions.

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// Every MCP tool's name starts with this.
pub const PREFIX: &str = "mcp__";

/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// The local tool that finds deferred tools and loads them.
pub const SEARCH_TOOL: &str = "mcp_tool_search";

/// How a search result opens (the query follows, then `]`).
pub const SEARCH_RESULT_PREFIX: &str = "[tool search: ";

/// The longest tool name the model APIs take (Anthropic and OpenAI: 64 or 128 by API; 64
/// holds everywhere).
pub const MAX_NAME_LEN: usize = 64;

/// The most tools one search loads.
pub const SEARCH_LIMIT: usize = 5;

/// One tool of one server, as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's configured name.
    pub server: String,
    /// The tool's name on the server, what a call sends.
    pub name: String,
    /// What the model calls it (`mcp__server__tool`).
    pub namespaced: String,
    /// What it does, as the server says (empty when it says nothing).
    pub description: String,
    /// The JSON schema of its arguments.
    pub schema: Value,
    /// The server annotated it `readOnlyHint: true`: a call is treated as reading.
    pub read_only: bool,
}

impl McpTool {
    /// A tool of `server` read from one entry of a `tools/list` result (as JSON); `None` when
    /// it has no name.
    pub fn from_listed(server: &str, tool: &Value) -> Option<McpTool> {
        let name = tool.get("name")?.as_str()?.to_owned();
        let description = tool
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let schema = match tool.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => json!({"type": "object"}),
        };
        Some(McpTool {
            namespaced: namespaced(server, &name),
            server: server.to_owned(),
            name,
            description,
            schema,
            read_only: only_reads(tool.get("annotations")),
        })
    }

    /// The definition as a request carries it, in the text the window counts.
    pub fn definition_text(&self) -> String {
        json!({
            "name": self.namespaced,
            "description": self.description,
            "parameters": self.schema,
        })
        .to_string()
    }
}

/// `mcp__server__tool`, with any character a model API does not take in a tool name
/// replaced by `_`, cut to [`MAX_NAME_LEN`] bytes.
pub fn namespaced(server: &str, tool: &str) -> String {
    let raw = format!("{PREFIX}{server}{SEPARATOR}{tool}");
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_LEN)
        .collect()
}

/// The server and tool a namespaced name names: the server is what lies between the prefix
/// and the next `__` (a server name never holds `__`); `None` for another name.
pub fn split(namespaced: &str) -> Option<(&str, &str)> {
    let rest = namespaced.strip_prefix(PREFIX)?;
    let (server, tool) = rest.split_once(SEPARATOR)?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Whether a tool's annotations say it only reads: `readOnlyHint` is `true`. Anything else
/// (absent, false, not a boolean) is a tool that may do anything, as running a command.
pub fn only_reads(annotations: Option<&Value>) -> bool {
    annotations
        .and_then(|annotations| annotations.get("readOnlyHint"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Which tools are loaded (their definitions sent) under `budget` tokens of definitions,
/// given each tool's cost in order: tools are taken in order while the running sum stays
/// within the budget; the rest are deferred behind [`SEARCH_TOOL`]. No budget loads all.
pub fn loaded_under_budget(costs: &[u64], budget: Option<u64>) -> BTreeSet<usize> {
    let Some(budget) = budget else {
        return (0..costs.len()).collect();
    };
    let mut spent = 0u64;
    let mut loaded = BTreeSet::new();
    for (index, cost) in costs.iter().enumerate() {
        let next = spent.saturating_add(*cost);
        if next > budget {
            break;
        }
        spent = next;
        loaded.insert(index);
    }
    loaded
}

/// The deferred tools that match `query`, best first, at most [`SEARCH_LIMIT`]: each word of
/// the query (lowercased, split on anything not a letter or digit) scores 3 when it is in the
/// tool's name and 1 when it is in its description; a tool that scores nothing is left out.
/// Ties keep the catalog's order.
pub fn search(tools: &[McpTool], deferred: &BTreeSet<usize>, query: &str) -> Vec<usize> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(u32, usize)> = deferred
        .iter()
        .filter_map(|&index| {
            let tool = tools.get(index)?;
            let name = tool.namespaced.to_lowercase();
            let description = tool.description.to_lowercase();
            let score: u32 = words
                .iter()
                .map(|word| {
                    u32::from(name.contains(word.as_str())) * 3
                        + u32::from(description.contains(word.as_str()))
                })
                .sum();
            (score > 0).then_some((score, index))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(SEARCH_LIMIT)
        .map(|(_, index)| index)
        .collect()
}

/// The search tool's result: what was found and is now loaded (offered from the next call
/// on), or that nothing matched.
pub fn search_result(query: &str, found: &[&McpTool], still_deferred: usize) -> String {
    let mut text = format!("{SEARCH_RESULT_PREFIX}{query}] ");
    if found.is_empty() {
        text.push_str(&format!(
            "no deferred tool matches; {still_deferred} remain deferred. Try other words."
        ));
        return text;
    }
    text.push_str(&format!(
        "loaded {} tool(s), callable from your next step:\n",
        found.len()
    ));
    for tool in found {
        let description = tool.description.lines().next().unwrap_or_default();
        text.push_str(&format!("- {}: {description}\n", tool.namespaced));
    }
    text.push_str(&format!("{still_deferred} remain deferred."));
    text
}

/// What the search tool does, for the model; `deferred` names the servers whose tools wait.
pub fn search_description(deferred_tools: usize, servers: &[&str]) -> String {
    format!(
        "Find MCP tools that are not loaded yet and load them. {deferred_tools} tool(s) of the \
         MCP server(s) {} are deferred to keep the context small; give words of what you need \
         (a tool name or what it does) and the matching tools are offered from your next step.",
        servers.join(", ")
    )
}

/// The JSON schema of the search tool's arguments.
pub fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words of the tool's name or purpose."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// The query of a search call's arguments (a JSON object, or a string holding one).
pub fn search_query(arguments: &Value) -> Result<String, String> {
    let parsed;
    let arguments = match arguments {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|error| format!("the arguments are not JSON: {error}"))?;
            &parsed
        }
        other => other,
    };
    arguments
        .get("query")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "needs a `query` string".to_owned())
}

#[cfg(test)]
mod tests;
