//! Whether and where to export: the standard `OTEL_*` variables over the `[telemetry]` table of
//! `panewise.toml`. Pure: the environment comes in as a lookup function.
//!
//! Headers carry collectors' API keys, so [`Settings`]' `Debug` shows their names only, and
//! nothing here logs them.

use std::collections::BTreeMap;
use std::fmt;

use panewise_host::config::TelemetrySettings;

/// The wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`, the default.
    HttpProtobuf,
    /// `grpc`: named so that the warning can say it is not built in.
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
}

/// Resolved export settings; `None` from [`Settings::resolve`] means export is off.
#[derive(Clone, PartialEq, Eq)]
pub struct Settings {
    /// The base URL; `/v1/traces` and `/v1/metrics` are appended.
    pub endpoint: String,
    /// The protocol.
    pub protocol: Protocol,
    /// Headers sent with every export (API keys): never logged.
    pub headers: BTreeMap<String, String>,
    /// `service.name`.
    pub service_name: String,
    /// Further resource attributes.
    pub resource: BTreeMap<String, String>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("endpoint", &self.endpoint)
            .field("protocol", &self.protocol)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("service_name", &self.service_name)
            .field("resource", &self.resource)
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
        let Some(endpoint) = var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| file.endpoint.clone())
        else {
            return Ok(None);
        };
        let endpoint = endpoint.trim().trim_end_matches('/').to_owned();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(SettingsError::Endpoint);
        }
        let protocol = match var("OTEL_EXPORTER_OTLP_PROTOCOL")
            .or_else(|| file.protocol.clone())
            .as_deref()
            .map(str::trim)
        {
            None | Some("http/protobuf") => Protocol::HttpProtobuf,
            Some("grpc") => Protocol::Grpc,
            Some(other) => return Err(SettingsError::Protocol(other.to_owned())),
        };
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
        Ok(Some(Settings {
            endpoint,
            protocol,
            headers,
            service_name,
            resource,
        }))
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
        assert_eq!(on.map(|s| s.endpoint), Some("http://h:4318".to_owned()));
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
        assert_eq!(resolved.endpoint, "http://env:4318");
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
}
