//! The tools the own loop offers a model, as pure data: its built-in tools, the tools of the
//! session's MCP servers, and — when a tool budget defers some of those — the local
//! `mcp_tool_search` tool that loads them ([`crate::mcp::catalog`] decides which).
//!
//! The catalog counts what the definitions of each request cost, with the window's own
//! counter, for the ledger's `call` line. No I/O, no clock: the own loop owns one and the
//! purity check's rules hold here too.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::mcp::catalog::{self as mcp, McpTool};
use panewise_providers::ToolDefinition;
use serde_json::Value;

use panewise_window::{Conversation, Message};

use crate::agent_loop::config::LoopConfig;
use crate::tools::recall::SpanArchive;
use crate::tools::{McpCall, ToolCall, ToolOutcome};

/// What a request's tool list holds and costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolListCost {
    /// Tool definitions sent.
    pub tools: usize,
    /// Their tokens, counted as the window counts (the definitions' JSON).
    pub tokens: u64,
    /// MCP tools deferred behind the search tool.
    pub deferred: usize,
}

/// The tools of a session.
#[derive(Debug, Clone)]
pub struct ToolCatalog {
    builtin: Vec<ToolDefinition<'static>>,
    builtin_with_recall: Vec<ToolDefinition<'static>>,
    mcp: Vec<McpTool>,
    /// Indexes into `mcp` whose definitions are sent.
    loaded: BTreeSet<usize>,
}

impl ToolCatalog {
    /// The built-in tools and `mcp` tools, loaded in order within `budget` tokens of MCP
    /// definitions (`count` is the window's counter); the rest are deferred.
    pub fn new(mcp: Vec<McpTool>, budget: Option<u64>, count: &dyn Fn(&str) -> u64) -> Self {
        let costs: Vec<u64> = mcp
            .iter()
            .map(|tool| count(&tool.definition_text()))
            .collect();
        let loaded = mcp::loaded_under_budget(&costs, budget);
        ToolCatalog {
            builtin: crate::tools::api_definitions(false),
            builtin_with_recall: crate::tools::api_definitions(true),
            mcp,
            loaded,
        }
    }

    /// MCP tools not loaded.
    pub fn deferred(&self) -> BTreeSet<usize> {
        (0..self.mcp.len())
            .filter(|index| !self.loaded.contains(index))
            .collect()
    }

