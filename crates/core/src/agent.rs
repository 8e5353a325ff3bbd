//! Which agent: the one closed vocabulary every decision and view maps from.
//!
//! A session runs one [`ProviderName`] — panewise's own loop over a model API (`mock`,
//! `anthropic`, `openai`, `gemini`) or a supervised agent (`claude-code`, `codex`,
//! `gemini-cli`, any `acp` agent) — and a supervised one is driven one [`Drive`]: the agent and
//! the channel it is read on (`codex` over `app-server` or `exec`). Each has one row in one
//! table, written as an exhaustive `match` with no wildcard arm ([`ProviderName::row`],
//! [`Drive::row`]): what the name is, which API or decoder it needs, whose keys it keeps,
//! whether it can ask. Everything else — the channels of the host's backends, the decoders'
//! [`Provider`], the key owners, a recorded log's provider — is read from these rows, so a new
//! agent is one row and the compiler points at every place that must learn it.
//!
//! Pure: names in, rows out.

use panewise_pane_state::log::LogHeader;
use panewise_providers::keys::KeyOwner;
use panewise_providers::{ApiKind, Provider};

/// A provider a configuration may choose: a model API panewise calls itself, or an agent CLI
/// it supervises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderName {
    /// The scripted mock server (`panewise mock-server`).
    Mock,
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI API.
    Openai,
    /// The Gemini API.
    Gemini,
    /// The Claude Code CLI.
    ClaudeCode,
    /// The Codex CLI.
    Codex,
    /// The Gemini CLI.
    GeminiCli,
    /// Any agent that speaks the Agent Client Protocol on stdio (`run --agent-cmd`; by
    /// default `gemini --acp`).
    Acp,
}

/// What a provider runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// panewise's own loop, calling this API (the mock serves the Anthropic Messages API).
    OwnLoop(ApiKind),
    /// A supervised agent, driven this way unless `--channel` names another of its drives.
    Agent(Drive),
}

/// One provider's row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderRow {
    /// The name as written in `panewise.toml`, on the command line and in every view.
    pub name: &'static str,
    /// What it runs.
    pub runs: Runs,
    /// Whose key variables it keeps (the others are kept from it, [`crate::secrets`]).
    pub keys: KeyOwner,
}

impl ProviderName {
    /// Every provider, in the order error messages list them.
    pub const ALL: [ProviderName; 8] = [
        ProviderName::Mock,
        ProviderName::Anthropic,
        ProviderName::Openai,
        ProviderName::Gemini,
        ProviderName::ClaudeCode,
        ProviderName::Codex,
        ProviderName::GeminiCli,
        ProviderName::Acp,
    ];

    /// The provider's row: the one table, exhaustive.
    pub const fn row(self) -> ProviderRow {
        let (name, runs, keys) = match self {
            ProviderName::Mock => ("mock", Runs::OwnLoop(ApiKind::Anthropic), KeyOwner::Nobody),
            ProviderName::Anthropic => (
                "anthropic",
                Runs::OwnLoop(ApiKind::Anthropic),
                KeyOwner::Anthropic,
            ),
            ProviderName::Openai => ("openai", Runs::OwnLoop(ApiKind::OpenAi), KeyOwner::OpenAi),
            ProviderName::Gemini => ("gemini", Runs::OwnLoop(ApiKind::Gemini), KeyOwner::Google),
            ProviderName::ClaudeCode => (
                "claude-code",
                Runs::Agent(Drive::ClaudeStreamJson),
                KeyOwner::Anthropic,
            ),
            ProviderName::Codex => (
                "codex",
                Runs::Agent(Drive::CodexAppServer),
                KeyOwner::OpenAi,
            ),
            ProviderName::GeminiCli => (
                "gemini-cli",
                Runs::Agent(Drive::GeminiAcp),
                KeyOwner::Google,
            ),
            // An ACP agent is taken to be Gemini CLI for its keys (`gemini --acp`, the one
            // panewise starts); another ACP agent gets its key through `pass_env`.
            ProviderName::Acp => ("acp", Runs::Agent(Drive::AcpAgent), KeyOwner::Google),
        };
        ProviderRow { name, runs, keys }
    }

