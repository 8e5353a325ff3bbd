//! What to answer, decided from the scenario and facts read from the request alone, in
//! provider-neutral terms; the API modules turn a [`Reply`] into frames.

use serde_json::{json, Value};

use crate::cache::CacheSplit;
use crate::config::Scenario;

/// The text a `huge-input` answer carries once the tool ran; a later request that contains it
/// is a continuation after the client compacted, and is answered with text (no new tool call).
pub const COMPACTION_MARKER: &str = "PANEWISE-MOCK-SUMMARY";

/// The file the `file-write` scenario writes.
pub const WRITTEN_FILE: &str = "hello.txt";

/// The content the `file-write` scenario writes.
pub const WRITTEN_CONTENT: &str = "hello from the panewise mock\n";

/// The rounds of the `multi-round` scenario before its text answer.
pub const MULTI_ROUNDS: usize = 3;

/// The rounds of the `long-session` scenario before its text answer.
pub const LONG_SESSION_ROUNDS: usize = 40;

/// The command each round of `long-session` runs (after `echo round N;`): it prints 292
/// bytes, so every round adds a few hundred bytes to the prompt.
pub const LONG_SESSION_COMMAND: &str = "seq -s ' ' 1 100";

/// The command of the `sleeping-tool` scenario: `sh` forks the sleep (it is not the last
/// command), so the tool's process group holds a grandchild.
pub const SLEEPING_COMMAND: &str = "sleep 30; echo done";

/// The command of the `detaching-tool` scenario: a sleep that leaves the tool's process group
/// and session (its parent exits at once), then `detached` once it has left (it writes its pid
/// to `.detached.pid` after `setsid`), so the tool's cleanup finds it outside the group.
pub const DETACHING_COMMAND: &str = "setsid -f sh -c 'echo $$ > .detached.pid; exec sleep 30'; \
until [ -s .detached.pid ]; do sleep 0.01; done; echo detached";

/// The command of the `spoofed-command` scenario. On a terminal that interprets escapes, the
/// carriage return and `ESC [2K` erase `touch spoofed #`, so it would read `echo hello`; shown
/// escaped, the `touch` is plain to see. (It creates `spoofed` in the working directory.)
pub const SPOOFED_COMMAND: &str = "touch spoofed #\r\u{1b}[2Kecho hello";

/// What the server learned from one request body.
#[derive(Debug, Clone, Default)]
pub struct RequestFacts {
    /// The names of the tools the client offered.
    pub tools: Vec<String>,
    /// How many tool-result rounds the conversation carries (a round = one reply with results).
    pub tool_rounds: usize,
    /// Whether the body contains [`COMPACTION_MARKER`].
    pub after_compaction: bool,
    /// The working directory the client told the model about, when it did.
    pub cwd: Option<String>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The tool's name, as the client offered it.
    pub name: String,
    /// The arguments, a JSON object.
    pub args: Value,
}

/// A successful answer: optional thinking, optional text, and tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// Reasoning shown as thinking / a reasoning summary / thought parts.
    pub thinking: Option<String>,
    /// The visible text.
    pub text: String,
    /// Tool calls, in order; empty for a final answer.
    pub calls: Vec<ToolCall>,
    /// Whether this answer reports the huge input.
    pub huge_input: bool,
    /// What the server's prompt cache read and wrote of the request, for the usage figures.
    pub cache: CacheSplit,
}

/// The failing HTTP answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 429 with `retry-after: 1`.
    RateLimit,
    /// 500.
    ServerError,
    /// 529 (Anthropic) or 503.
    Overloaded,
}

/// How one request is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A 200 answer, streamed or not as the request asked.
    Answer(Answer),
    /// An HTTP error status with the provider's body.
    Error(ErrorKind),
    /// A 200 stream of the answer's first frames, then the provider's error event.
    MidStreamError(Answer),
    /// A 200 stream of the answer's first frames, then the connection closes.
    StreamCut(Answer),
}

