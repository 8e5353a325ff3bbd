//! The request a model API client sends, in words every API shares, and its rendering as each
//! API's JSON body.
//!
//! The types borrow: a caller that keeps its history as `Vec<ApiMessage<'static>>` builds a
//! request with `Cow::Borrowed(&history)` and nothing of the history is copied, neither to
//! build the request nor to render its body (tool arguments go out as the raw JSON text).

use std::borrow::Cow;

use panewise_window::ProviderContext;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::context;
use crate::error::RequestError;

/// One model call: the system prompt, the conversation, the tools the model may call, the
/// model and the output limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest<'a> {
    /// The model id, as the API names it.
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    /// The system prompt (Anthropic `system`, OpenAI `instructions`, Gemini
    /// `systemInstruction`).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Cow<'a, str>>,
    /// The conversation, oldest first.
    #[serde(borrow)]
    pub messages: Cow<'a, [ApiMessage<'a>]>,
    /// The tools the model may call.
    #[serde(borrow, default, skip_serializing_if = "<[_]>::is_empty")]
    pub tools: Cow<'a, [ToolDefinition<'a>]>,
    /// The most output tokens the call may produce.
    pub max_output_tokens: u32,
    /// Whether the request asks for the provider's prompt cache; on unless turned off. See
    /// [`RequestHead::prompt_cache`] for what each API is sent.
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub prompt_cache: bool,
    /// The key the provider groups the session's cached prefixes by (OpenAI
    /// `prompt_cache_key`); see [`RequestHead::cache_key`].
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<Cow<'a, str>>,
    /// The provider-side strategy the request asks the provider to apply; see
    /// [`RequestHead::context_management`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Cow<'a, ProviderContext>>,
}

/// Serde's default of [`ModelRequest::prompt_cache`]: caching is on unless turned off.
fn on() -> bool {
    true
}

/// Whether `prompt_cache` is at its default, so a serialized request leaves it out.
fn is_on(prompt_cache: &bool) -> bool {
    *prompt_cache
}

impl<'a> ModelRequest<'a> {
    /// Everything of the request but its messages.
    pub fn head(&self) -> RequestHead<'_> {
        RequestHead {
            model: &self.model,
            system: self.system.as_deref(),
            tools: &self.tools,
            max_output_tokens: self.max_output_tokens,
            prompt_cache: self.prompt_cache,
            cache_key: self.cache_key.as_deref(),
            context_management: self.context_management.as_deref(),
        }
    }
}