    /// The name as written in the file and on the command line.
    pub const fn as_str(self) -> &'static str {
        self.row().name
    }

    /// Whether panewise supervises an agent CLI for this provider, rather than running its
    /// own loop over a model API.
    pub const fn is_supervised(self) -> bool {
        matches!(self.row().runs, Runs::Agent(_))
    }

    /// The API the own loop calls for this provider; `None` for a supervised agent.
    pub const fn api(self) -> Option<ApiKind> {
        match self.row().runs {
            Runs::OwnLoop(api) => Some(api),
            Runs::Agent(_) => None,
        }
    }

    /// Every valid name, comma-separated, the own loop's first, for error messages.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }

    /// The provider called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|provider| provider.as_str() == name)
    }

    /// The drives of a supervised provider, its default first.
    pub fn drives(self) -> Vec<Drive> {
        let mut drives: Vec<Drive> = Drive::ALL
            .into_iter()
            .filter(|drive| drive.row().provider == self)
            .collect();
        if let Runs::Agent(default) = self.row().runs {
            drives.sort_by_key(|drive| *drive != default);
        }
        drives
    }
}

/// A channel's name, as `run --channel` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelName {
    /// `--output-format stream-json`: Claude Code's control protocol, or Gemini CLI one turn
    /// per process.
    StreamJson,
    /// `codex app-server`: JSON-RPC, it asks.
    AppServer,
    /// `codex exec --json`: one turn per process, it cannot ask.
    Exec,
    /// The Agent Client Protocol: JSON-RPC, it asks.
    Acp,
}

impl ChannelName {
    /// Every channel name.
    pub const ALL: [ChannelName; 4] = [
        ChannelName::StreamJson,
        ChannelName::AppServer,
        ChannelName::Exec,
        ChannelName::Acp,
    ];

    /// The name on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChannelName::StreamJson => "stream-json",
            ChannelName::AppServer => "app-server",
            ChannelName::Exec => "exec",
            ChannelName::Acp => "acp",
        }
    }

    /// The channel called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|channel| channel.as_str() == name)
    }
}

/// How a supervised agent is driven: every (agent, channel) pair panewise runs. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Drive {
    /// Claude Code over its control protocol (stream-json both ways).
    ClaudeStreamJson,
    /// `codex app-server`.
    CodexAppServer,
    /// `codex exec --json`, one process per turn.
    CodexExec,
    /// `gemini --acp`.
    GeminiAcp,
    /// `gemini -p … --output-format stream-json`, one process per turn.
    GeminiStreamJson,
    /// Any ACP agent, by command (`--agent-cmd`).
    AcpAgent,
}

/// One drive's row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriveRow {
    /// The agent.
    pub provider: ProviderName,
    /// The channel's name.
    pub channel: ChannelName,
    /// The decoder that reads it, whose name a log's `agent_id` records.
    pub decoder: Provider,
    /// Whether the agent can ask the host before a tool runs (a one-shot process cannot: its
    /// access is decided up front by its own flags).
    pub asks: bool,
    /// The npm package that installs the agent, when one does.
    pub npm_package: Option<&'static str>,
}

impl Drive {
    /// Every drive.
    pub const ALL: [Drive; 6] = [
        Drive::ClaudeStreamJson,
        Drive::CodexAppServer,
        Drive::CodexExec,
        Drive::GeminiAcp,
        Drive::GeminiStreamJson,
        Drive::AcpAgent,
    ];

