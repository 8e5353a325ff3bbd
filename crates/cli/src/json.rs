//! What every subcommand's `--json` lines share (`docs/JSON.md`): the schema version each line
//! carries as `v`, one number for `run`, `decode`, `replay` and `sessions`, so a reader checks
//! one field whatever wrote the line.

use serde::Serialize;
use serde_json::Value;

/// The version of the `--json` line schemas: fields are only added within a version; a field
/// removed or renamed, or a meaning changed, raises it.
pub const JSON_SCHEMA_VERSION: u64 = 1;

/// `value` as one `--json` line, with `v` added when it is an object (every line is).
pub fn line(value: &impl Serialize) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(value)?;
    if let Value::Object(fields) = &mut value {
        fields.insert("v".to_owned(), Value::from(JSON_SCHEMA_VERSION));
    }
    serde_json::to_string(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_line_carries_the_version() {
        for (value, expected) in [
            (serde_json::json!({"type": "x"}), r#"{"type":"x","v":1}"#),
            (serde_json::json!({"v": 0, "a": 1}), r#"{"a":1,"v":1}"#),
            (serde_json::json!([1]), "[1]"),
        ] {
            assert_eq!(line(&value).ok().as_deref(), Some(expected));
        }
    }
}
