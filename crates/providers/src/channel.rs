//! What every channel to a persistent agent repeats, written once. The three channels (Claude
//! Code's control protocol in `claude_control.rs`, Codex `app-server` in `codex_appserver/`,
//! the Agent Client Protocol in `acp/`) have one shape: a client half that numbers the
//! host's requests and matches the agent's answers to them, keeps the agent's own requests
//! until they are answered or refused, and writes each line as data; and a decoder half that
//! reads a known method's params (or calls the line malformed) and keeps a line it does not
//! know as [`ProviderEvent::Unknown`]. This module holds those pieces; the channels keep only
//! what differs (their methods, their answers, their events).
//!
//! The two JSON-RPC channels differ in one field: Codex `app-server` writes its messages
//! without `"jsonrpc"`, ACP with `"jsonrpc":"2.0"` ([`Dialect`]). Keys are written in the
//! order a person reads them (`jsonrpc`, `id`, `method`, `params`), whatever serde_json's map
//! ordering.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{describe_json_error, ChannelError};
use crate::event::ProviderEvent;
use crate::rpc::id_value;

/// JSON-RPC's "method not found": the code of a refusal of a request the host does not answer.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// The host's requests on one channel, numbered from 1, each remembered with what it asked
/// until its answer comes.
#[derive(Debug, Clone)]
pub(crate) struct Numbering<K> {
    last: u64,
    sent: BTreeMap<u64, K>,
}

impl<K> Default for Numbering<K> {
    fn default() -> Self {
        Self {
            last: 0,
            sent: BTreeMap::new(),
        }
    }
}

impl<K> Numbering<K> {
    /// The number of the next request, which asks `kind`.
    pub(crate) fn next(&mut self, kind: K) -> u64 {
        self.last = self.last.saturating_add(1);
        self.sent.insert(self.last, kind);
        self.last
    }

    /// What request `number` asked, once: `None` for a number never sent or already answered.
    pub(crate) fn answered(&mut self, number: u64) -> Option<K> {
        self.sent.remove(&number)
    }

    /// [`Numbering::answered`] for an id as the agent echoed it (its JSON text, `1`); an id
    /// that is not one of our numbers is `None`.
    pub(crate) fn answered_id(&mut self, id: &str) -> Option<K> {
        id.parse::<u64>()
            .ok()
            .and_then(|number| self.answered(number))
    }
}

/// The agent's requests read and not yet answered, by id (its JSON text), each with what the
/// answer needs.
pub(crate) fn take_waiting<V>(
    waiting: &mut BTreeMap<String, V>,
    request_id: &str,
) -> Result<V, ChannelError> {
    waiting
        .remove(request_id)
        .ok_or_else(|| ChannelError::UnknownRequest(request_id.to_owned()))
}

/// How a JSON-RPC channel writes its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Codex `app-server`: JSON-RPC 2.0 without the `"jsonrpc"` field.
    CodexAppServer,
    /// ACP: JSON-RPC 2.0 with `"jsonrpc":"2.0"`.
    JsonRpc2,
}

impl Dialect {
    fn message(self) -> Map<String, Value> {
        let mut message = Map::new();
        if self == Dialect::JsonRpc2 {
            message.insert("jsonrpc".into(), "2.0".into());
        }
        message
    }

    /// Request `id` of `method`.
    pub(crate) fn request(self, id: u64, method: &str, params: Value) -> String {
        let mut message = self.message();
        message.insert("id".into(), id.into());
        message.insert("method".into(), method.into());
        message.insert("params".into(), params);
        Value::Object(message).to_string()
    }

    /// A notification of `method`, with `params` when it has any.
    pub(crate) fn notification(self, method: &str, params: Option<Value>) -> String {
        let mut message = self.message();
        message.insert("method".into(), method.into());
        if let Some(params) = params {
            message.insert("params".into(), params);
        }
        Value::Object(message).to_string()
    }

    /// The answer `result` to the agent's request `request_id` (its JSON text).
    pub(crate) fn result(self, request_id: &str, result: Value) -> String {
        let mut message = self.message();
        message.insert("id".into(), id_value(request_id));
        message.insert("result".into(), result);
        Value::Object(message).to_string()
    }

    /// A JSON-RPC error answering the agent's request `request_id`, one the host will not
    /// handle ([`METHOD_NOT_FOUND`]), so the agent stops waiting.
    pub(crate) fn refusal(self, request_id: &str, message_text: &str) -> String {
        let mut error = Map::new();
        error.insert("code".into(), METHOD_NOT_FOUND.into());
        error.insert("message".into(), message_text.into());
        let mut message = self.message();
        message.insert("id".into(), id_value(request_id));
        message.insert("error".into(), Value::Object(error));
        Value::Object(message).to_string()
    }
}

