//! Resuming a session of panewise's own loop (`run --resume`, `resume`, `session/resume`): the
//! recorded log's header says how the session ran (provider, model, working directory, and
//! the own loop's approval mode, window strategy, iteration limit and mock scenario), and its
//! transcript, with the transcripts of the sessions it continued (`resumed_from`), rebuilds
//! the conversation (`panewise_host::agent_loop::resume::rebuild`). A supervised agent's
//! session resumes by the agent's own id instead (`run::read_resumed`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use panewise_host::agent_loop::resume::{rebuild, Rebuilt};
use panewise_host::approval::ApprovalMode;
use panewise_host::config::ProviderName;
use panewise_pane_state::log::{LogHeader, OwnLoopHeader, TranscriptEntry};
use panewise_window::StrategyConfig;

use crate::launch::LaunchRequest;
use crate::run::own_loop::{self, Route, Setup};

/// The most logs one chain of resumed sessions is followed through.
const MOST_LOGS: usize = 256;

/// What an own-loop session is resumed from: its log and its rebuilt conversation.
#[derive(Debug, Clone, Default)]
pub struct ResumeFrom {
    /// The log resumed (the new log's header names it in `resumed_from`).
    pub log: PathBuf,
    /// The conversation so far.
    pub rebuilt: Rebuilt,
}

/// A recorded session of the own loop, read to be continued.
#[derive(Debug)]
pub struct OwnResumed {
    /// The log and the rebuilt conversation.
    pub from: ResumeFrom,
    /// The provider it ran with.
    pub provider: ProviderName,
    /// Its model.
    pub model: Option<String>,
    /// Its working directory as recorded.
    pub cwd: Option<PathBuf>,
    /// The own loop's recorded settings.
    pub settings: OwnLoopHeader,
    /// How many logs the conversation was rebuilt from.
    pub logs: usize,
    /// The name it was given, which the session continuing it keeps.
    pub name: Option<String>,
}

/// One log read: its header and its transcript.
struct Read {
    header: LogHeader,
    transcript: Vec<TranscriptEntry>,
    /// The schema version of its first line.
    version: Option<u64>,
}

/// The provider of a header that names one of the own loop's, or `None` (a supervised
/// agent's session, a decoded stream).
fn own_provider(header: &LogHeader) -> Option<ProviderName> {
    let name = header.provider.as_deref().unwrap_or(&header.agent_id);
    ProviderName::from_name(name).filter(|provider| !provider.is_supervised())
}