impl Reply {
    /// The reply with the request's cache figures in its answer (an error has none).
    pub fn with_cache(mut self, cache: CacheSplit) -> Reply {
        match &mut self {
            Reply::Answer(answer) | Reply::MidStreamError(answer) | Reply::StreamCut(answer) => {
                answer.cache = cache;
            }
            Reply::Error(_) => {}
        }
        self
    }

    /// Whether the request is answered (so it reaches the prompt cache), not refused.
    pub fn is_answered(&self) -> bool {
        !matches!(self, Reply::Error(_))
    }
}

impl Answer {
    /// The bytes of visible output (text and call arguments), for the usage figures.
    pub fn generated_bytes(&self) -> usize {
        let args: usize = self
            .calls
            .iter()
            .map(|c| c.name.len().saturating_add(c.args.to_string().len()))
            .sum();
        self.text.len().saturating_add(args)
    }

    /// The bytes of thinking, for the usage figures.
    pub fn thinking_bytes(&self) -> usize {
        self.thinking.as_ref().map_or(0, String::len)
    }
}

/// The reply to a request in `scenario` with the given facts; for `rate-limit-once` the reply
/// to a body the server has refused before (the server refuses a body seen first).
pub fn plan(scenario: Scenario, facts: &RequestFacts) -> Reply {
    match scenario {
        Scenario::RateLimit => Reply::Error(ErrorKind::RateLimit),
        Scenario::ServerError => Reply::Error(ErrorKind::ServerError),
        Scenario::Overloaded => Reply::Error(ErrorKind::Overloaded),
        Scenario::MidStreamError => Reply::MidStreamError(script(scenario, facts)),
        Scenario::StreamCut => Reply::StreamCut(script(scenario, facts)),
        _ => Reply::Answer(script(scenario, facts)),
    }
}

fn script(scenario: Scenario, facts: &RequestFacts) -> Answer {
    let rounds = facts.tool_rounds;
    let shell = |command: &str, description: &str| shell_call(&facts.tools, command, description);
    let calls: Option<Vec<ToolCall>> = match scenario {
        Scenario::MultiRound if rounds < MULTI_ROUNDS => {
            let command = format!("echo round {}", rounds.saturating_add(1));
            shell(&command, "Print the round").map(|c| vec![c])
        }
        Scenario::LongSession if rounds < LONG_SESSION_ROUNDS => {
            let command = format!(
                "echo round {}; {LONG_SESSION_COMMAND}",
                rounds.saturating_add(1)
            );
            shell(&command, "Print the round and a line of numbers").map(|c| vec![c])
        }
        Scenario::ParallelCalls if rounds == 0 => {
            match (
                shell("echo one", "Print one"),
                shell("echo two", "Print two"),
            ) {
                (Some(first), Some(second)) => Some(vec![first, second]),
                _ => None,
            }
        }
        Scenario::FileWrite if rounds == 0 => {
            write_call(&facts.tools, facts.cwd.as_deref()).map(|c| vec![c])
        }
        Scenario::SlowTool if rounds == 0 => {
            shell("timeout 30 tail -f /dev/null", "Wait half a minute").map(|c| vec![c])
        }
        Scenario::SleepingTool if rounds == 0 => {
            shell(SLEEPING_COMMAND, "Sleep half a minute").map(|c| vec![c])
        }
        Scenario::DetachingTool if rounds == 0 => {
            shell(DETACHING_COMMAND, "Start a detached sleep").map(|c| vec![c])
        }
        Scenario::SpoofedCommand if rounds == 0 => {
            shell(crate::SPOOFED_COMMAND, "Print hello").map(|c| vec![c])
        }
        Scenario::FailingTool if rounds == 0 => {
            shell("echo failing >&2; exit 3", "Run a failing command").map(|c| vec![c])
        }
        Scenario::HugeInput if rounds == 0 && !facts.after_compaction => {
            shell("echo hello", "Print hello").map(|c| vec![c])
        }
        Scenario::ToolThenAnswer
        | Scenario::RateLimitOnce
        | Scenario::MidStreamError
        | Scenario::StreamCut
            if rounds == 0 =>
        {
            shell("echo hello", "Print hello").map(|c| vec![c])
        }
        _ => Some(Vec::new()),
    };
    match calls {
        None => Answer {
            text: "No tool I know how to call was offered, so I answer directly.".to_owned(),
            ..Answer::default()
        },
        Some(calls) if calls.is_empty() => Answer {
            text: final_text(scenario).to_owned(),
            ..Answer::default()
        },
        Some(calls) => {
            let first = calls.first().map_or("", |c| c.name.as_str());
            Answer {
                thinking: Some(format!(
                    "The user wants this done; I'll use the {first} tool."
                )),
                text: "I'll run the command.".to_owned(),
                huge_input: scenario == Scenario::HugeInput,
                calls,
                cache: CacheSplit::default(),
            }
        }
    }
}