/// Reads a known method's `params` as `T`; params of another shape make the line malformed.
pub(crate) fn params_of<'a, T: Deserialize<'a>>(
    params: Option<&'a RawValue>,
    raw: &[u8],
) -> Result<Option<T>, String> {
    params
        .map(|params| {
            serde_json::from_str(params.get()).map_err(|error| describe_json_error(raw, &error))
        })
        .transpose()
}

/// A well-formed line of a kind the decoder does not know, kept verbatim and counted.
pub(crate) fn push_unknown(kind: Option<&str>, raw: &[u8], out: &mut Vec<ProviderEvent>) {
    out.push(ProviderEvent::Unknown {
        event_type: kind.map(str::to_owned),
        raw: String::from_utf8_lossy(raw).into_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_numbered_from_one_and_each_answer_matches_once() {
        let mut numbering = Numbering::default();
        assert_eq!(numbering.next("initialize"), 1);
        assert_eq!(numbering.next("prompt"), 2);
        assert_eq!(numbering.answered_id("2"), Some("prompt"));
        assert_eq!(numbering.answered_id("2"), None, "answered once");
        assert_eq!(
            numbering.answered_id("\"1\""),
            None,
            "a string id is not ours"
        );
        assert_eq!(numbering.answered(1), Some("initialize"));
        assert_eq!(numbering.answered(7), None);
    }

    /// `(dialect, line written, the line as the channels wrote it before this module)`.
    fn lines() -> Vec<(Dialect, String, &'static str)> {
        use Dialect::{CodexAppServer, JsonRpc2};
        vec![
            (
                CodexAppServer,
                CodexAppServer.request(3, "turn/start", json!({"threadId": "t"})),
                r#"{"id":3,"method":"turn/start","params":{"threadId":"t"}}"#,
            ),
            (
                JsonRpc2,
                JsonRpc2.request(1, "initialize", json!({})),
                r#"{"id":1,"jsonrpc":"2.0","method":"initialize","params":{}}"#,
            ),
            (
                CodexAppServer,
                CodexAppServer.notification("initialized", None),
                r#"{"method":"initialized"}"#,
            ),
            (
                JsonRpc2,
                JsonRpc2.notification("session/cancel", Some(json!({"sessionId": "s"}))),
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
            ),
            (
                CodexAppServer,
                CodexAppServer.result("0", json!({"decision": "accept"})),
                r#"{"id":0,"result":{"decision":"accept"}}"#,
            ),
            (
                JsonRpc2,
                JsonRpc2.refusal("\"a\"", "panewise does not offer fs/read_text_file"),
                r#"{"error":{"code":-32601,"message":"panewise does not offer fs/read_text_file"},"id":"a","jsonrpc":"2.0"}"#,
            ),
        ]
    }

    #[test]
    fn each_dialect_writes_the_lines_the_channels_wrote() {
        for (dialect, line, expected) in lines() {
            let ours: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            let theirs: Value = serde_json::from_str(expected).unwrap_or(Value::Null);
            assert_eq!(ours, theirs, "{dialect:?}: {line}");
            assert_eq!(
                ours.get("jsonrpc").is_some(),
                dialect == Dialect::JsonRpc2,
                "{line}"
            );
        }
    }

    #[test]
    fn a_waiting_request_is_taken_once() {
        let mut waiting = BTreeMap::from([("0".to_owned(), "approval")]);
        assert_eq!(take_waiting(&mut waiting, "0").ok(), Some("approval"));
        assert!(matches!(
            take_waiting(&mut waiting, "0"),
            Err(ChannelError::UnknownRequest(id)) if id == "0"
        ));
    }

    #[test]
    fn params_of_another_shape_make_the_line_malformed_and_absent_params_do_not() {
        #[derive(Deserialize)]
        struct Params {
            item: u64,
        }
        let raw = br#"{"method":"m","params":{"item":"not a number"}}"#;
        let good = RawValue::from_string(r#"{"item":3}"#.to_owned());
        let good = params_of::<Params>(good.as_deref().ok(), raw);
        assert!(matches!(good, Ok(Some(Params { item: 3 }))));
        let bad = RawValue::from_string(r#"{"item":"not a number"}"#.to_owned());
        assert!(params_of::<Params>(bad.as_deref().ok(), raw).is_err());
        assert!(matches!(params_of::<Params>(None, raw), Ok(None)));
        let mut out = Vec::new();
        push_unknown(Some("m"), raw, &mut out);
        assert!(matches!(
            out.as_slice(),
            [ProviderEvent::Unknown { event_type: Some(kind), .. }] if kind == "m"
        ));
    }
}