/// A request without its messages: what a [`RenderedHistory`] body is framed with.
///
/// [`RenderedHistory`]: super::RenderedHistory
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestHead<'a> {
    /// The model id, as the API names it.
    pub model: &'a str,
    /// The system prompt.
    pub system: Option<&'a str>,
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition<'a>],
    /// The most output tokens the call may produce.
    pub max_output_tokens: u32,
    /// Whether the request asks for the provider's prompt cache. Anthropic caches only where a
    /// request says so: on, its body carries `cache_control: {"type": "ephemeral"}`
    /// breakpoints on the system prompt (sent as a list of one text block), on the last tool
    /// definition and on the last content block of the last message, three of the four the
    /// API allows, so each call reads the prefix the call before it wrote; a caller that
    /// edited the history since its last request may spend the fourth on the block before the
    /// first it changed ([`anthropic::body_with_breakpoints`],
    /// [`RenderedHistory::write_body_marked`](super::RenderedHistory::write_body_marked)), so
    /// the edit re-writes only what follows it. OpenAI caches every
    /// prefix by itself; on, the body carries [`cache_key`](Self::cache_key) as
    /// `prompt_cache_key`, which keeps one session's requests on the machines that hold its
    /// prefixes. Gemini's implicit cache needs nothing in the request (its explicit cached
    /// contents are not used), so its body is the same either way. Off, no body asks for
    /// anything: the bytes are those of a request without caching.
    pub prompt_cache: bool,
    /// The key a session's requests share so the provider routes them to its cached prefixes
    /// (OpenAI `prompt_cache_key`; not sent to Anthropic or Gemini, nor when `prompt_cache` is
    /// off). Stable over the session and free of anything private: it reaches the provider.
    pub cache_key: Option<&'a str>,
    /// The provider-side strategy (`StrategyConfig::provider_context`) the provider applies on
    /// its servers: Anthropic's body carries `context_management: {"edits": [..]}` (and the
    /// request the `anthropic-beta` header of [`context::request_headers`]), OpenAI's
    /// `context_management: [{"type": "compaction", "compact_threshold": N}]`. A strategy of
    /// another API than the body's is a render error, never left out: a session checks
    /// support at start ([`context::check_provider_context`]).
    pub context_management: Option<&'a ProviderContext>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApiMessage<'a> {
    /// Text the user wrote.
    User {
        /// The text.
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    /// Text the model answered.
    Assistant {
        /// The text.
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    /// A tool call the model made (as [`ProviderEvent::ToolCallRequested`] reported it).
    ///
    /// [`ProviderEvent::ToolCallRequested`]: crate::ProviderEvent::ToolCallRequested
    ToolCall {
        /// The provider's id of the call.
        #[serde(borrow)]
        call_id: Cow<'a, str>,
        /// The tool's name.
        #[serde(borrow)]
        name: Cow<'a, str>,
        /// The arguments, JSON text (an empty text stands for `{}`).
        #[serde(borrow)]
        arguments: Cow<'a, str>,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the call it answers.
        #[serde(borrow)]
        call_id: Cow<'a, str>,
        /// The tool's name (Gemini matches results to calls by name).
        #[serde(borrow)]
        name: Cow<'a, str>,
        /// What the tool printed or returned.
        #[serde(borrow)]
        output: Cow<'a, str>,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// A provider's compaction, sent back as the API requires so the provider continues from
    /// it: Anthropic's `compaction` block (its `content`, the summary) in an assistant
    /// message, OpenAI's `compaction` input item (its `encrypted_content`). Gemini has none.
    Compaction {
        /// The block's `content` or the item's `encrypted_content`, verbatim.
        #[serde(borrow)]
        content: Cow<'a, str>,
    },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition<'a> {
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// What it does, for the model.
    #[serde(borrow)]
    pub description: Cow<'a, str>,
    /// The JSON schema of its arguments.
    pub parameters: Cow<'a, serde_json::Value>,
}

/// The arguments of a tool call as raw JSON, checked to be JSON.
fn raw_arguments<'r>(call_id: &str, arguments: &'r str) -> Result<&'r RawValue, RequestError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str::<&RawValue>(text).map_err(|error| RequestError::ToolArguments {
        call_id: call_id.to_owned(),
        reason: error.to_string(),
    })
}

fn to_bytes<T: Serialize>(body: &T) -> Result<Vec<u8>, RequestError> {
    serde_json::to_vec(body).map_err(|error| RequestError::Render(error.to_string()))
}

/// Appends `value`'s JSON to `out`, as [`to_bytes`] would render it.
fn write<T: Serialize>(out: &mut Vec<u8>, value: &T) -> Result<(), RequestError> {
    serde_json::to_writer(out, value).map_err(|error| RequestError::Render(error.to_string()))
}

