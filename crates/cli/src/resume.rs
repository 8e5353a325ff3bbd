//! Resuming a session of panewise's own loop (`run --resume`, `resume`, `session/resume`): the
//! recorded log's header says how the session ran (provider, model, working directory, and
//! the own loop's approval mode, window strategy, iteration limit and mock scenario), and its
//! transcript, with the transcripts of the sessions it continued (`resumed_from`), rebuilds
//! the conversation (`panewise_host::agent_loop::resume::rebuild`). A supervised agent's
//! session resumes by the agent's own id instead ([`read_agent_session`]). Either is read into
//! a [`Recorded`], which `panewise_host::launch::resolve` continues.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use panewise_host::agent_loop::resume::{rebuild, Rebuilt};
use panewise_host::config::ProviderName;
use panewise_host::launch::{Recorded, RecordedKind};
use panewise_pane_state::log::{LogHeader, OwnLoopHeader, TranscriptEntry};
use panewise_providers::Provider;

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

/// The recorded session `given` names (an id or a log's path), read to be continued, and
/// what the person is told as it resumes (for a session of the own loop).
pub fn recorded(given: &Path) -> anyhow::Result<(Recorded, Option<String>)> {
    if let Some(own) = own_session(given)? {
        let notice = own.notice();
        return Ok((own.into_recorded(), Some(notice)));
    }
    Ok((read_agent_session(given)?, None))
}

/// A supervised agent's recorded session: its provider, model, directory and the agent's own
/// resume id.
pub fn read_agent_session(given: &Path) -> anyhow::Result<Recorded> {
    let log = crate::input::session(given)?;
    let bytes = panewise_host::regular_file::read_log(&log)?;
    let parsed = panewise_pane_state::parse_log_bytes(&bytes)
        .with_context(|| format!("{} is not a session log", log.display()))?;
    let header = parsed
        .header
        .with_context(|| format!("{} has no header", log.display()))?;
    let provider: Provider = header.agent_id.parse().map_err(|_| {
        anyhow::anyhow!(
            "{} was recorded for `{}`, which panewise cannot continue",
            log.display(),
            header.agent_id
        )
    })?;
    let agent_session_id = parsed
        .notes
        .iter()
        .rev()
        .find_map(|note| note.agent_session_id.clone())
        .with_context(|| {
            format!(
                "{} holds no session id of the agent to resume (the agent never reported one, \
                 or the log was written by `decode`)",
                log.display()
            )
        })?;
    let cwd = header.cwd.map(PathBuf::from);
    // The agent as the person named it: an ACP stream may be Gemini CLI's or another agent's.
    let named = header.provider.as_deref().and_then(ProviderName::from_name);
    Ok(Recorded {
        log,
        cwd_exists: cwd.as_deref().is_some_and(Path::is_dir),
        cwd,
        model: header.model,
        name: header.name,
        kind: RecordedKind::Supervised {
            provider,
            named,
            agent_session_id,
        },
    })
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
    let bytes = panewise_host::regular_file::read_log(log)?;
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
    /// The session as `resolve` continues it.
    pub fn into_recorded(self) -> Recorded {
        Recorded {
            log: self.from.log,
            cwd_exists: self.cwd.as_deref().is_some_and(Path::is_dir),
            cwd: self.cwd,
            model: self.model,
            name: self.name,
            kind: RecordedKind::OwnLoop {
                provider: self.provider,
                approval: self.settings.approval,
                window: self.settings.window,
                max_iterations: self.settings.max_iterations,
                mock_scenario: self.settings.mock_scenario,
                rebuilt: self.from.rebuilt,
            },
        }
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
}