fn read(log: &Path) -> anyhow::Result<Read> {
    let bytes = std::fs::read(log).with_context(|| format!("cannot read {}", log.display()))?;
    // A log written before transcripts were kept (schema v1, v2) holds no conversation.
    let version = bytes
        .split(|byte| *byte == b'\n')
        .find(|line| !line.trim_ascii().is_empty())
        .and_then(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
        .and_then(|line| line.get("v").and_then(serde_json::Value::as_u64));
    let parsed = panewise_pane_state::parse_log_bytes(&bytes)
        .with_context(|| format!("{} is not a session log", log.display()))?;
    let header = parsed
        .header
        .with_context(|| format!("{} has no header", log.display()))?;
    Ok(Read {
        header,
        transcript: parsed
            .transcript
            .into_iter()
            .map(|line| line.entry)
            .collect(),
        version,
    })
}

impl Read {
    /// The log holds a transcript to rebuild the conversation from.
    fn check_transcript(&self, log: &Path) -> anyhow::Result<()> {
        match self.version.filter(|version| *version < 3) {
            Some(version) => anyhow::bail!(
                "{} was written with session log schema v{version}, which keeps no transcript \
                 of the conversation: it cannot be resumed",
                log.display()
            ),
            None => Ok(()),
        }
    }
}

/// Reads the session `given` names (an id or a log's path) when it is one of the own loop's;
/// `Ok(None)` for any other log, which the caller resumes as a supervised agent's.
pub fn own_session(given: &Path) -> anyhow::Result<Option<OwnResumed>> {
    let log = crate::input::session(given)?;
    let log = std::fs::canonicalize(&log).unwrap_or(log);
    let first = read(&log)?;
    let Some(provider) = own_provider(&first.header) else {
        return Ok(None);
    };
    first.check_transcript(&log)?;
    // The chain of sessions this one continues, newest first.
    let mut seen: HashSet<PathBuf> = HashSet::from([log.clone()]);
    let mut segments = vec![first.transcript];
    let mut previous = first.header.resumed_from.clone();
    while let Some(older) = previous {
        anyhow::ensure!(
            segments.len() < MOST_LOGS,
            "{}: more than {MOST_LOGS} resumed sessions in one chain",
            log.display()
        );
        let older = PathBuf::from(older);
        let older = std::fs::canonicalize(&older).unwrap_or(older);
        anyhow::ensure!(
            seen.insert(older.clone()),
            "{}: the chain of resumed sessions loops at {}",
            log.display(),
            older.display()
        );
        let read = read(&older).with_context(|| {
            format!(
                "{} continues {}, which cannot be read",
                log.display(),
                older.display()
            )
        })?;
        anyhow::ensure!(
            own_provider(&read.header).is_some(),
            "{} continues {}, which is not a session of panewise's own loop",
            log.display(),
            older.display()
        );
        read.check_transcript(&older)?;
        segments.push(read.transcript);
        previous = read.header.resumed_from;
    }
    let logs = segments.len();
    let rebuilt = rebuild(segments.iter().rev());
    Ok(Some(OwnResumed {
        from: ResumeFrom { log, rebuilt },
        provider,
        model: first.header.model,
        cwd: first.header.cwd.map(PathBuf::from),
        settings: first.header.own_loop.unwrap_or_default(),
        logs,
        name: first.header.name,
    }))
}

impl OwnResumed {
    /// The own loop's setup and launch request that continue the session: every setting the
    /// recorded one, unless `given` sets it (`provider`, when given, must be the recorded one).
    pub fn request(
        self,
        given: LaunchRequest,
        provider: Option<&str>,
    ) -> anyhow::Result<(Box<Setup>, LaunchRequest)> {
        if let Some(name) = provider {
            let named = own_loop::parse_provider(name)?;
            anyhow::ensure!(
                named == self.provider,
                "--provider {name}: {} is a session of {}, and continues with it",
                self.from.log.display(),
                self.provider.as_str()
            );
        }
        let cwd = match (given.cwd, self.cwd) {
            (Some(cwd), _) => Some(cwd),
            (None, Some(cwd)) if cwd.is_dir() => Some(cwd),
            // The mock's own directory goes when its tools left nothing in it: a fresh one.
            (None, _) if self.provider == ProviderName::Mock => None,
            (None, Some(cwd)) => anyhow::bail!(
                "{}: its working directory {} is gone; give another with --cwd",
                self.from.log.display(),
                cwd.display()
            ),
            (None, None) => None,
        };
        let approval = match (given.approval, self.settings.approval.as_deref()) {
            (Some(approval), _) => Some(approval),
            (None, Some(name)) => Some(
                <ApprovalMode as clap::ValueEnum>::from_str(name, false).map_err(|_| {
                    anyhow::anyhow!(
                        "{}: recorded approval mode {name:?} is not one this build knows",
                        self.from.log.display()
                    )
                })?,
            ),
            (None, None) => None,
        };
        let window = match (given.window, &self.settings.window) {
            (Some(window), _) => Some(window),
            (None, Some(value)) => Some(StrategyConfig::from_json(&value.to_string()).map_err(
                |error| {
                    anyhow::anyhow!(
                        "{}: recorded window strategy: {error}",
                        self.from.log.display()
                    )
                },
            )?),
            (None, None) => None,
        };
        let setup =
            match own_loop::route_for(cwd.as_deref(), Some(self.provider.as_str()), approval)? {
                Route::Own(setup) => setup,
                Route::Supervised { .. } => anyhow::bail!(
                    "{}: {} is not a provider of panewise's own loop",
                    self.from.log.display(),
                    self.provider.as_str()
                ),
            };
        let request = LaunchRequest {
            model: given.model.or(self.model),
            cwd,
            approval,
            window,
            max_iterations: given.max_iterations.or(self.settings.max_iterations),
            log: given.log,
            prompts: given.prompts,
            deadlines: given.deadlines,
            resume: Some(self.from),
            name: given.name.or(self.name),
        };
        Ok((setup, request))
    }

    /// What the person is told as the session resumes.
    pub fn notice(&self) -> String {
        let rebuilt = &self.from.rebuilt;
        let mut notice = format!(
            "resuming {} ({} message(s) from {} log(s), {} prompt(s))",
            self.from.log.display(),
            rebuilt.messages.len(),
            self.logs,
            panewise_host::agent_loop::resume::prompts(rebuilt),
        );
        if rebuilt.closed_calls > 0 {
            notice.push_str(&format!(
                "; {} call(s) left without a result are resumed as interrupted",
                rebuilt.closed_calls
            ));
        }
        if rebuilt.dropped_calls > 0 {
            notice.push_str(&format!(
                "; {} call(s) of an answer cut off mid-stream are left out",
                rebuilt.dropped_calls
            ));
        }
        if rebuilt.cut_outputs > 0 {
            notice.push_str(&format!(
                "; {} tool output(s) the log had cut are resumed with a marker of the cut",
                rebuilt.cut_outputs
            ));
        }
        notice
    }

    /// The recorded mock scenario, for a mock session that ran against panewise's own mock.
    pub fn mock_scenario(&self) -> anyhow::Result<Option<panewise_mock_server::Scenario>> {
        match &self.settings.mock_scenario {
            Some(name) => Ok(Some(name.parse().map_err(|_| {
                anyhow::anyhow!(
                    "{}: recorded mock scenario {name:?} is not one this build knows",
                    self.from.log.display()
                )
            })?)),
            None => Ok(None),
        }
    }
}
