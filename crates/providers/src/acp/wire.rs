//! The serde shapes of what an ACP agent writes, narrow and lenient: every field optional, so
//! a message with fields missing or added still reads. Both the session and the decoder read
//! them; the capabilities and permission options they carry are public.

use panewise_protocol::SessionStats;
use serde::Deserialize;
use serde_json::Value;

/// What the agent's `initialize` answer advertised.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCapabilities {
    /// The protocol version the agent chose.
    pub protocol_version: Option<u64>,
    /// `agentCapabilities.loadSession`: `session/load` replays a recorded session.
    pub load_session: bool,
    /// `agentCapabilities.sessionCapabilities.resume`: `session/resume` continues one without
    /// replaying it.
    pub resume_session: bool,
    /// `agentInfo.name`.
    pub agent_name: Option<String>,
    /// `agentInfo.version`.
    pub agent_version: Option<String>,
    /// The ids of `authMethods` the agent offers.
    pub auth_methods: Vec<String>,
}

/// One option of a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// The id to answer with.
    pub option_id: String,
    /// Its label for people.
    #[serde(default)]
    pub name: Option<String>,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// The fields of the answers this channel reads: `initialize`, `session/new`, `session/prompt`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Answer {
    pub(super) protocol_version: Option<u64>,
    pub(super) agent_capabilities: Option<WireCapabilities>,
    pub(super) agent_info: Option<AgentInfo>,
    pub(super) auth_methods: Option<Vec<AuthMethod>>,
    pub(super) session_id: Option<String>,
    pub(super) models: Option<Models>,
    pub(super) stop_reason: Option<String>,
    #[serde(rename = "_meta")]
    pub(super) meta: Option<Meta>,
}

impl Answer {
    pub(super) fn capabilities(self) -> AgentCapabilities {
        let caps = self.agent_capabilities;
        AgentCapabilities {
            protocol_version: self.protocol_version,
            load_session: caps.as_ref().and_then(|caps| caps.load_session) == Some(true),
            resume_session: caps
                .as_ref()
                .and_then(|caps| caps.session_capabilities.as_ref())
                .is_some_and(|session| session.resume.as_ref().is_some_and(|v| !v.is_null())),
            agent_name: self.agent_info.as_ref().and_then(|info| info.name.clone()),
            agent_version: self.agent_info.and_then(|info| info.version),
            auth_methods: self
                .auth_methods
                .into_iter()
                .flatten()
                .filter_map(|method| method.id)
                .collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireCapabilities {
    pub(super) load_session: Option<bool>,
    pub(super) session_capabilities: Option<SessionCapabilities>,
}

#[derive(Deserialize)]
pub(super) struct SessionCapabilities {
    pub(super) resume: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct AgentInfo {
    pub(super) name: Option<String>,
    pub(super) version: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct AuthMethod {
    pub(super) id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Models {
    pub(super) current_model_id: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Meta {
    pub(super) quota: Option<Quota>,
}

/// Gemini CLI's token counts of a prompt, in the answer's `_meta`.
#[derive(Deserialize)]
pub(super) struct Quota {
    pub(super) token_count: Option<TokenCount>,
    pub(super) model_usage: Option<Vec<ModelUsage>>,
}

#[derive(Deserialize, Clone, Copy)]
pub(super) struct TokenCount {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
}

impl TokenCount {
    pub(super) fn stats(self) -> SessionStats {
        SessionStats {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            ..SessionStats::default()
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ModelUsage {
    pub(super) model: Option<String>,
    pub(super) token_count: Option<TokenCount>,
}

#[derive(Deserialize)]
pub(super) struct PermissionParams {
    pub(super) options: Option<Vec<PermissionOption>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PermissionRequest {
    pub(super) tool_call: Option<ToolCall>,
}

#[derive(Deserialize)]
pub(super) struct UpdateParams {
    pub(super) update: Option<Update>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Update {
    pub(super) session_update: Option<String>,
    pub(super) content: Option<Value>,
    #[serde(flatten)]
    pub(super) tool: ToolCall,
    pub(super) entries: Option<Vec<PlanEntry>>,
    pub(super) used: Option<u64>,
    pub(super) size: Option<u64>,
}

/// A tool call as `tool_call`, `tool_call_update` and a permission request's `toolCall` carry
/// it; an update repeats only what changed.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolCall {
    pub(super) tool_call_id: Option<String>,
    pub(super) title: Option<String>,
    pub(super) kind: Option<String>,
    pub(super) status: Option<String>,
    pub(super) locations: Option<Vec<Location>>,
    /// The tool's input as the agent passed it, when the agent shares it.
    pub(super) raw_input: Option<Value>,
    /// The tool's output as the agent got it, when the agent shares it.
    pub(super) raw_output: Option<Value>,
    /// What the client is shown of the call: text blocks, diffs, terminals.
    pub(super) content: Option<Vec<Value>>,
}

impl ToolCall {
    /// The call's output: its raw output (a string as it is, anything else as JSON), else
    /// the text of its content blocks, one per line (a diff as its JSON).
    pub(super) fn output(&self) -> Option<String> {
        if let Some(raw) = &self.raw_output {
            return Some(match raw {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            });
        }
        let parts: Vec<String> = self
            .content
            .iter()
            .flatten()
            .map(|block| match block.get("type").and_then(Value::as_str) {
                Some("content") => {
                    text_of(block.get("content")).unwrap_or_else(|| block.to_string())
                }
                _ => block.to_string(),
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    pub(super) fn arg(&self) -> Option<String> {
        self.title.clone().or_else(|| {
            self.locations
                .iter()
                .flatten()
                .find_map(|location| location.path.clone())
        })
    }
}

#[derive(Deserialize, Clone)]
pub(super) struct Location {
    pub(super) path: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct PlanEntry {
    pub(super) content: Option<String>,
    pub(super) status: Option<String>,
}

/// The text of a content block (`{"type":"text","text":…}`); other blocks carry none.
pub(super) fn text_of(content: Option<&Value>) -> Option<String> {
    let content = content?;
    (content.get("type")?.as_str()? == "text")
        .then(|| content.get("text")?.as_str().map(str::to_owned))
        .flatten()
}
