//! `panewise attach ID`: one hosted session on this terminal, its conversation from the start
//! then live, as the daemon's log lines fold; a waiting approval is asked inline (y / a / n),
//! any other line is a prompt, and Ctrl-D detaches, leaving the session running.

use std::process::ExitCode;

use panewise_api::{
    ApproveParams, Decision, EndNotice, LineNotice, Method, PromptParams, SubscribeParams,
    SubscribeResult, WaitingFor,
};
use panewise_pane_state::log::{LogLine, LogReader};
use panewise_pane_state::State;

use crate::replay::conversation::entry_text;
use crate::terminal_text::one_line;

/// `panewise attach ID`.
#[derive(clap::Args)]
pub struct Args {
    /// The session: its id, a unique prefix of it, or its name.
    id: String,
}

/// Attaches to a session until it ends or stdin does.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (runtime, client) = crate::agents_cmd::connect("panewise attach")?;
    // The bell and the title are for a person at a terminal, unless `[notify] bell = false`.
    let bell = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::current_dir()
            .ok()
            .and_then(|dir| panewise_host::config::Config::load(&dir).ok())
            .is_none_or(|config| config.notify.bell.unwrap_or(true));
    let mut lines = crate::run::stdin_lines();
    let outcome = runtime.block_on(async {
        let subscribed: SubscribeResult = client
            .call(
                Method::Subscribe,
                SubscribeParams {
                    session: args.id.clone(),
                    from_line: 0,
                    attach: true,
                },
            )
            .await?;
        let id = subscribed.id;
        eprintln!(
            "panewise attach: {}; type a prompt and press Enter; y, a (always) or n answers an \
             approval; Ctrl-D detaches and leaves the session running",
            one_line(&args.id, 40)
        );
        let mut reader = LogReader::default();
        let mut state = State::new("");
        let mut asked: Option<String> = None;
        loop {
            tokio::select! {
                notice = client.next_notification() => {
                    let Some(notice) = notice else {
                        anyhow::bail!("the daemon closed the connection");
                    };
                    if notice.method == EndNotice::METHOD {
                        eprintln!("panewise attach: the session ended");
                        return anyhow::Ok(());
                    }
                    if notice.method != LineNotice::METHOD {
                        continue;
                    }
                    let line: LineNotice = serde_json::from_value(notice.params)?;
                    match reader.read_line(line.line.as_bytes(), false) {
                        Ok(LogLine::Header(header)) => state = State::new(header.agent_id),
                        Ok(LogLine::Entry(entry)) => {
                            state = panewise_pane_state::step(state, entry.ts, entry.msg).0;
                        }
                        Ok(LogLine::Transcript(transcript)) => {
                            print!("{}", entry_text(&transcript.entry));
                        }
                        Ok(_) => {}
                        Err(error) => eprintln!("panewise attach: line {}: {error}", line.index),
                    }
                    match panewise_api::waiting_for(&state) {
                        Some(WaitingFor::Approval { id: request, tool, argument })
                            if asked.as_ref() != Some(&request) =>
                        {
                            if bell {
                                // BEL, then the window title (OSC 2), which ends with BEL too.
                                eprint!(
                                    "\u{7}\u{1b}]2;panewise: {} needs input\u{7}",
                                    one_line(&args.id, 40)
                                );
                            }
                            eprintln!(
                                "panewise attach: allow {} {}? [y]es, [a]lways, [n]o",
                                one_line(&tool, 30),
                                one_line(&argument, 80)
                            );
                            asked = Some(request);
                        }
                        None => asked = None,
                        _ => {}
                    }
                }
                typed = lines.recv() => {
                    let Some(typed) = typed else {
                        eprintln!("panewise attach: detached; the session goes on");
                        return Ok(());
                    };
                    let word = typed.trim().to_ascii_lowercase();
                    let decision = match (&asked, word.as_str()) {
                        (Some(_), "y" | "yes") => Some(Decision::AllowOnce),
                        (Some(_), "a" | "always") => Some(Decision::AllowForSession),
                        (Some(_), "n" | "no") => Some(Decision::Deny { message: None }),
                        _ => None,
                    };
                    let sent = match decision {
                        Some(decision) => client
                            .call::<_, panewise_api::Ack>(
                                Method::Approve,
                                ApproveParams {
                                    session: id.clone(),
                                    request: asked.clone(),
                                    decision,
                                },
                            )
                            .await,
                        None if word.is_empty() => continue,
                        None => client
                            .call::<_, panewise_api::Ack>(
                                Method::Prompt,
                                PromptParams { session: id.clone(), text: typed },
                            )
                            .await,
                    };
                    if let Err(error) = sent {
                        eprintln!("panewise attach: {error}");
                    }
                }
            }
        }
    });
    // The stdin thread may still wait for a line; it must not hold the process open.
    runtime.shutdown_background();
    outcome?;
    Ok(ExitCode::SUCCESS)
}