/// Pushes `part` onto the last message when it has `role`, else opens a message: the APIs
/// want consecutive parts of one role in one message (all of one round's tool results
/// together).
fn push_part<P>(messages: &mut Vec<(&'static str, Vec<P>)>, role: &'static str, part: P) {
    match messages.last_mut() {
        Some((last, parts)) if *last == role => parts.push(part),
        _ => messages.push((role, vec![part])),
    }
}

/// The Anthropic Messages API body (`POST /v1/messages`).
pub mod anthropic {
    use super::*;

    #[derive(Serialize)]
    struct Body<'r> {
        model: &'r str,
        max_tokens: u32,
        stream: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        system: Option<System<'r>>,
        messages: Vec<Message<'r>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tool<'r>>,
        // After the messages, so the frame's first `"messages":[]` is the key itself.
        #[serde(skip_serializing_if = "Option::is_none")]
        context_management: Option<context::AnthropicContextManagement<'r>>,
    }

    /// The system prompt: a plain string, or, to carry a cache breakpoint, a list of one text
    /// block (only blocks can carry `cache_control`).
    #[derive(Serialize)]
    #[serde(untagged)]
    enum System<'r> {
        Text(&'r str),
        Blocks([SystemBlock<'r>; 1]),
    }

    #[derive(Serialize)]
    struct SystemBlock<'r> {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'r str,
        cache_control: CacheControl,
    }

    /// A prompt-cache breakpoint: the prefix up to and including the block that carries it is
    /// cached (for five minutes, the API's default).
    #[derive(Debug, Clone, Copy, Serialize)]
    struct CacheControl {
        #[serde(rename = "type")]
        kind: &'static str,
    }

    const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

    /// What a content block's JSON ends with when it carries the breakpoint: its own closing
    /// brace replaced by this. `cache_control` is each block's last field, so a fragment
    /// rendered without it becomes the marked block's bytes (`RenderedHistory` marks the last
    /// block at assembly this way).
    pub(crate) const MARKED_BLOCK_END: &[u8] = br#","cache_control":{"type":"ephemeral"}}"#;

    fn system<'r>(text: Option<&'r str>, prompt_cache: bool) -> Option<System<'r>> {
        text.map(|text| {
            if prompt_cache {
                System::Blocks([SystemBlock {
                    kind: "text",
                    text,
                    cache_control: EPHEMERAL,
                }])
            } else {
                System::Text(text)
            }
        })
    }

    #[derive(Serialize)]
    struct Message<'r> {
        role: &'static str,
        content: Vec<Block<'r>>,
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Block<'r> {
        Text {
            text: &'r str,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        },
        ToolUse {
            id: &'r str,
            name: &'r str,
            input: &'r RawValue,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        },
        ToolResult {
            tool_use_id: &'r str,
            content: &'r str,
            is_error: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        },
        Compaction {
            content: &'r str,
            #[serde(skip_serializing_if = "Option::is_none")]
            cache_control: Option<CacheControl>,
        },
    }

    impl Block<'_> {
        /// Puts the cache breakpoint on this block.
        fn mark(&mut self) {
            let (Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. }
            | Block::Compaction { cache_control, .. }) = self;
            *cache_control = Some(EPHEMERAL);
        }
    }

    #[derive(Serialize)]
    struct Tool<'r> {
        name: &'r str,
        description: &'r str,
        input_schema: &'r serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    }

    /// One message's role and content block: adjacent blocks of one role share a message.
    fn part<'r>(message: &'r ApiMessage<'_>) -> Result<(&'static str, Block<'r>), RequestError> {
        Ok(match message {
            ApiMessage::User { text } => (
                "user",
                Block::Text {
                    text,
                    cache_control: None,
                },
            ),
            ApiMessage::Assistant { text } => (
                "assistant",
                Block::Text {
                    text,
                    cache_control: None,
                },
            ),
            ApiMessage::ToolCall {
                call_id,
                name,
                arguments,
            } => (
                "assistant",
                Block::ToolUse {
                    id: call_id,
                    name,
                    input: raw_arguments(call_id, arguments)?,
                    cache_control: None,
                },
            ),
            ApiMessage::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => (
                "user",
                Block::ToolResult {
                    tool_use_id: call_id,
                    content: output,
                    is_error: *is_error,
                    cache_control: None,
                },
            ),
            ApiMessage::Compaction { content } => (
                "assistant",
                Block::Compaction {
                    content,
                    cache_control: None,
                },
            ),
        })
    }

    /// Appends `message`'s content block, as [`body`] renders it, to `out`; returns its role.
    pub(crate) fn fragment(
        message: &ApiMessage<'_>,
        out: &mut Vec<u8>,
    ) -> Result<&'static str, RequestError> {
        let (role, block) = part(message)?;
        write(out, &block)?;
        Ok(role)
    }

    /// The body of `request` without its messages: `"messages":[]` stands where they go.
    pub(crate) fn frame(head: &RequestHead<'_>) -> Result<Vec<u8>, RequestError> {
        to_bytes(&Body {
            model: head.model,
            max_tokens: head.max_output_tokens,
            stream: true,
            system: system(head.system, head.prompt_cache),
            messages: Vec::new(),
            tools: tools(head.tools, head.prompt_cache),
            context_management: context::anthropic_field(head.context_management)?,
        })
    }

    /// The tool definitions; with `prompt_cache`, the last carries a breakpoint, so the tools
    /// are cached apart from the system prompt.
    fn tools<'r>(tools: &'r [ToolDefinition<'_>], prompt_cache: bool) -> Vec<Tool<'r>> {
        let last = tools.len().saturating_sub(1);
        tools
            .iter()
            .enumerate()
            .map(|(index, tool)| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
                cache_control: (prompt_cache && index == last).then_some(EPHEMERAL),
            })
            .collect()
    }

    /// The streamed request body of `request`. With [`ModelRequest::prompt_cache`] it carries
    /// at most three cache breakpoints (the API allows four): the system prompt, the last
    /// tool, and the last content block of the last message.
    pub fn body(request: &ModelRequest<'_>) -> Result<Vec<u8>, RequestError> {
        let last = request.messages.len().checked_sub(1);
        body_with_breakpoints(request, last.as_slice())
    }

    /// [`body`] with the breakpoints of the messages at `marks` instead of on the last content
    /// block alone: each index a content block counted over all messages from 0 (one per
    /// [`ApiMessage`]; indices past the last are ignored), as
    /// [`RenderedHistory::write_body_marked`](super::super::RenderedHistory::write_body_marked)
    /// marks them. The system prompt and the last tool carry theirs as in [`body`]; the caller
    /// keeps the total within the API's four. Without `prompt_cache` nothing is marked.
    pub fn body_with_breakpoints(
        request: &ModelRequest<'_>,
        marks: &[usize],
    ) -> Result<Vec<u8>, RequestError> {
        let mut grouped: Vec<(&'static str, Vec<Block<'_>>)> = Vec::new();
        for (index, message) in request.messages.iter().enumerate() {
            let (role, mut block) = part(message)?;
            if request.prompt_cache && marks.contains(&index) {
                block.mark();
            }
            push_part(&mut grouped, role, block);
        }
        to_bytes(&Body {
            model: &request.model,
            max_tokens: request.max_output_tokens,
            stream: true,
            system: system(request.system.as_deref(), request.prompt_cache),
            messages: grouped
                .into_iter()
                .map(|(role, content)| Message { role, content })
                .collect(),
            tools: tools(&request.tools, request.prompt_cache),
            context_management: context::anthropic_field(request.context_management.as_deref())?,
        })
    }
}

