//! Whether and where to export: the standard `OTEL_*` variables over the `[telemetry]` table of
//! `panewise.toml`. Pure: the environment comes in as a lookup function.
//!
//! Headers carry collectors' API keys, so [`Settings`]' `Debug` shows their names only, and
//! nothing here logs them.

use std::collections::BTreeMap;
use std::fmt;

use panewise_protocol::TelemetrySettings;

/// The wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`, the default.
    HttpProtobuf,
    /// `grpc`: OTLP over gRPC (plain HTTP/2; an `https://` endpoint is refused when
    /// export starts, as no TLS is built into the gRPC client).
    Grpc,
}

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// An unknown `OTEL_EXPORTER_OTLP_PROTOCOL`.
    #[error("unknown OTLP protocol `{0}`, expected `http/protobuf` or `grpc`")]
    Protocol(String),
    /// An endpoint that is not an `http://` or `https://` URL.
    #[error("the OTLP endpoint must start with http:// or https://")]
    Endpoint,
    /// A content opt-in that is neither `true` nor `false`.
    #[error("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT must be true or false, got `{0}`")]
    Content(String),
}

/// Resolved export settings; `None` from [`Settings::resolve`] means export is off.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// Where spans go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else the base URL with
    /// `/v1/traces` appended (over gRPC: the base URL as given); `None`: no spans are exported.
    pub traces_endpoint: Option<String>,
    /// Where metrics go: `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as given, else the base URL
    /// with `/v1/metrics` appended (over gRPC: the base URL as given); `None`: no metrics are
    /// exported.
    pub metrics_endpoint: Option<String>,
    /// The protocol.
    pub protocol: Protocol,
    /// Headers sent with every export (API keys): never logged.
    pub headers: BTreeMap<String, String>,
    /// `service.name`.
    pub service_name: String,
    /// Further resource attributes.
    pub resource: BTreeMap<String, String>,
    /// Export content (prompts, answers, tool input and output) too: the opt-in of
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` or `[telemetry] content = true`.
    pub content: bool,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("traces_endpoint", &self.traces_endpoint)
            .field("metrics_endpoint", &self.metrics_endpoint)
            .field("protocol", &self.protocol)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("service_name", &self.service_name)
            .field("resource", &self.resource)
            .field("content", &self.content)
            .finish()
    }
}

impl Settings {
    /// The settings from the environment (`env`) over the file's table; `Ok(None)` when no
    /// endpoint is set anywhere, or the table says `enabled = false`, or `OTEL_SDK_DISABLED`
    /// is `true`.
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        file: &TelemetrySettings,
    ) -> Result<Option<Settings>, SettingsError> {
        let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        if file.enabled == Some(false)
            || var("OTEL_SDK_DISABLED").is_some_and(|value| value.trim() == "true")
        {
            return Ok(None);
        }
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .or_else(|| file.endpoint.clone())
            .map(|base| url(&base))
            .transpose()?;
        // A signal's own variable is the whole URL (the specification's rule); the base URL
        // gets the signal's path.
        let signal = |variable: &str, path: &str| -> Result<Option<String>, SettingsError> {
            match var(variable) {
                Some(own) => url(&own).map(Some),
                None => Ok(base.as_ref().map(|base| format!("{base}{path}"))),
            }
        };
        let protocol = match var("OTEL_EXPORTER_OTLP_PROTOCOL")
            .or_else(|| file.protocol.clone())
            .as_deref()
            .map(str::trim)
        {
            None | Some("http/protobuf") => Protocol::HttpProtobuf,
            Some("grpc") => Protocol::Grpc,
            Some(other) => return Err(SettingsError::Protocol(other.to_owned())),
        };
        // gRPC has no per-signal paths: the service name travels in the request, so the base
        // URL serves both signals as it is.
        let (traces_path, metrics_path) = match protocol {
            Protocol::HttpProtobuf => ("/v1/traces", "/v1/metrics"),
            Protocol::Grpc => ("", ""),
        };
        let traces_endpoint = signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces_path)?;
        let metrics_endpoint = signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics_path)?;
        if traces_endpoint.is_none() && metrics_endpoint.is_none() {
            return Ok(None);
        }
        let headers = var("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|text| pairs(&text))
            .unwrap_or_default();
        let mut resource = file.resource_attributes.clone();
        if let Some(text) = var("OTEL_RESOURCE_ATTRIBUTES") {
            resource.extend(pairs(&text));
        }
        // OTEL_SERVICE_NAME wins over a `service.name` resource attribute, as the spec says.
        let service_name = var("OTEL_SERVICE_NAME")
            .or_else(|| resource.remove("service.name"))
            .or_else(|| file.service_name.clone())
            .unwrap_or_else(|| "panewise".to_owned());
        resource.remove("service.name");
        let content = match var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            Some(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(SettingsError::Content(text)),
            },
            None => file.content.unwrap_or(false),
        };
        Ok(Some(Settings {
            traces_endpoint,
            metrics_endpoint,
            protocol,
            headers,
            service_name,
            resource,
            content,
        }))
    }

    /// The endpoint a warning names: where spans go, else where metrics go.
    pub fn endpoint(&self) -> &str {
        self.traces_endpoint
            .as_deref()
            .or(self.metrics_endpoint.as_deref())
            .unwrap_or("")
    }
}

/// An endpoint as given, without a trailing `/`; only `http://` and `https://` URLs.
fn url(text: &str) -> Result<String, SettingsError> {
    let url = text.trim().trim_end_matches('/').to_owned();
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url)
    } else {
        Err(SettingsError::Endpoint)
    }
}