fn final_text(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::MultiRound => "All three rounds printed their number. Done.",
        Scenario::LongSession => "All forty rounds printed their numbers. Done.",
        Scenario::ParallelCalls => "The commands printed `one` and `two`. Done.",
        Scenario::FileWrite => "I wrote hello.txt. Done.",
        Scenario::FailingTool => "The command failed with exit status 3.",
        Scenario::SlowTool | Scenario::SleepingTool => "The wait is over. Done.",
        Scenario::DetachingTool => "The sleep was started. Done.",
        Scenario::SpoofedCommand => "The command ran. Done.",
        Scenario::HugeInput => {
            "<summary>PANEWISE-MOCK-SUMMARY: the user asked to run `echo hello`; it printed hello.</summary>"
        }
        _ => "The command printed `hello`. Done.",
    }
}

/// A call of the client's shell tool, by the names the three CLIs use, or a generic `shell`.
fn shell_call(tools: &[String], command: &str, description: &str) -> Option<ToolCall> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    let (name, args) = if offered("Bash") {
        (
            "Bash",
            json!({"command": command, "description": description}),
        )
    } else if offered("exec_command") {
        ("exec_command", json!({"cmd": command}))
    } else if offered("run_shell_command") {
        (
            "run_shell_command",
            json!({"command": command, "description": description}),
        )
    } else if offered("shell") {
        ("shell", json!({"command": command}))
    } else if offered("bash") {
        ("bash", json!({"command": command}))
    } else {
        return None;
    };
    Some(ToolCall {
        name: name.to_owned(),
        args,
    })
}

/// A call of the client's file-writing tool, or a shell command that writes the file. Claude's
/// `Write` takes absolute paths only, so without a stated directory the shell writes instead.
fn write_call(tools: &[String], cwd: Option<&str>) -> Option<ToolCall> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    let absolute = cwd.map(|dir| format!("{}/{WRITTEN_FILE}", dir.trim_end_matches('/')));
    let target = match (offered("Write"), offered("write_file"), absolute) {
        (true, _, Some(path)) => Some(("Write", path)),
        (_, true, path) => Some((
            "write_file",
            path.unwrap_or_else(|| WRITTEN_FILE.to_owned()),
        )),
        _ => None,
    };
    if let Some((name, path)) = target {
        return Some(ToolCall {
            name: name.to_owned(),
            args: json!({"file_path": path, "content": WRITTEN_CONTENT}),
        });
    }
    let command = format!("printf 'hello from the panewise mock\\n' > {WRITTEN_FILE}");
    shell_call(tools, &command, "Write hello.txt")
}

/// The working directory a client states in its prompt (`Primary working directory: /x`,
/// `Working directory: /x`, `<cwd>/x</cwd>`), read from the raw JSON text of the body: the
/// first such statement whose value is an absolute path.
pub fn stated_cwd(raw_body: &str) -> Option<String> {
    const STATEMENTS: [(&str, &[char]); 3] = [
        ("Primary working directory: ", &['\\', '"']),
        ("Working directory: ", &['\\', '"']),
        ("<cwd>", &['<', '\\', '"']),
    ];
    STATEMENTS.iter().find_map(|(opening, stops)| {
        raw_body.match_indices(opening).find_map(|(start, _)| {
            let rest = raw_body.get(start.saturating_add(opening.len())..)?;
            let end = rest.find(*stops).unwrap_or(rest.len());
            let dir = rest.get(..end)?.trim();
            dir.starts_with('/').then(|| dir.to_owned())
        })
    })
}
