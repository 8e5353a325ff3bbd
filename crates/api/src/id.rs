//! A request's id, kept as the exact JSON text the client sent.
//!
//! JSON-RPC lets a client pick any number or string as an id, and it matches the answer by
//! that id. Read into a [`serde_json::Value`], a number of 2^64 or more becomes a float and is
//! echoed as `1.8446744073709552e19`, which no client matches. So the id is never parsed into
//! a number: its text is checked to be a JSON number or string and echoed byte for byte.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The id of a request: the JSON number or string as the client wrote it (whitespace
/// around it dropped).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// The id `n`, as this crate's own clients number their requests.
    pub fn number(n: u64) -> RequestId {
        RequestId(n.to_string())
    }

    /// The id's JSON text, `42` or `"abc"`.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The id as an unsigned number, when it is one that fits in 64 bits written plainly (how
    /// [`RequestId::number`] writes it).
    pub fn as_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }

    /// The id from JSON text, when that text is one number or one string.
    pub fn from_json(text: &str) -> Result<RequestId, String> {
        let text = text.trim();
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|error| format!("the id is not JSON: {error}"))?;
        if value.is_number() || value.is_string() {
            Ok(RequestId(text.to_owned()))
        } else {
            Err(format!("the id must be a number or a string, not {text}"))
        }
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.0)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Checked when it was made, so the text is valid JSON; re-checking here keeps a bad
        // id from ever producing invalid output.
        let raw = RawValue::from_string(self.0.clone()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RequestId, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        RequestId::from_json(raw.get()).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_byte_for_byte() {
        for text in [
            "0",
            "7",
            "18446744073709551615",
            "18446744073709551616",
            "340282366920938463463374607431768211456",
            "-1",
            "-9223372036854775809",
            "1.5",
            "1e3",
            "\"abc\"",
            "\"\"",
            "\"with \\\"quotes\\\" and \\u00e9\"",
        ] {
            let line = format!("{{\"id\":{text}}}");
            #[derive(Serialize, Deserialize)]
            struct Holder {
                id: RequestId,
            }
            let holder: Holder =
                serde_json::from_str(&line).unwrap_or_else(|error| panic!("{text}: {error}"));
            assert_eq!(holder.id.as_json(), text);
            let back = serde_json::to_string(&holder).unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(back, line, "{text} echoed differently");
        }
    }

    #[test]
    fn only_numbers_and_strings_are_ids() {
        for text in ["null", "true", "[1]", "{\"a\":1}", "", "1 2"] {
            assert!(
                RequestId::from_json(text).is_err(),
                "{text:?} taken as an id"
            );
        }
    }

    #[test]
    fn as_u64_reads_plain_unsigned_numbers_only() {
        assert_eq!(RequestId::number(42).as_u64(), Some(42));
        assert_eq!(
            RequestId::from_json("18446744073709551616")
                .ok()
                .and_then(|id| id.as_u64()),
            None
        );
        assert_eq!(
            RequestId::from_json("\"42\"")
                .ok()
                .and_then(|id| id.as_u64()),
            None
        );
        assert_eq!(
            RequestId::from_json("-1").ok().and_then(|id| id.as_u64()),
            None
        );
    }
}
