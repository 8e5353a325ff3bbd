//! What a server is started with: the port, the default scenario and the optional JSONL log.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::MockError;

/// The header that overrides the server's scenario for one request.
pub const SCENARIO_HEADER: &str = "x-mock-scenario";

/// How a server is started. The bind address is always 127.0.0.1; only the port varies.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// The loopback port; 0 asks the system for an ephemeral one (see [`crate::RunningServer::addr`]).
    pub port: u16,
    /// The scenario for requests that carry no [`SCENARIO_HEADER`].
    pub scenario: Scenario,
    /// Where every request is also appended as one JSON line, flushed per line.
    pub log_file: Option<PathBuf>,
}

/// A scripted behaviour. Each answer is chosen from the request alone (how many tool rounds it
/// carries since the user's last prompt), never from a counter kept between requests; the one
/// exception is `rate-limit-once`, which remembers the bodies it refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// A call of the client's shell tool (`echo hello`), then, once its result is sent, a text answer.
    #[default]
    ToolThenAnswer,
    /// Three rounds of one shell call each, then a text answer.
    MultiRound,
    /// Two shell calls in one answer, then a text answer.
    ParallelCalls,
    /// [`crate::FIVE_APPROVALS`] shell calls in one answer (`echo approval 1` … `echo approval
    /// 5`), then a text answer: under `--approval ask`, five approvals queued in one session,
    /// asked one after another, each of which must reach whoever answers.
    FiveApprovals,
    /// A call of the client's file-writing tool (or a shell command writing `hello.txt`), then text.
    FileWrite,
    /// A shell call of a command that exits with status 3, then a text answer.
    FailingTool,
    /// HTTP 429 with `retry-after: 1` and the provider's rate-limit body.
    RateLimit,
    /// HTTP 429 as `rate-limit` the first time the server sees a request body, then the
    /// `tool-then-answer` reply when the same body is sent again: a retry that succeeds. The
    /// one scenario that remembers something between requests (the bodies it refused).
    RateLimitOnce,
    /// HTTP 500 with the provider's internal-error body.
    ServerError,
    /// HTTP 529 (Anthropic) or 503 (OpenAI, Gemini) with the provider's overloaded body.
    Overloaded,
    /// A 200 stream that sends the provider's error event after its first frames.
    MidStreamError,
    /// A 200 stream whose connection is closed after its first frames, without the final chunk.
    StreamCut,
    /// Like `tool-then-answer`, but the tool call reports 190,000 input tokens.
    HugeInput,
    /// A shell call of `timeout 30 tail -f /dev/null`, then a text answer: a turn that runs long enough to be
    /// interrupted while its tool runs.
    SlowTool,
    /// A shell call of `sleep 30; echo done` (the shell forks the sleep, a grandchild in the
    /// tool's process group), then a text answer: a turn during which panewise can be signalled.
    SleepingTool,
    /// A shell call that starts `sleep 30` with `setsid -f` and prints `detached` once it left
    /// the tool's process group and session ([`crate::DETACHING_COMMAND`]), then a text answer:
    /// what a tool's cleanup must still find.
    DetachingTool,
    /// A shell call whose command hides itself from a terminal that interprets escapes:
    /// [`crate::SPOOFED_COMMAND`], `touch spoofed #` then a carriage return and an erase-line
    /// sequence before `echo hello`; then a text answer. What an approval question must show
    /// escaped.
    SpoofedCommand,
    /// [`crate::LONG_SESSION_ROUNDS`] rounds of one shell call each, each printing a few
    /// hundred bytes ([`crate::LONG_SESSION_COMMAND`]), then a text answer: a session whose
    /// prompt grows call by call, for the prompt cache.
    LongSession,
    /// [`crate::RECALL_ROUNDS`] rounds of one shell call each, each printing a distinctive
    /// line and some 750 bytes of numbers ([`crate::recall_command`]); then, once the request
    /// carries a drop notice, masking placeholder or summary frame naming an archived span
    /// (`sp-` and 12 hex digits) and offers a `recall` tool, a `recall` call of that span by
    /// its id; once the recall's result is in the request, a text answer saying whether the
    /// recalled bytes begin with exactly what that round printed (`RECALL-MATCH`) or not
    /// (`RECALL-MISMATCH`), or `RECALL-NOTHING` when no span was named or no `recall`
    /// offered. For a window that lets earlier results go, e.g. observation-masking with
    /// `keepRecentObservations` 1.
    Recall,
    /// A shell call of [`crate::SANDBOX_COMMAND`]: a write outside the working directory
    /// (`touch ../outside`), one inside (`ok.txt`), and a TCP connection to the loopback port
    /// written in `port.txt` (printing `CONNECTED` or `NOT-CONNECTED`); then a text answer.
    /// What the shell tool's sandbox must confine.
    SandboxProbe,
    /// Three rounds, each a way a model could read the client's API key from its process's
    /// environment ([`crate::KEY_PROBES`]): a file read of `/proc/self/environ`, a shell call
    /// of `cat /proc/$PPID/environ`, a shell call of `env`; then a text answer. What the file
    /// tools' refusals and the shell's environment must hold.
    KeyProbe,
    /// Calls of MCP tools as panewise's own loop offers them (`mcp__SERVER__TOOL`): first a
    /// tool named `…__list_allowed_directories` (the filesystem server's), then one named
    /// `…__echo` (the everything server's) with the message [`crate::MCP_ECHO_MESSAGE`]; a
    /// tool not offered while `mcp_tool_search` is, is searched for by its name first (once),
    /// then called when the next request offers it. Then a text answer naming what came back
    /// (`MCP-DONE`, or `MCP-MISSING: …` for a tool neither offered nor found).
    McpTools,
    /// A question to the person through the client's asking tool (panewise's `ask_user`,
    /// offering [`crate::ASK_CHOICES`], or Claude Code's `AskUserQuestion`); once the answer's
    /// tool result is in the request, a text answer quoting it after
    /// [`crate::ASK_ANSWER_TEXT`] (`ASK-USER-UNANSWERED` when the result carries none).
    AskUser,
    /// Hands a task to another agent through `panewise mcp serve`'s tools, as an MCP client
    /// offers them (`mcp__panewise__start`, then `…wait` until idle, then `…transcript`);
    /// then a text answer saying whether the transcript holds the delegated mock agent's
    /// answer (`DELEGATE-READ`, else `DELEGATE-MISSING`).
    Delegate,
}