/// The OpenAI Responses API body (`POST /v1/responses`).
pub mod openai {
    use super::*;

    #[derive(Serialize)]
    struct Body<'r> {
        model: &'r str,
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<&'r str>,
        input: Vec<Item<'r>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tool<'r>>,
        max_output_tokens: u32,
        stream: bool,
        // The conversation is the caller's: nothing is kept on the provider's side.
        store: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_cache_key: Option<&'r str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        context_management: Option<[context::OpenAiContextEntry; 1]>,
    }

    /// The `prompt_cache_key` a head sends: its key, when caching is on.
    fn cache_key(prompt_cache: bool, key: Option<&str>) -> Option<&str> {
        key.filter(|_| prompt_cache)
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Item<'r> {
        Message {
            role: &'static str,
            content: [Content<'r>; 1],
        },
        FunctionCall {
            call_id: &'r str,
            name: &'r str,
            arguments: &'r str,
        },
        FunctionCallOutput {
            call_id: &'r str,
            output: &'r str,
        },
        Compaction {
            encrypted_content: &'r str,
        },
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Content<'r> {
        InputText { text: &'r str },
        OutputText { text: &'r str },
    }

    #[derive(Serialize)]
    struct Tool<'r> {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'r str,
        description: &'r str,
        parameters: &'r serde_json::Value,
        strict: bool,
    }

    /// One message's input item.
    fn item<'r>(message: &'r ApiMessage<'_>) -> Result<Item<'r>, RequestError> {
        Ok(match message {
            ApiMessage::User { text } => Item::Message {
                role: "user",
                content: [Content::InputText { text }],
            },
            ApiMessage::Assistant { text } => Item::Message {
                role: "assistant",
                content: [Content::OutputText { text }],
            },
            ApiMessage::ToolCall {
                call_id,
                name,
                arguments,
            } => Item::FunctionCall {
                call_id,
                name,
                arguments: raw_arguments(call_id, arguments)?.get(),
            },
            ApiMessage::ToolResult {
                call_id, output, ..
            } => Item::FunctionCallOutput { call_id, output },
            ApiMessage::Compaction { content } => Item::Compaction {
                encrypted_content: content,
            },
        })
    }

    /// Appends `message`'s input item, as [`body`] renders it, to `out`. Items are never
    /// grouped, so the role returned is the same for every item.
    pub(crate) fn fragment(
        message: &ApiMessage<'_>,
        out: &mut Vec<u8>,
    ) -> Result<&'static str, RequestError> {
        write(out, &item(message)?)?;
        Ok("")
    }

    /// The body of `request` without its messages: `"input":[]` stands where they go.
    pub(crate) fn frame(head: &RequestHead<'_>) -> Result<Vec<u8>, RequestError> {
        to_bytes(&Body {
            model: head.model,
            instructions: head.system,
            input: Vec::new(),
            tools: tools(head.tools),
            max_output_tokens: head.max_output_tokens,
            stream: true,
            store: false,
            prompt_cache_key: cache_key(head.prompt_cache, head.cache_key),
            context_management: context::openai_field(head.context_management)?,
        })
    }

    fn tools<'r>(tools: &'r [ToolDefinition<'_>]) -> Vec<Tool<'r>> {
        tools
            .iter()
            .map(|tool| Tool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: false,
            })
            .collect()
    }

    /// The streamed request body of `request`.
    pub fn body(request: &ModelRequest<'_>) -> Result<Vec<u8>, RequestError> {
        let mut input = Vec::with_capacity(request.messages.len());
        for message in request.messages.iter() {
            input.push(item(message)?);
        }
        to_bytes(&Body {
            model: &request.model,
            instructions: request.system.as_deref(),
            input,
            tools: tools(&request.tools),
            max_output_tokens: request.max_output_tokens,
            stream: true,
            store: false,
            prompt_cache_key: cache_key(request.prompt_cache, request.cache_key.as_deref()),
            context_management: context::openai_field(request.context_management.as_deref())?,
        })
    }
}