    /// The drive's row: the one table, exhaustive.
    pub const fn row(self) -> DriveRow {
        let (provider, channel, decoder, asks, npm_package) = match self {
            Drive::ClaudeStreamJson => (
                ProviderName::ClaudeCode,
                ChannelName::StreamJson,
                Provider::ClaudeCode,
                true,
                Some("@anthropic-ai/claude-code"),
            ),
            Drive::CodexAppServer => (
                ProviderName::Codex,
                ChannelName::AppServer,
                Provider::CodexAppServer,
                true,
                Some("@openai/codex"),
            ),
            Drive::CodexExec => (
                ProviderName::Codex,
                ChannelName::Exec,
                Provider::Codex,
                false,
                Some("@openai/codex"),
            ),
            Drive::GeminiAcp => (
                ProviderName::GeminiCli,
                ChannelName::Acp,
                Provider::Acp,
                true,
                Some("@google/gemini-cli"),
            ),
            Drive::GeminiStreamJson => (
                ProviderName::GeminiCli,
                ChannelName::StreamJson,
                Provider::GeminiCli,
                false,
                Some("@google/gemini-cli"),
            ),
            Drive::AcpAgent => (
                ProviderName::Acp,
                ChannelName::Acp,
                Provider::Acp,
                true,
                None,
            ),
        };
        DriveRow {
            provider,
            channel,
            decoder,
            asks,
            npm_package,
        }
    }