impl Scenario {
    /// Every scenario, in documentation order.
    pub const ALL: [Scenario; 24] = [
        Scenario::ToolThenAnswer,
        Scenario::MultiRound,
        Scenario::ParallelCalls,
        Scenario::FiveApprovals,
        Scenario::FileWrite,
        Scenario::FailingTool,
        Scenario::RateLimit,
        Scenario::RateLimitOnce,
        Scenario::ServerError,
        Scenario::Overloaded,
        Scenario::MidStreamError,
        Scenario::StreamCut,
        Scenario::HugeInput,
        Scenario::SlowTool,
        Scenario::SleepingTool,
        Scenario::DetachingTool,
        Scenario::SpoofedCommand,
        Scenario::LongSession,
        Scenario::Recall,
        Scenario::SandboxProbe,
        Scenario::KeyProbe,
        Scenario::McpTools,
        Scenario::AskUser,
        Scenario::Delegate,
    ];

    /// The name used by `--scenario` and the [`SCENARIO_HEADER`].
    pub fn name(self) -> &'static str {
        match self {
            Scenario::ToolThenAnswer => "tool-then-answer",
            Scenario::MultiRound => "multi-round",
            Scenario::ParallelCalls => "parallel-calls",
            Scenario::FiveApprovals => "five-approvals",
            Scenario::FileWrite => "file-write",
            Scenario::FailingTool => "failing-tool",
            Scenario::RateLimit => "rate-limit",
            Scenario::RateLimitOnce => "rate-limit-once",
            Scenario::ServerError => "server-error",
            Scenario::Overloaded => "overloaded",
            Scenario::MidStreamError => "mid-stream-error",
            Scenario::StreamCut => "stream-cut",
            Scenario::HugeInput => "huge-input",
            Scenario::SlowTool => "slow-tool",
            Scenario::SleepingTool => "sleeping-tool",
            Scenario::DetachingTool => "detaching-tool",
            Scenario::SpoofedCommand => "spoofed-command",
            Scenario::LongSession => "long-session",
            Scenario::Recall => "recall",
            Scenario::SandboxProbe => "sandbox-probe",
            Scenario::KeyProbe => "key-probe",
            Scenario::McpTools => "mcp-tools",
            Scenario::AskUser => "ask-user",
            Scenario::Delegate => "delegate",
        }
    }

    /// Every scenario name, for help texts and error messages.
    pub fn names() -> Vec<&'static str> {
        Scenario::ALL.iter().map(|s| s.name()).collect()
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = MockError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let wanted = name.trim();
        Scenario::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| MockError::UnknownScenario(name.to_owned()))
    }
}
