//! `panewise approve` and `panewise deny`: answer the approval a hosted session waits on. The
//! daemon picks the request from the session's folded state ([`panewise_api::pick_approval`]):
//! the one named by `--request`, else the only one waiting; with none it says so, with
//! several it lists them and asks for `--request`. What was answered is printed, escaped.

use std::process::ExitCode;

use panewise_api::{ApproveParams, ApproveResult, Decision, Method, WaitingApproval};

use crate::agents_cmd::target;
use crate::remote::RemoteArgs;
use crate::terminal_text::one_line;

/// The longest request id, tool or summary printed, in characters.
const SHOWN_CHARS: usize = 200;

/// `panewise approve ID [--always] [--request REQ]`.
#[derive(clap::Args)]
pub struct ApproveArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    /// Allow this tool for the rest of the session too.
    #[arg(long)]
    always: bool,
    /// The request to answer (`waiting_for.id` in `agents --json`). Needed when several
    /// wait; refused when that one no longer waits.
    #[arg(long)]
    request: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Allows the request a session waits on.
pub fn approve(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let decision = if args.always {
        Decision::AllowForSession
    } else {
        Decision::AllowOnce
    };
    answer(
        "panewise approve",
        &args.remote,
        &args.id,
        args.request,
        decision,
    )
}

/// `panewise deny ID [--message TEXT] [--request REQ]`.
#[derive(clap::Args)]
pub struct DenyArgs {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    id: String,
    /// What the agent is told with the denial.
    #[arg(long)]
    message: Option<String>,
    /// The request to answer (`waiting_for.id`). Needed when several wait; refused when that
    /// one no longer waits.
    #[arg(long)]
    request: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Denies the request a session waits on.
pub fn deny(args: DenyArgs) -> anyhow::Result<ExitCode> {
    let decision = Decision::Deny {
        message: args.message,
    };
    answer(
        "panewise deny",
        &args.remote,
        &args.id,
        args.request,
        decision,
    )
}

fn answer(
    name: &str,
    remote: &RemoteArgs,
    key: &str,
    request: Option<String>,
    decision: Decision,
) -> anyhow::Result<ExitCode> {
    let (runtime, target) = target(remote, key, name)?;
    let words = answered_text(&decision, &target.host.key(&target.session));
    let params = ApproveParams {
        session: target.session.clone(),
        request,
        decision,
    };
    let answered: ApproveResult = runtime.block_on(target.client.call(Method::Approve, params))?;
    let line = format!("{words}{}\n", request_text(&answered.request));
    crate::agents_cmd::write_out(line.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// What was done, before the request: `allowed in tests: `.
fn answered_text(decision: &Decision, session: &str) -> String {
    let what = match decision {
        Decision::AllowOnce => "allowed",
        Decision::AllowForSession => "allowed for the session",
        Decision::Deny { .. } => "denied",
    };
    format!("{what} in {}: ", one_line(session, SHOWN_CHARS))
}

/// A request as printed: `shell echo hello (request r1)`, every part escaped.
fn request_text(request: &WaitingApproval) -> String {
    format!(
        "{} {} (request {})",
        one_line(&request.tool, SHOWN_CHARS),
        one_line(&request.summary, SHOWN_CHARS),
        one_line(&request.id, SHOWN_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `approve` and `deny` print for each decision (rule: the decision's words, the
    /// session, the tool, what it does and the request's id, escaped).
    #[test]
    fn each_answer_prints_what_it_answered() {
        let request = |summary: &str| WaitingApproval {
            id: "r1".to_owned(),
            tool: "shell".to_owned(),
            summary: summary.to_owned(),
        };
        let table: [(&str, Decision, &str, &str); 4] = [
            (
                "allowed once",
                Decision::AllowOnce,
                "echo hello",
                "allowed in tests: shell echo hello (request r1)",
            ),
            (
                "allowed for the session",
                Decision::AllowForSession,
                "echo hello",
                "allowed for the session in tests: shell echo hello (request r1)",
            ),
            (
                "denied",
                Decision::Deny { message: None },
                "echo hello",
                "denied in tests: shell echo hello (request r1)",
            ),
            (
                "an agent's control characters are escaped, its line breaks kept on one line",
                Decision::AllowOnce,
                "echo \u{1b}[2Jhi\nrm -rf /",
                "allowed in tests: shell echo \\u{1b}[2Jhi\\nrm -rf / (request r1)",
            ),
        ];
        for (rule, decision, summary, expected) in table {
            let printed = format!(
                "{}{}",
                answered_text(&decision, "tests"),
                request_text(&request(summary))
            );
            assert_eq!(printed, expected, "{rule}");
        }
    }
}