    /// `provider` driven over `channel` (`None`: its default), or the names of its channels
    /// when it has no such one. `None` for a provider of the own loop.
    pub fn of(
        provider: ProviderName,
        channel: Option<ChannelName>,
    ) -> Option<Result<Drive, String>> {
        let drives = provider.drives();
        let default = *drives.first()?;
        Some(match channel {
            None => Ok(default),
            Some(channel) => drives
                .iter()
                .copied()
                .find(|drive| drive.row().channel == channel)
                .ok_or_else(|| {
                    drives
                        .iter()
                        .enumerate()
                        .map(|(at, drive)| match at {
                            0 if drives.len() > 1 => {
                                format!("{} (default)", drive.row().channel.as_str())
                            }
                            _ => drive.row().channel.as_str().to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join(" or ")
                }),
        })
    }

    /// The drive that continues a session a log recorded: the provider the log names (as the
    /// person named it) on the channel its decoder reads; a log that names no provider (written
    /// before it was kept) continues with the first agent the decoder reads (an ACP log with
    /// Gemini CLI, as `--provider acp` without `--agent-cmd` does).
    pub fn recorded(decoder: Provider, named: Option<ProviderName>) -> Option<Drive> {
        let reads = |drive: &Drive| drive.row().decoder == decoder;
        named
            .and_then(|named| named.drives().into_iter().find(|drive| reads(drive)))
            .or_else(|| Drive::ALL.into_iter().find(|drive| reads(drive)))
    }
}

/// The provider a log's session ran, as every view names it (`replay`, `sessions`, the
/// daemon's list): as the person named it, which the header keeps; for a log written before it
/// was kept, the agent its stream's decoder reads first (a `codex-app-server` log is Codex's,
/// an `acp` one Gemini CLI's, as a resume of it runs); else the stream's name as written.
pub fn provider_of(header: &LogHeader) -> String {
    if let Some(named) = &header.provider {
        return named.clone();
    }
    header
        .agent_id
        .parse::<Provider>()
        .ok()
        .and_then(|decoder| Drive::recorded(decoder, None))
        .map_or_else(
            || header.agent_id.clone(),
            |drive| drive.row().provider.as_str().to_owned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supervised_provider_has_its_default_drive_and_every_decoder_a_drive() {
        for provider in ProviderName::ALL {
            let drives = provider.drives();
            match provider.row().runs {
                Runs::Agent(default) => {
                    assert_eq!(drives.first(), Some(&default), "{provider:?}");
                    assert_eq!(default.row().provider, provider, "{provider:?}");
                }
                Runs::OwnLoop(_) => assert!(drives.is_empty(), "{provider:?}"),
            }
            assert_eq!(ProviderName::from_name(provider.as_str()), Some(provider));
        }
        for decoder in Provider::ALL {
            assert!(
                Drive::ALL
                    .iter()
                    .any(|drive| drive.row().decoder == decoder),
                "{decoder:?} has no drive"
            );
        }
        for channel in ChannelName::ALL {
            assert_eq!(ChannelName::from_name(channel.as_str()), Some(channel));
        }
    }

    #[test]
    fn a_channel_is_one_of_the_provider_s_or_refused_naming_them() {
        use ChannelName::*;
        use ProviderName::*;
        // (provider, channel asked, the drive or the channels named)
        type Case = (
            ProviderName,
            Option<ChannelName>,
            Option<Result<Drive, &'static str>>,
        );
        let cases: [Case; 10] = [
            (ClaudeCode, None, Some(Ok(Drive::ClaudeStreamJson))),
            (
                ClaudeCode,
                Some(StreamJson),
                Some(Ok(Drive::ClaudeStreamJson)),
            ),
            (ClaudeCode, Some(Exec), Some(Err("stream-json"))),
            (Codex, None, Some(Ok(Drive::CodexAppServer))),
            (Codex, Some(Exec), Some(Ok(Drive::CodexExec))),
            (
                Codex,
                Some(ChannelName::Acp),
                Some(Err("app-server (default) or exec")),
            ),
            (
                GeminiCli,
                Some(StreamJson),
                Some(Ok(Drive::GeminiStreamJson)),
            ),
            (
                GeminiCli,
                Some(AppServer),
                Some(Err("acp (default) or stream-json")),
            ),
            (ProviderName::Acp, None, Some(Ok(Drive::AcpAgent))),
            (Mock, None, None),
        ];
        for (provider, channel, expected) in cases {
            let found = Drive::of(provider, channel);
            let found = found
                .as_ref()
                .map(|r| r.as_ref().map_err(String::as_str).copied());
            assert_eq!(found, expected, "{provider:?} {channel:?}");
        }
    }

    #[test]
    fn a_recorded_log_continues_with_the_agent_it_names_on_the_channel_it_was_read_on() {
        use ProviderName::*;
        let cases: [(Provider, Option<ProviderName>, Option<Drive>); 8] = [
            (
                Provider::ClaudeCode,
                Some(ClaudeCode),
                Some(Drive::ClaudeStreamJson),
            ),
            (
                Provider::CodexAppServer,
                Some(Codex),
                Some(Drive::CodexAppServer),
            ),
            (Provider::Codex, Some(Codex), Some(Drive::CodexExec)),
            (Provider::Acp, Some(GeminiCli), Some(Drive::GeminiAcp)),
            (Provider::Acp, Some(Acp), Some(Drive::AcpAgent)),
            (Provider::GeminiCli, None, Some(Drive::GeminiStreamJson)),
            // A log written before the provider was kept: the first agent the decoder reads.
            (Provider::Acp, None, Some(Drive::GeminiAcp)),
            // A name that does not read this decoder is not believed.
            (
                Provider::CodexAppServer,
                Some(ClaudeCode),
                Some(Drive::CodexAppServer),
            ),
        ];
        for (decoder, named, expected) in cases {
            assert_eq!(
                Drive::recorded(decoder, named),
                expected,
                "{decoder:?} {named:?}"
            );
        }
    }

    #[test]
    fn a_log_s_provider_is_the_name_it_was_given_else_its_stream_s_agent() {
        let header = |agent_id: &str, provider: Option<&str>| LogHeader {
            agent_id: agent_id.to_owned(),
            provider: provider.map(str::to_owned),
            ..LogHeader::default()
        };
        let cases = [
            (header("codex-app-server", Some("codex")), "codex"),
            (header("acp", Some("acp")), "acp"),
            (header("acp", Some("gemini-cli")), "gemini-cli"),
            (header("mock", Some("mock")), "mock"),
            (header("codex-app-server", None), "codex"),
            (header("acp", None), "gemini-cli"),
            (header("claude-code", None), "claude-code"),
            (header("replay", None), "replay"),
        ];
        for (header, expected) in cases {
            assert_eq!(provider_of(&header), expected, "{header:?}");
        }
    }
}
