//! Context windows of models whose CLI does not report them (Codex, Gemini CLI), as data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ModelTableError;
use crate::line::Provider;

/// The built-in table, in the same JSON shape a configuration file uses: `data/models.json`.
const BUILT_IN: &str = include_str!("../data/models.json");

/// Context windows per model id, for providers that do not report them, plus the model to assume
/// for a provider whose stream never names one (Codex).
///
/// Patterns are exact ids, or prefixes ending in `*`; matching ignores ASCII case, an exact id
/// beats any prefix and a longer prefix beats a shorter one. Configuration overrides the
/// built-in table entry by entry: [`ModelTable::built_in`] then [`ModelTable::overridden_by`].
///
/// ```
/// use panewise_providers::{ModelTable, Provider};
///
/// let table = ModelTable::built_in()
///     .overridden_by(ModelTable::from_json(r#"{"windows":[{"model":"gpt-5.5","window":272000}]}"#)?);
/// assert_eq!(table.window_for("gpt-5.5"), Some(272_000));
/// assert_eq!(table.window_for("GPT-5-mini"), Some(400_000));
/// assert_eq!(table.default_model(Provider::Codex), Some("gpt-5.5"));
/// # Ok::<(), panewise_providers::ModelTableError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    /// The window rules, in no particular order (precedence is by specificity).
    #[serde(default)]
    pub windows: Vec<WindowRule>,
    /// The model to assume per provider (keyed `claude-code`, `codex`, `gemini-cli`) when its
    /// stream names none. The host should put here the model it starts the CLI with.
    #[serde(default)]
    pub default_models: BTreeMap<String, String>,
    /// Which provider-side strategies each model supports, as the providers' documentation
    /// lists them (`check_provider_context` reads it). A model no rule matches supports none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_management: Vec<ContextRule>,
}

/// One row of the provider-side strategy support: the strategies a model (pattern) supports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextRule {
    /// An exact model id, or a prefix followed by `*`.
    pub model: String,
    /// The provider-side strategy names (`anthropic-compact`, …) the model supports.
    pub strategies: Vec<String>,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowRule {
    /// An exact model id, or a prefix followed by `*`.
    pub model: String,
    /// The context window in tokens.
    pub window: u64,
}

impl ModelTable {
    /// The table this crate ships with.
    pub fn built_in() -> Self {
        // The constant is tested to parse; an empty table is the harmless fallback.
        Self::from_json(BUILT_IN).unwrap_or_default()
    }

    /// Reads a table from JSON of the shape `{"windows":[{"model":"gpt-5*","window":400000}],
    /// "default_models":{"codex":"gpt-5.5"}}` (both keys optional).
    pub fn from_json(text: &str) -> Result<Self, ModelTableError> {
        Ok(serde_json::from_str(text)?)
    }

    /// This table with `overrides` laid over it: a rule for the same pattern, or a default
    /// model for the same provider, replaces this table's.
    pub fn overridden_by(mut self, overrides: ModelTable) -> Self {
        for rule in overrides.windows {
            self.windows
                .retain(|existing| !existing.model.eq_ignore_ascii_case(&rule.model));
            self.windows.push(rule);
        }
        self.default_models.extend(overrides.default_models);
        for rule in overrides.context_management {
            self.context_management
                .retain(|existing| !existing.model.eq_ignore_ascii_case(&rule.model));
            self.context_management.push(rule);
        }
        self
    }

    /// The provider-side strategies `model` supports, when a rule matches it (the most
    /// specific rule decides alone, so a rule lists all of its models' strategies).
    pub fn context_strategies(&self, model: &str) -> Option<&[String]> {
        best_match(&self.context_management, |rule| &rule.model, model)
            .map(|rule| rule.strategies.as_slice())
    }

    /// The window of `model`, if a rule matches it.
    pub fn window_for(&self, model: &str) -> Option<u64> {
        best_match(&self.windows, |rule| &rule.model, model).map(|rule| rule.window)
    }

    /// The model to assume for `provider` when its stream names none.
    pub fn default_model(&self, provider: Provider) -> Option<&str> {
        self.default_models
            .get(provider.as_str())
            .map(String::as_str)
    }
}

/// The row of `rows` whose pattern matches `model` best: patterns are exact ids or prefixes
/// ending in `*`, ASCII case is ignored, an exact id beats any prefix and a longer prefix beats a
/// shorter one. The model table and the price table both match this way.
pub(crate) fn best_match<'a, T>(
    rows: &'a [T],
    pattern_of: impl Fn(&T) -> &str,
    model: &str,
) -> Option<&'a T> {
    let model = model.to_ascii_lowercase();
    let mut best: Option<(usize, &T)> = None;
    for row in rows {
        let pattern = pattern_of(row).to_ascii_lowercase();
        let specificity = match pattern.strip_suffix('*') {
            Some(prefix) if model.starts_with(prefix) => prefix.len(),
            Some(_) => continue,
            None if pattern == model => usize::MAX,
            None => continue,
        };
        if best.is_none_or(|(so_far, _)| so_far < specificity) {
            best = Some((specificity, row));
        }
    }
    best.map(|(_, row)| row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_table_parses_and_covers_the_fixture_models() {
        let table = ModelTable::built_in();
        assert!(!table.windows.is_empty());
        assert_eq!(table.window_for("gemini-3.8-flash"), Some(1_048_576));
        assert_eq!(table.window_for("gemini-1.5-pro-002"), Some(2_097_152));
        assert_eq!(table.window_for("gpt-5.5"), Some(400_000));
        assert_eq!(table.window_for("claude-opus-5-5"), None);
    }

    #[test]
    fn exact_ids_beat_prefixes_and_overrides_replace_rules() {
        let table = ModelTable::built_in().overridden_by(ModelTable {
            windows: vec![
                WindowRule {
                    model: "gemini-*".into(),
                    window: 32_000,
                },
                WindowRule {
                    model: "gemini-x".into(),
                    window: 7,
                },
            ],
            default_models: BTreeMap::from([("codex".into(), "o3".into())]),
            context_management: Vec::new(),
        });
        assert_eq!(table.window_for("gemini-3.8-flash"), Some(32_000));
        assert_eq!(table.window_for("Gemini-X"), Some(7));
        assert_eq!(table.default_model(Provider::Codex), Some("o3"));
        assert!(ModelTable::from_json("{").is_err());
        // Unknown keys are refused by name, as in every configuration file.
        let error = ModelTable::from_json(r#"{"windows":[],"default_model":{"codex":"o3"}}"#)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(error.contains("default_model"), "{error}");
        assert!(
            ModelTable::from_json(r#"{"windows":[{"model":"m","window":1,"size":2}]}"#).is_err()
        );
    }
}
