//! The request a model API client sends, in words every API shares, and its rendering as each
//! API's JSON body.
//!
//! The types borrow: a caller that keeps its history as `Vec<ApiMessage<'static>>` builds a
//! request with `Cow::Borrowed(&history)` and nothing of the history is copied, neither to
//! build the request nor to render its body (tool arguments go out as the raw JSON text).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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
}

impl<'a> ModelRequest<'a> {
    /// Everything of the request but its messages.
    pub fn head(&self) -> RequestHead<'_> {
        RequestHead {
            model: &self.model,
            system: self.system.as_deref(),
            tools: &self.tools,
            max_output_tokens: self.max_output_tokens,
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
        system: Option<&'r str>,
        messages: Vec<Message<'r>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tool<'r>>,
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
        },
        ToolUse {
            id: &'r str,
            name: &'r str,
            input: &'r RawValue,
        },
        ToolResult {
            tool_use_id: &'r str,
            content: &'r str,
            is_error: bool,
        },
    }

    #[derive(Serialize)]
    struct Tool<'r> {
        name: &'r str,
        description: &'r str,
        input_schema: &'r serde_json::Value,
    }

    /// One message's role and content block: adjacent blocks of one role share a message.
    fn part<'r>(message: &'r ApiMessage<'_>) -> Result<(&'static str, Block<'r>), RequestError> {
        Ok(match message {
            ApiMessage::User { text } => ("user", Block::Text { text }),
            ApiMessage::Assistant { text } => ("assistant", Block::Text { text }),
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
            system: head.system,
            messages: Vec::new(),
            tools: tools(head.tools),
        })
    }

    fn tools<'r>(tools: &'r [ToolDefinition<'_>]) -> Vec<Tool<'r>> {
        tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect()
    }

    /// The streamed request body of `request`.
    pub fn body(request: &ModelRequest<'_>) -> Result<Vec<u8>, RequestError> {
        let mut grouped: Vec<(&'static str, Vec<Block<'_>>)> = Vec::new();
        for message in request.messages.iter() {
            let (role, block) = part(message)?;
            push_part(&mut grouped, role, block);
        }
        to_bytes(&Body {
            model: &request.model,
            max_tokens: request.max_output_tokens,
            stream: true,
            system: request.system.as_deref(),
            messages: grouped
                .into_iter()
                .map(|(role, content)| Message { role, content })
                .collect(),
            tools: tools(&request.tools),
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
        })
    }
}

/// The Gemini API body (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`).
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
