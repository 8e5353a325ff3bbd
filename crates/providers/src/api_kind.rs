//! [`ApiKind`]: which model API a client speaks, with what is known of each API without
//! rendering or decoding anything (its name, endpoint and conventional environment
//! variables). A leaf of the crate: it imports nothing from it, so the error types
//! (`error.rs`) can name an API without importing the API clients (`api/`), which import
//! the classifier, which imports the decoders' shared names (`line.rs`), which import the
//! errors. The request rendering and the stream decoders add their methods to [`ApiKind`] in
//! `api/mod.rs`.

use std::fmt;

/// Which model API a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI Responses API.
    OpenAi,
    /// The Gemini API.
    Gemini,
}

impl ApiKind {
    /// Every API, in documentation order.
    pub const ALL: [ApiKind; 3] = [ApiKind::Anthropic, ApiKind::OpenAi, ApiKind::Gemini];

    /// The API's name in words.
    pub fn name(self) -> &'static str {
        match self {
            ApiKind::Anthropic => "anthropic",
            ApiKind::OpenAi => "openai",
            ApiKind::Gemini => "gemini",
        }
    }

    /// The conventional environment variables of the key and of the base URL.
    pub fn env_variables(self) -> (&'static str, &'static str) {
        match self {
            ApiKind::Anthropic => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            ApiKind::OpenAi => ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
            ApiKind::Gemini => ("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"),
        }
    }

    /// The public endpoint, used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ApiKind::Anthropic => "https://api.anthropic.com",
            ApiKind::OpenAi => "https://api.openai.com",
            ApiKind::Gemini => "https://generativelanguage.googleapis.com",
        }
    }

    /// The streaming endpoint under `base_url` for `model`.
    ///
    /// A base URL that already ends in the API's version segment (`…/v1`, as `OPENAI_BASE_URL`
    /// is often written) is not given it twice.
    pub fn endpoint(self, base_url: &str, model: &str) -> String {
        let base = base_url.trim_end_matches('/');
        let (version, rest) = match self {
            ApiKind::Anthropic => ("/v1", "/messages".to_owned()),
            ApiKind::OpenAi => ("/v1", "/responses".to_owned()),
            ApiKind::Gemini => (
                "/v1beta",
                format!("/models/{model}:streamGenerateContent?alt=sse"),
            ),
        };
        let base = base.strip_suffix(version).unwrap_or(base);
        format!("{base}{version}{rest}")
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
