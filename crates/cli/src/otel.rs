//! OpenTelemetry export for this process (docs/TELEMETRY.md): one exporter, started when
//! configured, each session's updates seen by its own export, flushed with a deadline at exit.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use panewise_host::config::Config;
use panewise_host::session::Session;
use panewise_telemetry::export::SessionExport;
use panewise_telemetry::{SessionInfo, Settings, Telemetry};

/// How long the exit may wait for the last spans and metrics to go out.
const FLUSH_DEADLINE: Duration = Duration::from_secs(3);

/// Starts export when the `OTEL_*` variables or the `[telemetry]` table ask for it. A setting
/// that cannot be used is a warning: telemetry never stops a session from running.
pub(crate) fn start(cwd: &Path) -> Option<Telemetry> {
    start_with(
        Config::load(cwd)
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

/// Lets `telemetry` see `session`, whose log is `log`.
pub(crate) fn attach(
    telemetry: Option<&Telemetry>,
    session: &mut Session,
    log: &Path,
    provider: &str,
    model: Option<String>,
) -> Option<Arc<SessionExport>> {
    let export = prepare(telemetry, log, provider, model)?;
    session.observe(export.observer());
    Some(export)
}

/// The export of a supervised session about to start: its span is opened now, and the
/// agent's environment gets `TRACEPARENT`, that span's W3C trace context, so that a CLI
/// exporting its own spans (Claude Code in headless mode) nests them under it. The session
/// is handed to [`observe`] once made.
pub(crate) fn prepare_supervised(
    telemetry: Option<&Telemetry>,
    plan: &mut crate::launch::SupervisedPlan,
) -> Option<Arc<SessionExport>> {
    let export = prepare(
        telemetry,
        &plan.log.clone(),
        &plan.provider_named.clone(),
        plan.model(),
    )?;
    if let Some(traceparent) = export.start() {
        plan.env.push(("TRACEPARENT".to_owned(), traceparent));
    }
    Some(export)
}

/// Lets `export` see `session`.
pub(crate) fn observe(export: Option<&Arc<SessionExport>>, session: &mut Session) {
    if let Some(export) = export {
        session.observe(export.observer());
    }
}

fn prepare(
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
    match provider {
        "claude-code" | "codex" | "gemini-cli" | "acp" => provider.to_owned(),
        _ => "panewise".to_owned(),
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
