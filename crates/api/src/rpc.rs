//! The JSON-RPC 2.0 envelope: requests, responses and notifications, one per line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ApiError, ErrorCode};
use crate::id::RequestId;
use crate::MAX_LINE_BYTES;

/// A request from a client. `id` is echoed in the response; a request without one is a
/// notification from the client, which the daemon answers with nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The client's id for the request (a number or a string), echoed exactly as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// The method (one of [`crate::Method::ALL`]).
    pub method: String,
    /// The method's params (an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    /// A request of `method` with `params` and a numeric id.
    pub fn new(id: u64, method: &str, params: impl Serialize) -> Result<Request, ApiError> {
        Ok(Request {
            jsonrpc: "2.0".to_owned(),
            id: Some(RequestId::number(id)),
            method: method.to_owned(),
            params: Some(serde_json::to_value(params)?),
        })
    }
}

/// The error member of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The code ([`ErrorCode::code`]).
    pub code: i64,
    /// A sentence for the person.
    pub message: String,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code: code.code(),
            message: message.into(),
        }
    }
}

/// The daemon's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id, exactly as sent; `null` (`None`) when the request could not be
    /// read.
    pub id: Option<RequestId>,
    /// The method's result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// What went wrong, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl Response {
    /// A success.
    pub fn ok(id: Option<RequestId>, result: Value) -> Response {
        Response {
            jsonrpc: "2.0".to_owned(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// A failure.
    pub fn err(id: Option<RequestId>, error: RpcError) -> Response {
        Response {
            jsonrpc: "2.0".to_owned(),
            id,
            result: None,
            error: Some(error),
        }
    }

    /// The result, or the error as an [`ApiError::Remote`].
    pub fn into_result(self) -> Result<Value, ApiError> {
        match (self.result, self.error) {
            (_, Some(error)) => Err(ApiError::Remote {
                code: ErrorCode::from_code(error.code),
                message: error.message,
            }),
            (Some(result), None) => Ok(result),
            (None, None) => Ok(Value::Null),
        }
    }
}

/// A message from the daemon that answers no request (one of [`crate::NOTIFICATIONS`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The notification's name (one of [`crate::NOTIFICATIONS`]).
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// One line from the daemon: a response, or a notification.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to a request.
    Response(Response),
    /// A notification.
    Notification(Notification),
}

/// Reads one request line (without its newline). A line over [`MAX_LINE_BYTES`], a line that
/// is not JSON and JSON that is not a request are errors whose [`ApiError::code`] the
/// response carries.
pub fn parse_request(line: &[u8]) -> Result<Request, ApiError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ApiError::TooLong {
            len: line.len(),
            cap: MAX_LINE_BYTES,
        });
    }
    // Read straight into the request (an id must keep its exact text, which a detour through
    // `Value` loses); a syntax error is a parse error, a JSON value of the wrong shape a shape
    // error.
    let request: Request =
        serde_json::from_slice(line).map_err(|error| match error.classify() {
            // A value of the wrong shape, when the line reads as JSON at all: a line the
            // reader stopped on for its shape before meeting what makes it unreadable
            // (nesting past the recursion limit, bad syntax further on) is a parse error.
            serde_json::error::Category::Data => match serde_json::from_slice::<Value>(line) {
                Ok(_) => ApiError::Shape(error.to_string()),
                Err(syntax) => ApiError::Json(syntax),
            },
            serde_json::error::Category::Io
            | serde_json::error::Category::Syntax
            | serde_json::error::Category::Eof => ApiError::Json(error),
        })?;
    if request.jsonrpc != "2.0" {
        return Err(ApiError::Shape(format!(
            "jsonrpc is {:?}, not \"2.0\"",
            request.jsonrpc
        )));
    }
    if request
        .params
        .as_ref()
        .is_some_and(|params| !params.is_object())
    {
        return Err(ApiError::Shape("params must be an object".to_owned()));
    }
    Ok(request)
}

/// The id of a request line that could not be read, when one can be found in it (so the
/// error response names the request it answers).
pub fn salvage_id(line: &[u8]) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<IdOnly<'_>>(line)
        .ok()
        .and_then(|holder| holder.id)
        .and_then(|raw| RequestId::from_json(raw.get()).ok())
}

/// Reads one line from the daemon.
pub fn parse_incoming(line: &[u8]) -> Result<Incoming, ApiError> {
    let value: Value = serde_json::from_slice(line)?;
    if value.get("method").is_some() && value.get("id").is_none() {
        let notification =
            serde_json::from_value(value).map_err(|error| ApiError::Shape(error.to_string()))?;
        return Ok(Incoming::Notification(notification));
    }
    let response =
        serde_json::from_value(value).map_err(|error| ApiError::Shape(error.to_string()))?;
    Ok(Incoming::Response(response))
}

/// A message as one line, newline included.
pub fn to_line(message: &impl Serialize) -> Result<Vec<u8>, ApiError> {
    let mut bytes = serde_json::to_vec(message)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The notification `method` with `params` as one newline-terminated line, serialised
/// straight from the borrowed params (no intermediate [`Value`]): the same bytes as
/// [`to_line`] of the [`Notification`] holding them, for the daemon's path of one line per log
/// line.
pub fn notification_line(method: &str, params: &impl Serialize) -> Result<Vec<u8>, ApiError> {
    #[derive(Serialize)]
    struct Borrowed<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    to_line(&Borrowed {
        jsonrpc: "2.0",
        method,
        params,
    })
}

#[cfg(test)]
mod notification_line_tests {
    use super::*;

    #[test]
    fn a_notification_line_parses_back_to_the_notification() {
        let params = crate::LineNotice {
            session: "s".into(),
            index: 7,
            line: "{\"text\":\"\\u001b[2K\"}".into(),
        };
        let line = notification_line(crate::LineNotice::METHOD, &params)
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(line.last(), Some(&b'\n'));
        let parsed = parse_incoming(line.strip_suffix(b"\n").unwrap_or(&line));
        let expected = Notification {
            jsonrpc: "2.0".into(),
            method: crate::LineNotice::METHOD.into(),
            params: serde_json::to_value(&params).unwrap_or(Value::Null),
        };
        assert_eq!(parsed.ok(), Some(Incoming::Notification(expected)));
    }
}
