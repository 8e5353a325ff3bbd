//! What to answer, decided from the scenario and facts read from the request alone, in
//! provider-neutral terms; the API modules turn a [`Reply`] into frames.

use serde_json::{json, Value};

use crate::config::Scenario;
use crate::usage::CacheSplit;

/// The text a `huge-input` answer carries once the tool ran; a later request that contains it
/// is a continuation after the client compacted, and is answered with text (no new tool call).
pub const COMPACTION_MARKER: &str = "PANEWISE-MOCK-SUMMARY";

/// The file the `file-write` scenario writes.
pub const WRITTEN_FILE: &str = "hello.txt";

/// The content the `file-write` scenario writes.
pub const WRITTEN_CONTENT: &str = "hello from the panewise mock\n";

/// The rounds of the `multi-round` scenario before its text answer.
pub const MULTI_ROUNDS: usize = 3;

/// The shell calls the `five-approvals` scenario makes in its one tool answer.
pub const FIVE_APPROVALS: usize = 5;

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

/// The command of the `sandbox-probe` scenario: a write outside the working directory, one
/// inside it, and a connection to the loopback port written in `port.txt`.
pub const SANDBOX_COMMAND: &str = "touch ../outside; echo inside > ok.txt; \
bash -c 'echo > /dev/tcp/127.0.0.1/$(cat port.txt)' && echo CONNECTED || echo NOT-CONNECTED";

/// The ways the `key-probe` scenario reads its client's environment, one a round:
/// `read_file` of the path (`Read` for Claude Code's tools; where no file tool is offered, a
/// shell `cat` of it), then two shell commands.
pub const KEY_PROBES: [KeyProbe; 3] = [
    KeyProbe::ReadFile("/proc/self/environ"),
    KeyProbe::Shell("cat /proc/$PPID/environ"),
    KeyProbe::Shell("env"),
];