/// The Gemini API body (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`).
///
/// Gemini caches implicitly: a request whose prefix an earlier one shared is served from the
/// cache (from 1,024 tokens) with nothing asked in the body, so prompt caching changes nothing
/// here. Explicit cached contents (`cachedContents`, created and paid for apart) are not used.
pub mod gemini {
    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'r> {
        #[serde(skip_serializing_if = "Option::is_none")]
        system_instruction: Option<Instruction<'r>>,
        contents: Vec<Content<'r>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tools<'r>>,
        generation_config: GenerationConfig,
    }

    #[derive(Serialize)]
    struct Instruction<'r> {
        parts: [TextPart<'r>; 1],
    }

    #[derive(Serialize)]
    struct TextPart<'r> {
        text: &'r str,
    }

    #[derive(Serialize)]
    struct Content<'r> {
        role: &'static str,
        parts: Vec<Part<'r>>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    enum Part<'r> {
        FunctionCall {
            id: &'r str,
            name: &'r str,
            args: &'r RawValue,
        },
        FunctionResponse {
            id: &'r str,
            name: &'r str,
            response: ToolOutput<'r>,
        },
        #[serde(untagged)]
        Text { text: &'r str },
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum ToolOutput<'r> {
        Output(&'r str),
        Error(&'r str),
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Tools<'r> {
        function_declarations: Vec<Declaration<'r>>,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Declaration<'r> {
        name: &'r str,
        description: &'r str,
        parameters_json_schema: &'r serde_json::Value,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct GenerationConfig {
        max_output_tokens: u32,
    }

    /// One message's role and part: adjacent parts of one role share a content.
    fn part<'r>(message: &'r ApiMessage<'_>) -> Result<(&'static str, Part<'r>), RequestError> {
        Ok(match message {
            ApiMessage::User { text } => ("user", Part::Text { text }),
            ApiMessage::Assistant { text } => ("model", Part::Text { text }),
            ApiMessage::ToolCall {
                call_id,
                name,
                arguments,
            } => (
                "model",
                Part::FunctionCall {
                    id: call_id,
                    name,
                    args: raw_arguments(call_id, arguments)?,
                },
            ),
            ApiMessage::ToolResult {
                call_id,
                name,
                output,
                is_error,
            } => (
                "user",
                Part::FunctionResponse {
                    id: call_id,
                    name,
                    response: if *is_error {
                        ToolOutput::Error(output)
                    } else {
                        ToolOutput::Output(output)
                    },
                },
            ),
            ApiMessage::Compaction { .. } => {
                return Err(RequestError::Render(
                    "a provider's compaction cannot be sent to the Gemini API, which has none"
                        .to_owned(),
                ))
            }
        })
    }

    /// Appends `message`'s part, as [`body`] renders it, to `out`; returns its role.
    pub(crate) fn fragment(
        message: &ApiMessage<'_>,
        out: &mut Vec<u8>,
    ) -> Result<&'static str, RequestError> {
        let (role, part) = part(message)?;
        write(out, &part)?;
        Ok(role)
    }

    /// The body of `request` without its messages: `"contents":[]` stands where they go.
    pub(crate) fn frame(head: &RequestHead<'_>) -> Result<Vec<u8>, RequestError> {
        context::gemini_field(head.context_management)?;
        to_bytes(&Body {
            system_instruction: head.system.map(|text| Instruction {
                parts: [TextPart { text }],
            }),
            contents: Vec::new(),
            tools: tools(head.tools),
            generation_config: GenerationConfig {
                max_output_tokens: head.max_output_tokens,
            },
        })
    }

    fn tools<'r>(tools: &'r [ToolDefinition<'_>]) -> Vec<Tools<'r>> {
        let declarations: Vec<Declaration<'_>> = tools
            .iter()
            .map(|tool| Declaration {
                name: &tool.name,
                description: &tool.description,
                parameters_json_schema: &tool.parameters,
            })
            .collect();
        if declarations.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: declarations,
            }]
        }
    }

    /// The request body of `request` (the model goes in the path).
    pub fn body(request: &ModelRequest<'_>) -> Result<Vec<u8>, RequestError> {
        context::gemini_field(request.context_management.as_deref())?;
        let mut grouped: Vec<(&'static str, Vec<Part<'_>>)> = Vec::new();
        for message in request.messages.iter() {
            let (role, part) = part(message)?;
            push_part(&mut grouped, role, part);
        }
        to_bytes(&Body {
            system_instruction: request.system.as_deref().map(|text| Instruction {
                parts: [TextPart { text }],
            }),
            contents: grouped
                .into_iter()
                .map(|(role, parts)| Content { role, parts })
                .collect(),
            tools: tools(&request.tools),
            generation_config: GenerationConfig {
                max_output_tokens: request.max_output_tokens,
            },
        })
    }
}
