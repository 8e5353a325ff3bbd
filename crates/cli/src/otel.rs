//! OpenTelemetry export for this process (docs/TELEMETRY.md): one exporter, started when
//! configured, each session's updates seen by its own export, flushed with a deadline at exit.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use panewise_telemetry::export::SessionExport;
use panewise_telemetry::{SessionInfo, Settings, Telemetry};

/// How long the exit may wait for the last spans and metrics to go out.
const FLUSH_DEADLINE: Duration = Duration::from_secs(3);

/// Starts export when the `OTEL_*` variables or the `[telemetry]` table ask for it. A setting
/// that cannot be used is a warning: telemetry never stops a session from running.
pub(crate) fn start(cwd: &Path) -> Option<Telemetry> {
    start_with(
        panewise_host::config::load(cwd)
            .map(|config| config.telemetry)
            .unwrap_or_default(),
    )
}

/// [`start`] with the `[telemetry]` table already read.
pub(crate) fn start_with(file: panewise_host::config::TelemetrySettings) -> Option<Telemetry> {
    match Settings::resolve(|name| std::env::var(name).ok(), &file) {
        Ok(None) => None,
        Ok(Some(settings)) => match Telemetry::start(&settings) {
            Ok(telemetry) => Some(telemetry),
            Err(error) => {
                eprintln!("panewise: telemetry is off: {error}");
                None
            }
        },
        Err(error) => {
            eprintln!("panewise: telemetry is off: {error}");
            None
        }
    }
}

/// The export of one session whose log is `log`, when an exporter runs: the launch layer
/// opens its span (a supervised agent is given its trace context) and lets it see the session.
pub(crate) fn session_export(
    telemetry: Option<&Telemetry>,
    log: &Path,
    provider: &str,
    model: Option<String>,
) -> Option<Arc<SessionExport>> {
    let telemetry = telemetry?;
    Some(telemetry.session(SessionInfo {
        // The session's id, as the daemon names it: the log's stem.
        id: log.file_stem().map_or_else(
            || log.display().to_string(),
            |stem| stem.to_string_lossy().into_owned(),
        ),
        agent: agent_name(provider),
        provider: provider.to_owned(),
        model,
    }))
}

/// `gen_ai.agent.name`: the supervised CLI, or panewise for its own loop.
fn agent_name(provider: &str) -> String {
    match panewise_host::launch::ProviderName::from_name(provider) {
        Some(supervised) if supervised.is_supervised() => provider.to_owned(),
        Some(_) | None => "panewise".to_owned(),
    }
}

/// Ends the session's span and flushes, within the deadline.
pub(crate) fn finish(telemetry: Option<&Telemetry>, export: Option<Arc<SessionExport>>) {
    if let Some(export) = export {
        export.finish();
    }
    if let Some(telemetry) = telemetry {
        if !telemetry.shutdown(FLUSH_DEADLINE) {
            eprintln!(
                "panewise: telemetry: not everything was exported within {}s",
                FLUSH_DEADLINE.as_secs()
            );
        }
    }
}