/// One round of the `key-probe` scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyProbe {
    /// A file tool's read of this path.
    ReadFile(&'static str),
    /// A shell call of this command.
    Shell(&'static str),
}

/// The command of the `spoofed-command` scenario. On a terminal that interprets escapes, the
/// carriage return and `ESC [2K` erase `touch spoofed #`, so it would read `echo hello`; shown
/// escaped, the `touch` is plain to see. (It creates `spoofed` in the working directory.)
pub const SPOOFED_COMMAND: &str = "touch spoofed #\r\u{1b}[2Kecho hello";

/// The question the `ask-user` scenario asks.
pub const ASK_QUESTION: &str = "Which colour should the button be?";

/// The options the `ask-user` scenario offers.
pub const ASK_CHOICES: [&str; 2] = ["red", "blue"];

/// How a tool result that carries the person's answer begins: panewise's `ask_user`, then
/// Claude Code's `AskUserQuestion` (the pinned 2.1.332's words, then older releases').
pub const ANSWER_OPENINGS: [&str; 3] = [
    "The person answered: ",
    "Your questions have been answered",
    "User has answered your question",
];

/// The opening of the `ask-user` scenario's final text; the answer's tool result follows.
pub const ASK_ANSWER_TEXT: &str = "ASK-USER-ANSWER: ";

/// The first string of the request that carries a person's answer ([`ANSWER_OPENINGS`]).
pub fn answer_fact(body: &Value) -> Option<String> {
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    strings
        .into_iter()
        .find(|text| {
            ANSWER_OPENINGS
                .iter()
                .any(|opening| text.starts_with(opening))
        })
        .map(str::to_owned)
}

/// The name of the agent the `delegate` scenario starts.
pub const DELEGATE_NAME: &str = "delegated";

/// What the delegated mock agent answers (the `tool-then-answer` scenario's final text).
pub const DELEGATED_ANSWER: &str = "The command printed `hello`. Done.";

/// Whether a request body holds [`DELEGATED_ANSWER`].
pub fn delegated_fact(body: &Value) -> bool {
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    strings.iter().any(|text| text.contains(DELEGATED_ANSWER))
}

/// The rounds of the `recall` scenario before it recalls.
pub const RECALL_ROUNDS: usize = 3;

/// The opening of the result of panewise's `recall` tool (the span id follows).
pub const RECALLED_PREFIX: &str = "[recalled span ";

/// The command round `round` (from 1) of the `recall` scenario runs.
pub fn recall_command(round: usize) -> String {
    let first = round.saturating_mul(1_000);
    format!(
        "echo recall-round-{round}; seq -s ' ' {first} {}",
        first.saturating_add(150)
    )
}

/// What round `round` of the `recall` scenario prints: its line, then the numbers.
pub fn recall_printed(round: usize) -> String {
    let first = round.saturating_mul(1_000);
    let numbers: Vec<String> = (first..=first.saturating_add(150))
        .map(|n| n.to_string())
        .collect();
    format!("recall-round-{round}\n{}\n", numbers.join(" "))
}

/// The first archived span id a stage note of the request names (in a drop notice, a masking
/// placeholder or a summary frame), and the text of a `recall` result in it, read from every
/// string of the body whatever the API.
pub fn recall_facts(body: &Value) -> (Option<String>, Option<String>) {
    let mut span = None;
    let mut recalled = None;
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    for text in strings {
        let is_note = [
            "[dropped history",
            "[masked tool result",
            "[compacted history",
        ]
        .iter()
        .any(|prefix| text.starts_with(prefix));
        if is_note && span.is_none() {
            span = first_span_id(text);
        }
        if text.starts_with(RECALLED_PREFIX) && recalled.is_none() {
            recalled = Some(text.to_owned());
        }
    }
    (span, recalled)
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The first `sp-` and 12 lowercase hex digits in `text`.
fn first_span_id(text: &str) -> Option<String> {
    text.match_indices("sp-").find_map(|(at, _)| {
        let id = text.get(at..at.saturating_add(15))?;
        let hex = id.get(3..)?;
        hex.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            .then(|| id.to_owned())
    })
}

/// The `recall` scenario's verdict on a recall result: whether the bytes after its header
/// begin with exactly what the round they name printed.
pub fn recall_verdict(recalled: &str) -> String {
    let (header, body) = recalled.split_once('\n').unwrap_or((recalled, ""));
    let id = header
        .strip_prefix(RECALLED_PREFIX)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("?");
    let round = body
        .strip_prefix("recall-round-")
        .and_then(|rest| rest.split('\n').next())
        .and_then(|number| number.parse::<usize>().ok());
    match round {
        Some(round) if body.starts_with(&recall_printed(round)) => format!(
            "RECALL-MATCH: the recalled bytes of {id} begin with exactly the {} bytes round \
             {round} printed.",
            recall_printed(round).len()
        ),
        Some(round) => format!(
            "RECALL-MISMATCH: the recalled bytes of {id} differ from what round {round} printed."
        ),
        None => {
            format!("RECALL-MISMATCH: the recalled bytes of {id} are not the output of any round.")
        }
    }
}

/// The message the `mcp-tools` scenario echoes.
pub const MCP_ECHO_MESSAGE: &str = "hello from the panewise mock";

/// The tools the `mcp-tools` scenario calls, by the end of their namespaced name, in order,
/// with their arguments, and how the result of each opens (what the real servers answer).
pub const MCP_WANTED: [(&str, &str); 2] = [
    ("__list_allowed_directories", "Allowed directories"),
    ("__echo", "Echo: "),
];

/// The own loop's tool search, and how its results open (`[tool search: QUERY] …`).
const MCP_SEARCH_TOOL: &str = "mcp_tool_search";
const MCP_SEARCH_PREFIX: &str = "[tool search: ";

/// What the `mcp-tools` scenario reads from a request: the strings of its body that open a
/// wanted tool's result, and the queries of the searches already answered.
#[derive(Debug, Clone, Default)]
pub struct McpFacts {
    /// For each of [`MCP_WANTED`], whether its result is in the request.
    pub answered: [bool; 2],
    /// The queries of the search results in the request.
    pub searched: Vec<String>,
}

/// The `mcp-tools` facts of a request body, whatever the API.
pub fn mcp_facts(body: &Value) -> McpFacts {
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    let mut facts = McpFacts::default();
    for text in strings {
        for (answered, (_, opening)) in facts.answered.iter_mut().zip(MCP_WANTED) {
            *answered |= text.starts_with(opening);
        }
        if let Some(rest) = text.strip_prefix(MCP_SEARCH_PREFIX) {
            if let Some((query, _)) = rest.split_once(']') {
                facts.searched.push(query.to_owned());
            }
        }
    }
    facts
}

/// The `mcp-tools` scenario: each wanted tool in turn, searched for first when deferred.
fn mcp_script(facts: &RequestFacts) -> Answer {
    let calling = |name: &str, args: Value| Answer {
        thinking: Some(format!("I'll use the {name} tool.")),
        text: "I'll call the MCP tool.".to_owned(),
        calls: vec![ToolCall {
            name: name.to_owned(),
            args,
        }],
        ..Answer::default()
    };
    for (index, (suffix, _)) in MCP_WANTED.iter().enumerate() {
        if facts.mcp.answered.get(index).copied().unwrap_or(false) {
            continue;
        }
        if let Some(name) = facts
            .tools
            .iter()
            .find(|name| name.starts_with("mcp__") && name.ends_with(suffix))
        {
            let args = if *suffix == "__echo" {
                json!({ "message": MCP_ECHO_MESSAGE })
            } else {
                json!({})
            };
            return calling(name, args);
        }
        let query = suffix.trim_start_matches('_');
        let searchable = facts.tools.iter().any(|name| name == MCP_SEARCH_TOOL);
        if searchable && !facts.mcp.searched.iter().any(|searched| searched == query) {
            return calling(MCP_SEARCH_TOOL, json!({ "query": query }));
        }
        return Answer {
            text: format!("MCP-MISSING: no tool ending in {suffix} was offered or found."),
            ..Answer::default()
        };
    }
    Answer {
        text: "MCP-DONE: both MCP tools answered.".to_owned(),
        ..Answer::default()
    }
}

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
    /// The first archived span id a stage note names ([`recall_facts`]).
    pub archived_span: Option<String>,
    /// The text of a `recall` result in the request.
    pub recalled: Option<String>,
    /// What the `mcp-tools` scenario reads.
    pub mcp: McpFacts,
    /// The tool result carrying the person's answer ([`answer_fact`]).
    pub answered: Option<String>,
    /// The request holds the delegated agent's answer ([`delegated_fact`]).
    pub delegated: bool,
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
    if scenario == Scenario::Recall {
        return recall_script(facts);
    }
    if scenario == Scenario::McpTools {
        return mcp_script(facts);
    }
    if scenario == Scenario::AskUser {
        return ask_script(facts);
    }
    if scenario == Scenario::Delegate {
        return delegate_script(facts);
    }
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
        Scenario::FiveApprovals if rounds == 0 => (1..=FIVE_APPROVALS)
            .map(|n| shell(&format!("echo approval {n}"), "Print the approval's number"))
            .collect(),
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
        Scenario::KeyProbe => match KEY_PROBES.get(rounds) {
            Some(KeyProbe::ReadFile(path)) => read_call(&facts.tools, path).map(|c| vec![c]),
            Some(KeyProbe::Shell(command)) => {
                shell(command, "Print the environment").map(|c| vec![c])
            }
            None => Some(Vec::new()),
        },
        Scenario::SandboxProbe if rounds == 0 => {
            shell(SANDBOX_COMMAND, "Write inside and outside, connect").map(|c| vec![c])
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

/// The `delegate` scenario: `panewise mcp serve`'s tools in sequence, then a verdict.
fn delegate_script(facts: &RequestFacts) -> Answer {
    let tool = |name: &str| format!("mcp__panewise__{name}");
    let step = match facts.tool_rounds {
        0 => Some((
            "start",
            json!({"prompt": "print hello with the shell", "name": DELEGATE_NAME,
                   "provider": "mock"}),
        )),
        1 => Some((
            "wait",
            json!({"session": DELEGATE_NAME, "until": "idle", "timeout_secs": 120}),
        )),
        2 => Some(("transcript", json!({"session": DELEGATE_NAME}))),
        _ => None,
    };
    match step {
        Some((name, args)) if facts.tools.iter().any(|t| *t == tool(name)) => Answer {
            thinking: Some(format!("I'll hand this to another agent: {name}.")),
            text: format!("Delegating: {name}."),
            calls: vec![ToolCall {
                name: tool(name),
                args,
            }],
            ..Answer::default()
        },
        Some(_) => Answer {
            text: "DELEGATE-NO-TOOLS: panewise's MCP tools were not offered.".to_owned(),
            ..Answer::default()
        },
        None if facts.delegated => Answer {
            text: format!("DELEGATE-READ: the delegated agent said: {DELEGATED_ANSWER}"),
            ..Answer::default()
        },
        None => Answer {
            text: "DELEGATE-MISSING: the transcript did not hold the delegated answer.".to_owned(),
            ..Answer::default()
        },
    }
}

/// The `ask-user` scenario: a question to the person through the client's asking tool, then
/// a text answer quoting the answer's tool result.
fn ask_script(facts: &RequestFacts) -> Answer {
    if let Some(answered) = &facts.answered {
        return Answer {
            text: format!("{ASK_ANSWER_TEXT}{answered}"),
            ..Answer::default()
        };
    }
    if facts.tool_rounds > 0 {
        return Answer {
            text: "ASK-USER-UNANSWERED: the question's result carried no answer.".to_owned(),
            ..Answer::default()
        };
    }
    let offered = |name: &str| facts.tools.iter().any(|t| t == name);
    let call = if offered("ask_user") {
        ToolCall {
            name: "ask_user".to_owned(),
            args: json!({"question": ASK_QUESTION, "choices": ASK_CHOICES}),
        }
    } else if offered("AskUserQuestion") {
        let options: Vec<Value> = ASK_CHOICES
            .iter()
            .map(|label| json!({"label": label, "description": format!("A {label} button")}))
            .collect();
        ToolCall {
            name: "AskUserQuestion".to_owned(),
            args: json!({"questions": [{
                "question": ASK_QUESTION,
                "header": "Colour",
                "options": options,
                "multiSelect": false
            }]}),
        }
    } else {
        return Answer {
            text: "No tool to ask the person with was offered, so I answer directly.".to_owned(),
            ..Answer::default()
        };
    };
    Answer {
        thinking: Some("The colour is the person's decision; I'll ask.".to_owned()),
        text: "I'll ask which colour you want.".to_owned(),
        calls: vec![call],
        ..Answer::default()
    }
}

/// The `recall` scenario: rounds of shell output, then a recall of a span a notice named,
/// then the verdict on what came back.
fn recall_script(facts: &RequestFacts) -> Answer {
    let text = |text: String| Answer {
        text,
        ..Answer::default()
    };
    let calling = |call: ToolCall, what: &str| Answer {
        thinking: Some(format!("I'll use the {} tool.", call.name)),
        text: what.to_owned(),
        calls: vec![call],
        ..Answer::default()
    };
    if let Some(recalled) = &facts.recalled {
        return text(recall_verdict(recalled));
    }
    let rounds = facts.tool_rounds;
    if rounds < RECALL_ROUNDS {
        let command = recall_command(rounds.saturating_add(1));
        return match shell_call(&facts.tools, &command, "Print the round and its numbers") {
            Some(call) => calling(call, "I'll run the command."),
            None => text("No tool I know how to call was offered, so I answer directly.".into()),
        };
    }
    match (
        &facts.archived_span,
        facts.tools.iter().any(|t| t == "recall"),
    ) {
        (Some(id), true) => calling(
            ToolCall {
                name: "recall".to_owned(),
                args: json!({ "id": id }),
            },
            "An earlier output left the window; I'll recall it.",
        ),
        (None, _) => text(
            "RECALL-NOTHING: no notice in the window named an archived span. The window removed \
             nothing: give a strategy that does, such as observation-masking with \
             keepRecentObservations 1 (--window FILE, or [window] in panewise.toml)."
                .into(),
        ),
        (Some(id), false) => text(format!(
            "RECALL-NOTHING: a notice named {id}, but no recall tool was offered."
        )),
    }
}

fn final_text(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::MultiRound => "All three rounds printed their number. Done.",
        Scenario::LongSession => "All forty rounds printed their numbers. Done.",
        Scenario::ParallelCalls => "The commands printed `one` and `two`. Done.",
        Scenario::FiveApprovals => "All five commands printed their number. Done.",
        Scenario::FileWrite => "I wrote hello.txt. Done.",
        Scenario::FailingTool => "The command failed with exit status 3.",
        Scenario::SlowTool | Scenario::SleepingTool => "The wait is over. Done.",
        Scenario::DetachingTool => "The sleep was started. Done.",
        Scenario::SpoofedCommand | Scenario::SandboxProbe => "The command ran. Done.",
        Scenario::KeyProbe => "The probes ran. Done.",
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
/// A read of `path` by the client's file tool (`read_file`, or Claude Code's `Read`), else a
/// shell `cat` of it.
fn read_call(tools: &[String], path: &str) -> Option<ToolCall> {
    let offered = |name: &str| tools.iter().any(|t| t == name);
    if offered("read_file") {
        return Some(ToolCall {
            name: "read_file".to_owned(),
            args: json!({ "path": path }),
        });
    }
    if offered("Read") {
        return Some(ToolCall {
            name: "Read".to_owned(),
            args: json!({ "file_path": path }),
        });
    }
    shell_call(tools, &format!("cat {path}"), "Read the file")
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(rounds: usize, tools: &[&str]) -> RequestFacts {
        RequestFacts {
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            tool_rounds: rounds,
            ..RequestFacts::default()
        }
    }

    const ID: &str = "sp-0123456789ab";

    #[test]
    fn the_ask_user_scenario_asks_through_the_offered_tool_then_quotes_the_answer() {
        let answered = |mut facts: RequestFacts, answer: &str| {
            facts.answered = Some(answer.to_owned());
            facts
        };
        // (the request's facts, the tool called, how the text starts)
        let cases = [
            (
                facts(0, &["shell", "ask_user"]),
                Some("ask_user"),
                "I'll ask",
            ),
            (
                facts(0, &["Bash", "AskUserQuestion"]),
                Some("AskUserQuestion"),
                "I'll ask",
            ),
            (facts(0, &["shell"]), None, "No tool to ask"),
            (
                answered(facts(1, &["ask_user"]), "The person answered: blue"),
                None,
                "ASK-USER-ANSWER: The person answered: blue",
            ),
            (facts(1, &["ask_user"]), None, "ASK-USER-UNANSWERED"),
        ];
        for (facts, tool, text) in cases {
            let answer = script(Scenario::AskUser, &facts);
            assert_eq!(
                answer.calls.first().map(|call| call.name.as_str()),
                tool,
                "{facts:?}"
            );
            assert!(answer.text.starts_with(text), "{facts:?}: {}", answer.text);
        }
        // The delegate scenario: start, wait, transcript, then its verdict.
        let mcp = [
            "mcp__panewise__start",
            "mcp__panewise__wait",
            "mcp__panewise__transcript",
        ];
        for (rounds, call) in [
            (0, Some(mcp[0])),
            (1, Some(mcp[1])),
            (2, Some(mcp[2])),
            (3, None),
        ] {
            let answer = script(Scenario::Delegate, &facts(rounds, &mcp));
            assert_eq!(
                answer.calls.first().map(|c| c.name.as_str()),
                call,
                "{rounds}"
            );
        }
        let mut read = facts(3, &mcp);
        read.delegated = true;
        assert!(script(Scenario::Delegate, &read)
            .text
            .starts_with("DELEGATE-READ"));
        assert!(script(Scenario::Delegate, &facts(3, &mcp))
            .text
            .starts_with("DELEGATE-MISSING"));
        assert!(script(Scenario::Delegate, &facts(0, &["Bash"]))
            .text
            .starts_with("DELEGATE-NO"));
        let body = json!({"messages": [{"content": [{"type": "tool_result",
            "content": "User has answered your questions: \"Which?\"=\"blue\""}]}]});
        assert!(answer_fact(&body).is_some_and(|text| text.ends_with("\"blue\"")));
        assert_eq!(answer_fact(&json!({"text": "The person said"})), None);
    }

    #[test]
    fn the_recall_scenario_runs_rounds_then_recalls_then_judges() {
        let recalled =
            |body: &str| format!("{RECALLED_PREFIX}{ID} (tool result); 9 bytes]\n{body}");
        let with = |mut facts: RequestFacts, span: Option<&str>, recall: Option<String>| {
            facts.archived_span = span.map(str::to_owned);
            facts.recalled = recall;
            facts
        };
        // (what, the request's facts, the call expected, how the text starts)
        type Case<'a> = (&'a str, RequestFacts, Option<(&'a str, Value)>, &'a str);
        let cases: Vec<Case> =
            vec![
            (
                "round 1",
                facts(0, &["shell", "recall"]),
                Some(("shell", json!({"command": recall_command(1)}))),
                "",
            ),
            (
                "round 3 even with a span named",
                with(facts(2, &["shell", "recall"]), Some(ID), None),
                Some(("shell", json!({"command": recall_command(3)}))),
                "",
            ),
            (
                "the recall",
                with(facts(3, &["shell", "recall"]), Some(ID), None),
                Some(("recall", json!({"id": ID}))),
                "",
            ),
            (
                "no span named",
                facts(3, &["shell", "recall"]),
                None,
                "RECALL-NOTHING: no notice",
            ),
            (
                "no recall offered",
                with(facts(3, &["shell"]), Some(ID), None),
                None,
                "RECALL-NOTHING: a notice named sp-0123456789ab",
            ),
            (
                "the bytes match",
                with(
                    facts(4, &["shell", "recall"]),
                    Some(ID),
                    Some(recalled(&format!("{}[exit code 0]", recall_printed(1)))),
                ),
                None,
                "RECALL-MATCH: the recalled bytes of sp-0123456789ab begin with exactly",
            ),
            (
                "one byte differs",
                with(
                    facts(4, &["shell", "recall"]),
                    Some(ID),
                    Some(recalled(&recall_printed(1).replace("1150", "1151"))),
                ),
                None,
                "RECALL-MISMATCH: the recalled bytes of sp-0123456789ab differ from what round 1",
            ),
            (
                "not a round's output",
                with(facts(4, &["shell", "recall"]), Some(ID), Some(recalled("other"))),
                None,
                "RECALL-MISMATCH: the recalled bytes of sp-0123456789ab are not",
            ),
        ];
        for (what, facts, call, text) in cases {
            let answer = script(Scenario::Recall, &facts);
            let calls: Vec<(&str, Value)> = answer
                .calls
                .iter()
                .map(|c| (c.name.as_str(), c.args.clone()))
                .collect();
            assert_eq!(calls, call.into_iter().collect::<Vec<_>>(), "{what}");
            assert!(answer.text.starts_with(text), "{what}: {}", answer.text);
        }
    }

    #[test]
    fn a_rounds_command_prints_what_the_scenario_expects() {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(recall_command(2))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), recall_printed(2));
    }

    #[test]
    fn span_ids_and_recall_results_are_read_from_any_string_of_the_body() {
        let body = json!({"messages": [
            {"content": "[masked tool result x] sp-notanid sp-0123456789ab"},
            {"content": [{"type": "tool_result", "content": "sp-ffffffffffff not a note"}]},
            {"content": [{"text": "[dropped history: sp-aaaaaaaaaaaa]"}]},
            {"parts": [{"functionResponse": {"response": {"output": "[recalled span sp-1]\nx"}}}]}
        ]});
        let (span, recalled) = recall_facts(&body);
        assert_eq!(span.as_deref(), Some("sp-0123456789ab"));
        assert_eq!(recalled.as_deref(), Some("[recalled span sp-1]\nx"));
        assert_eq!(recall_facts(&json!({})), (None, None));
    }
}