    /// The definitions a request carries: the built-ins (`recall` once the archive holds a
    /// span), the loaded MCP tools, and the search tool while any is deferred.
    pub fn definitions(&self, with_recall: bool) -> Vec<ToolDefinition<'static>> {
        let mut tools = if with_recall {
            self.builtin_with_recall.clone()
        } else {
            self.builtin.clone()
        };
        for index in &self.loaded {
            if let Some(tool) = self.mcp.get(*index) {
                tools.push(ToolDefinition {
                    name: Cow::Owned(tool.namespaced.clone()),
                    description: Cow::Owned(tool.description.clone()),
                    parameters: Cow::Owned(tool.schema.clone()),
                });
            }
        }
        let deferred = self.deferred();
        if !deferred.is_empty() {
            let mut servers: Vec<&str> = deferred
                .iter()
                .filter_map(|index| self.mcp.get(*index))
                .map(|tool| tool.server.as_str())
                .collect();
            servers.dedup();
            tools.push(ToolDefinition {
                name: Cow::Borrowed(mcp::SEARCH_TOOL),
                description: Cow::Owned(mcp::search_description(deferred.len(), &servers)),
                parameters: Cow::Owned(mcp::search_schema()),
            });
        }
        tools
    }

    /// What `definitions` hold and cost, counted with `count`.
    pub fn cost(
        definitions: &[ToolDefinition<'_>],
        deferred: usize,
        count: &dyn Fn(&str) -> u64,
    ) -> ToolListCost {
        let tokens = definitions
            .iter()
            .map(|tool| {
                count(
                    &serde_json::json!({
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    })
                    .to_string(),
                )
            })
            .sum();
        ToolListCost {
            tools: definitions.len(),
            tokens,
            deferred,
        }
    }

    /// The definitions of the next request (see [`ToolCatalog::definitions`]) and what they
    /// hold and cost, counted with the conversation's counter.
    pub fn request_tools(
        &self,
        with_recall: bool,
        conversation: &Conversation<Message>,
    ) -> (Vec<ToolDefinition<'static>>, ToolListCost) {
        let tools = self.definitions(with_recall);
        let count = |text: &str| conversation.count_tokens(text);
        let cost = Self::cost(&tools, self.deferred().len(), &count);
        (tools, cost)
    }

    /// The catalog of a loop configured with `config`, counted with the conversation's
    /// counter.
    pub fn of(config: &LoopConfig, conversation: &Conversation<Message>) -> Self {
        let count = |text: &str| conversation.count_tokens(text);
        Self::new(config.mcp_tools.clone(), config.tool_budget_tokens, &count)
    }

    /// A model's call of `name` with `arguments` as it streamed them (empty: `{}`), parsed:
    /// the session's MCP tools and the search tool first, then the built-ins.
    pub fn parse_call(&self, name: &str, arguments: &str) -> Result<ToolCall, String> {
        let arguments = Value::String(if arguments.trim().is_empty() {
            "{}".to_owned()
        } else {
            arguments.to_owned()
        });
        match self.parse(name, &arguments) {
            Some(parsed) => parsed,
            None => ToolCall::parse(name, &arguments).map_err(|error| error.to_string()),
        }
    }

    /// A call of an MCP tool or of the search tool, parsed; `None` for any other name (the
    /// built-ins parse themselves). A deferred tool is not callable until a search loads it.
    pub fn parse(&self, name: &str, arguments: &Value) -> Option<Result<ToolCall, String>> {
        if name == mcp::SEARCH_TOOL {
            if self.deferred().is_empty() {
                return None;
            }
            return Some(
                mcp::search_query(arguments)
                    .map(ToolCall::ToolSearch)
                    .map_err(|reason| format!("{}: {reason}", mcp::SEARCH_TOOL)),
            );
        }
        mcp::split(name)?;
        let Some(index) = self.mcp.iter().position(|tool| tool.namespaced == name) else {
            return Some(Err(format!(
                "{name}: no MCP server of this session offers it (its server may have failed \
                 to start; the session said so)"
            )));
        };
        if !self.loaded.contains(&index) {
            return Some(Err(format!(
                "{name} is deferred: call {} with words of what you need to load it first",
                mcp::SEARCH_TOOL
            )));
        }
        let tool = self.mcp.get(index)?;
        let parsed;
        let arguments = match arguments {
            Value::String(text) if text.trim().is_empty() => {
                parsed = Value::Object(serde_json::Map::new());
                &parsed
            }
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(value) => {
                    parsed = value;
                    &parsed
                }
                Err(error) => {
                    return Some(Err(format!("{name}: the arguments are not JSON: {error}")))
                }
            },
            other => other,
        };
        if !arguments.is_object() {
            return Some(Err(format!("{name}: the arguments must be a JSON object")));
        }
        Some(Ok(ToolCall::Mcp(McpCall {
            namespaced: tool.namespaced.clone(),
            server: tool.server.clone(),
            tool: tool.name.clone(),
            arguments: arguments.clone(),
            read_only: tool.read_only,
        })))
    }

    /// Answers a search: the matching deferred tools are loaded (offered from the next
    /// request on) and named in the result.
    pub fn search(&mut self, query: &str) -> ToolOutcome {
        let deferred = self.deferred();
        let found = mcp::search(&self.mcp, &deferred, query);
        self.loaded.extend(found.iter().copied());
        let tools: Vec<&McpTool> = found
            .iter()
            .filter_map(|index| self.mcp.get(*index))
            .collect();
        let still = deferred.len().saturating_sub(found.len());
        ToolOutcome::ok(mcp::search_result(query, &tools, still))
    }
}

/// The result of a call the loop answers itself, from what it holds: a `recall` from the
/// archive (W76), a search from the catalog (which loads what it found). `None` for a call
/// that runs, and for `ask_user`, which waits for the person.
pub fn answer_here(
    catalog: &mut ToolCatalog,
    archive: &SpanArchive,
    output_bytes: usize,
    call: &ToolCall,
) -> Option<ToolOutcome> {
    match call {
        ToolCall::Recall(args) => Some(crate::tools::recall::answer(args, archive, output_bytes)),
        ToolCall::ToolSearch(query) => Some(catalog.search(query)),
        ToolCall::Shell(_)
        | ToolCall::ReadFile(_)
        | ToolCall::WriteFile(_)
        | ToolCall::EditFile(_)
        | ToolCall::ListDir(_)
        | ToolCall::Mcp(_)
        | ToolCall::AskUser(_) => None,
    }
}

