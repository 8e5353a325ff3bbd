//! Strategy configuration files (`--config`, `[window] config`): JSON, or TOML by extension,
//! each problem said with the file's line and the field. Read by `window`, `window eval`,
//! `run` and `agents`.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use panewise_window::config::json_syntax;
use panewise_window::{StrategyConfig, WindowError};
use serde_json::{Map, Value};

/// The text of an input, a data error naming the line when it is not UTF-8.
pub(crate) fn utf8_text(bytes: Vec<u8>, name: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let line = error
            .as_bytes()
            .get(..valid)
            .map_or(0, |head| head.iter().filter(|b| **b == b'\n').count())
            .saturating_add(1);
        anyhow!("{name}: line {line}: not valid UTF-8 text")
    })
}

/// Reads a strategy configuration file (JSON, or TOML by extension), as `--config` does.
pub(crate) fn read_config(path: &Path) -> Result<StrategyConfig> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {name}"))?;
    let text = utf8_text(bytes, &name)?;
    let is_toml = path
        .extension()
        .is_some_and(|extension| extension == "toml");
    parse_config(&text, is_toml)
        .map_err(|problem| anyhow!("bad configuration in {name}: {problem}"))
}

/// Parses a configuration, naming the file's line, the field, and the other format when the
/// text is in it.
fn parse_config(text: &str, is_toml: bool) -> Result<StrategyConfig, String> {
    let value = if is_toml {
        toml_config(text)
    } else {
        json_config(text)
    };
    let value = value.map_err(|problem| match problem {
        Problem::Syntax(text) => text,
        Problem::Field(error) => field_message(text, is_toml, &error),
    })?;
    StrategyConfig::try_from(value).map_err(|error| field_message(text, is_toml, &error))
}

/// Why a configuration could not be read as a value.
enum Problem {
    /// Not JSON or TOML at all: the message, with its line.
    Syntax(String),
    /// Read, but a value no option can take.
    Field(WindowError),
}

fn json_config(text: &str) -> Result<Value, Problem> {
    serde_json::from_str(text).map_err(|error| {
        let reads_as_toml =
            toml::from_str::<toml::Table>(text).is_ok_and(|table| !table.is_empty());
        let hint = if reads_as_toml {
            "; the file reads as TOML: name it `….toml`"
        } else {
            ""
        };
        Problem::Syntax(format!("{}{hint}", json_syntax(&error)))
    })
}

fn toml_config(text: &str) -> Result<Value, Problem> {
    let table = toml::from_str::<toml::Table>(text).map_err(|error| {
        let line = error
            .span()
            .and_then(|span| text.get(..span.start))
            .map(|head| head.matches('\n').count().saturating_add(1));
        let reason = error.message().trim().replace('\n', " ");
        let reads_as_json = serde_json::from_str::<Value>(text).is_ok();
        let hint = if reads_as_json {
            "; the file reads as JSON: name it `….json`"
        } else {
            ""
        };
        // A bad value (a number past TOML's i64) is named by the key its line sets.
        let key = line
            .and_then(|line| text.lines().nth(line.saturating_sub(1)))
            .and_then(|line| line.split_once('='))
            .map(|(key, _)| key.trim().trim_matches('"'))
            .filter(|key| !key.is_empty() && !key.contains(['{', '[', ' ']))
            .map_or_else(String::new, |key| format!(" (field `{key}`)"));
        match line {
            Some(line) => Problem::Syntax(format!("line {line}{key}: {reason}{hint}")),
            None => Problem::Syntax(format!("{reason}{hint}")),
        }
    })?;
    let mut object = Map::new();
    for (key, value) in table {
        let value = toml_to_json(value, &key).map_err(Problem::Field)?;
        object.insert(key, value);
    }
    Ok(Value::Object(object))
}

/// A TOML value as the JSON value the configuration parser reads. A date-time has no JSON
/// counterpart (serde would hand over a private wrapper object), so it is refused by name.
fn toml_to_json(value: toml::Value, key: &str) -> Result<Value, WindowError> {
    let refuse = |reason: String| WindowError::InvalidConfig {
        field: key.to_string(),
        reason,
    };
    Ok(match value {
        toml::Value::String(text) => Value::String(text),
        toml::Value::Integer(number) => Value::from(number),
        toml::Value::Float(number) => serde_json::Number::from_f64(number)
            .map(Value::Number)
            .ok_or_else(|| refuse(format!("got {number}, which is not a finite number")))?,
        toml::Value::Boolean(flag) => Value::Bool(flag),
        toml::Value::Datetime(datetime) => {
            return Err(refuse(format!(
                "got the TOML date-time {datetime}, which no option takes (quote it to make \
                 it a string)"
            )));
        }
        toml::Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| toml_to_json(item, key))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(inner, item)| Ok((inner, toml_to_json(item, key)?)))
                .collect::<Result<_, WindowError>>()?,
        ),
    })
}

/// A field error, prefixed with the file line that sets the field when one does.
fn field_message(text: &str, is_toml: bool, error: &WindowError) -> String {
    let line = match error {
        WindowError::InvalidConfig { field, .. } if !field.is_empty() => {
            key_line(text, field, is_toml)
        }
        _ => None,
    };
    match line {
        Some(line) => format!("line {line}: {error}"),
        None => error.to_string(),
    }
}

/// The 1-based line that sets `key` in a flat configuration, if one visibly does.
fn key_line(text: &str, key: &str, is_toml: bool) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    let sets_key = |line: &str| {
        let mut rest = line.trim_start();
        if is_toml {
            rest = match rest.strip_prefix(key) {
                Some(after) => after,
                None => match rest.strip_prefix(quoted.as_str()) {
                    Some(after) => after,
                    None => return false,
                },
            };
            rest.trim_start().starts_with('=')
        } else {
            rest.match_indices(quoted.as_str()).any(|(at, _)| {
                rest.get(at + quoted.len()..)
                    .is_some_and(|after| after.trim_start().starts_with(':'))
            })
        }
    };
    text.lines()
        .position(sets_key)
        .map(|index| index.saturating_add(1))
}
