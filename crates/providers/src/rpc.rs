//! The JSON-RPC 2.0 envelope both stdio channels share (Codex app-server writes it without the
//! `jsonrpc` field, ACP with it): which of request, notification or response a line is, and
//! request ids kept as their JSON text so that an answer echoes the id exactly as it came.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// One JSON-RPC message, with its parts left raw until a channel knows what to read them as.
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub result: Option<&'a RawValue>,
    pub error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Deserialize)]
pub(crate) struct RpcError {
    pub code: Option<i64>,
    pub message: Option<String>,
}

impl RpcError {
    /// The agent's words for the error, or a plain "the request failed" when it gave none.
    pub fn message_or_default(&self) -> &str {
        self.message.as_deref().unwrap_or("the request failed")
    }
}

/// What a message is, by the fields it carries.
pub(crate) enum Shape<'e, 'a> {
    /// The peer asks something and waits for the answer with the same id.
    Request {
        id: String,
        method: &'e str,
        params: Option<&'a RawValue>,
    },
    /// The peer tells something; nothing is answered.
    Notification {
        method: &'e str,
        params: Option<&'a RawValue>,
    },
    /// The peer answers one of ours.
    Response {
        id: String,
        result: Option<&'a RawValue>,
        error: Option<&'e RpcError>,
    },
}

impl<'a> Envelope<'a> {
    /// Parses one line; `Err` carries the reason it is not a JSON-RPC message.
    pub fn parse(raw: &'a [u8]) -> Result<Self, String> {
        serde_json::from_slice(raw).map_err(|error| crate::error::describe_json_error(raw, &error))
    }

    /// The message's shape, or `None` for an object that is none of the three.
    pub fn shape(&self) -> Option<Shape<'_, 'a>> {
        match (self.id, self.method.as_deref()) {
            (Some(id), Some(method)) => Some(Shape::Request {
                id: id_text(id),
                method,
                params: self.params,
            }),
            (None, Some(method)) => Some(Shape::Notification {
                method,
                params: self.params,
            }),
            (Some(id), None) if self.result.is_some() || self.error.is_some() => {
                Some(Shape::Response {
                    id: id_text(id),
                    result: self.result,
                    error: self.error.as_ref(),
                })
            }
            _ => None,
        }
    }
}

/// The id a line answers, when it is a response: a line the host wrote that answers the
/// agent's request `id` closes that request.
pub(crate) fn answered_id(raw: &[u8]) -> Option<String> {
    match Envelope::parse(raw).ok()?.shape()? {
        Shape::Response { id, .. } => Some(id),
        _ => None,
    }
}

/// A request id as its compact JSON text: `0` for the number 0, `"a"` (quotes included) for the
/// string `a`, so that the two never meet and [`id_value`] gives the id back exactly.
pub(crate) fn id_text(id: &RawValue) -> String {
    match serde_json::from_str::<Value>(id.get()) {
        Ok(value) => value.to_string(),
        Err(_) => id.get().trim().to_owned(),
    }
}

/// The JSON value of an id written by [`id_text`]; text that is not JSON is taken as a string
/// id, as a person would type it.
pub(crate) fn id_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// Reads `raw` as `T`, or `None` when it is absent or of another shape (a field a channel
/// reads leniently: its absence is not an error of the line).
pub(crate) fn lenient<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}