impl ToolListCost {
    /// The ledger's entry of a request's tool list.
    pub fn entry(self) -> crate::agent_loop::ledger::ToolsEntry {
        crate::agent_loop::ledger::ToolsEntry {
            count: self.tools,
            tokens: self.tokens,
            deferred: self.deferred,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<McpTool> {
        ["echo", "get_sum", "list_allowed_directories"]
            .iter()
            .map(|name| {
                McpTool::from_listed(
                    "s",
                    &json!({"name": name, "description": format!("does {name} {}", "at length ".repeat(50)),
                            "annotations": {"readOnlyHint": *name == "echo"}}),
                )
                .unwrap()
            })
            .collect()
    }

    fn bytes(text: &str) -> u64 {
        text.len() as u64
    }

    #[test]
    fn budget_defers_and_search_loads() {
        let all = ToolCatalog::new(tools(), None, &bytes);
        let names = |catalog: &ToolCatalog| -> Vec<String> {
            catalog
                .definitions(false)
                .iter()
                .map(|tool| tool.name.to_string())
                .filter(|name| name.starts_with("mcp"))
                .collect()
        };
        assert_eq!(
            names(&all),
            [
                "mcp__s__echo",
                "mcp__s__get_sum",
                "mcp__s__list_allowed_directories"
            ]
        );
        let mut budgeted = ToolCatalog::new(tools(), Some(0), &bytes);
        assert_eq!(names(&budgeted), ["mcp_tool_search"]);
        let full = ToolCatalog::cost(&all.definitions(false), 0, &bytes);
        let small = ToolCatalog::cost(&budgeted.definitions(false), 3, &bytes);
        assert!(small.tokens < full.tokens, "{small:?} {full:?}");
        // A deferred tool is refused by name until a search loads it.
        let refused = budgeted
            .parse("mcp__s__echo", &json!({}))
            .unwrap()
            .unwrap_err();
        assert!(refused.contains("is deferred"), "{refused}");
        let outcome = budgeted.search("echo");
        assert!(outcome.content.starts_with("[tool search: echo] loaded 1"));
        assert_eq!(names(&budgeted), ["mcp__s__echo", "mcp_tool_search"]);
        let call = budgeted.parse("mcp__s__echo", &json!("{\"message\":\"hi\"}"));
        assert!(matches!(
            call,
            Some(Ok(ToolCall::Mcp(McpCall {
                read_only: true,
                ..
            })))
        ));
    }

    #[test]
    fn mcp_calls_pass_through_the_approval_modes() {
        use crate::approval::{decide, ApprovalMode, Decision, ToolRequest};
        let call = |read_only: bool| {
            ToolCall::Mcp(McpCall {
                namespaced: "mcp__s__t".into(),
                server: "s".into(),
                tool: "t".into(),
                arguments: json!({}),
                read_only,
            })
        };
        // (readOnlyHint, mode, decision): a read-only tool reads; any other runs a command.
        let cases = [
            (true, ApprovalMode::ReadOnly, "run"),
            (true, ApprovalMode::Ask, "run"),
            (true, ApprovalMode::Auto, "run"),
            (true, ApprovalMode::FullAccess, "run"),
            (false, ApprovalMode::ReadOnly, "deny"),
            (false, ApprovalMode::Ask, "ask"),
            (false, ApprovalMode::Auto, "ask"),
            (false, ApprovalMode::FullAccess, "run"),
        ];
        for (read_only, mode, expected) in cases {
            let decision = decide(
                mode,
                &ToolRequest::Own(&call(read_only)),
                &crate::approval::PathFacts::new(),
            );
            let got = match &decision {
                Decision::Run => "run",
                Decision::Ask => "ask",
                Decision::Deny { reason } => {
                    assert!(reason.contains("mcp__s__t"), "{reason}");
                    "deny"
                }
            };
            assert_eq!(got, expected, "{read_only} {mode:?}");
        }
    }

    #[test]
    fn parse_table() {
        let catalog = ToolCatalog::new(tools(), None, &bytes);
        let cases: [(&str, Value, Option<bool>); 7] = [
            ("shell", json!({}), None),
            ("mcp_tool_search", json!({"query": "x"}), None),
            ("mcp__s__get_sum", json!({"a": 1}), Some(true)),
            ("mcp__s__get_sum", json!(""), Some(true)),
            ("mcp__s__get_sum", json!("[1]"), Some(false)),
            ("mcp__s__nope", json!({}), Some(false)),
            ("mcp__other__echo", json!({}), Some(false)),
        ];
        for (name, arguments, ok) in cases {
            assert_eq!(
                catalog.parse(name, &arguments).map(|parsed| parsed.is_ok()),
                ok,
                "{name} {arguments}"
            );
        }
    }
}