/// `key=value,key2=value2` (the W3C baggage form the OTLP variables use), values
/// percent-decoded; malformed members are skipped.
pub fn pairs(text: &str) -> BTreeMap<String, String> {
    text.split(',')
        .filter_map(|member| member.split_once('='))
        .map(|(key, value)| (percent_decode(key.trim()), percent_decode(value.trim())))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn off_unless_an_endpoint_is_set() {
        let file = TelemetrySettings::default();
        assert_eq!(Settings::resolve(env(&[]), &file), Ok(None));
        let on = Settings::resolve(
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318/")]),
            &file,
        )
        .ok()
        .flatten();
        let on = on.expect("on");
        assert_eq!(
            on.traces_endpoint.as_deref(),
            Some("http://h:4318/v1/traces")
        );
        assert_eq!(
            on.metrics_endpoint.as_deref(),
            Some("http://h:4318/v1/metrics")
        );
        assert!(!on.content);
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        let file = TelemetrySettings {
            endpoint: Some("http://file:4318".to_owned()),
            service_name: Some("from-file".to_owned()),
            resource_attributes: [("team".to_owned(), "a".to_owned())].into(),
            ..TelemetrySettings::default()
        };
        let resolved = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
                ("OTEL_SERVICE_NAME", "from-env"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "team=b,deployment.environment=ci",
                ),
            ]),
            &file,
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(
            resolved.traces_endpoint.as_deref(),
            Some("http://env:4318/v1/traces")
        );
        assert_eq!(resolved.service_name, "from-env");
        assert_eq!(resolved.resource.get("team").map(String::as_str), Some("b"));
        let disabled = TelemetrySettings {
            enabled: Some(false),
            ..file
        };
        assert_eq!(
            Settings::resolve(
                env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e")]),
                &disabled
            ),
            Ok(None)
        );
    }

    #[test]
    fn headers_are_decoded_and_never_shown() {
        let resolved = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "api-key=s3cr%3Dt,x-team = core",
                ),
            ]),
            &TelemetrySettings::default(),
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(
            resolved.headers.get("api-key").map(String::as_str),
            Some("s3cr=t")
        );
        let shown = format!("{resolved:?}");
        assert!(
            shown.contains("api-key") && !shown.contains("s3cr"),
            "{shown}"
        );
    }

    #[test]
    fn a_bad_protocol_or_endpoint_is_an_error() {
        let file = TelemetrySettings::default();
        assert_eq!(
            Settings::resolve(
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
                ]),
                &file
            ),
            Err(SettingsError::Protocol("http/json".to_owned()))
        );
        assert_eq!(
            Settings::resolve(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "h:4318")]), &file),
            Err(SettingsError::Endpoint)
        );
    }

    #[test]
    fn over_grpc_the_base_url_is_both_signals_endpoint() {
        let file = TelemetrySettings {
            protocol: Some("grpc".to_owned()),
            ..TelemetrySettings::default()
        };
        let resolved = Settings::resolve(
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317/")]),
            &file,
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(resolved.protocol, Protocol::Grpc);
        assert_eq!(
            resolved.traces_endpoint.as_deref(),
            Some("http://collector:4317")
        );
        assert_eq!(
            resolved.metrics_endpoint.as_deref(),
            Some("http://collector:4317")
        );
        // The environment's protocol wins over the file's.
        let http = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ]),
            &file,
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(http.protocol, Protocol::HttpProtobuf);
        assert_eq!(
            http.metrics_endpoint.as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
    }

    #[test]
    fn a_signals_own_endpoint_is_taken_whole_and_alone_exports_that_signal() {
        let file = TelemetrySettings::default();
        let traces_only = Settings::resolve(
            env(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://phoenix:6006/v1/traces",
            )]),
            &file,
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(
            traces_only.traces_endpoint.as_deref(),
            Some("http://phoenix:6006/v1/traces")
        );
        assert_eq!(traces_only.metrics_endpoint, None);
        let both = Settings::resolve(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                    "http://metrics:9090/otlp",
                ),
            ]),
            &file,
        )
        .ok()
        .flatten()
        .expect("on");
        assert_eq!(
            both.traces_endpoint.as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            both.metrics_endpoint.as_deref(),
            Some("http://metrics:9090/otlp")
        );
        assert_eq!(
            Settings::resolve(
                env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "phoenix:6006")]),
                &file
            ),
            Err(SettingsError::Endpoint)
        );
    }

    #[test]
    fn content_is_off_unless_opted_into() {
        let on = |vars: &[(&str, &str)], file: &TelemetrySettings| {
            let mut all = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h")];
            all.extend_from_slice(vars);
            Settings::resolve(env(&all), file).map(|s| s.map(|s| s.content))
        };
        let plain = TelemetrySettings::default();
        let opted = TelemetrySettings {
            content: Some(true),
            ..TelemetrySettings::default()
        };
        assert_eq!(on(&[], &plain), Ok(Some(false)));
        assert_eq!(on(&[], &opted), Ok(Some(true)));
        let variable = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
        assert_eq!(on(&[(variable, "true")], &plain), Ok(Some(true)));
        assert_eq!(on(&[(variable, "false")], &opted), Ok(Some(false)));
        assert_eq!(
            on(&[(variable, "yes")], &plain),
            Err(SettingsError::Content("yes".to_owned()))
        );
    }
}
