//! `panewise budget [ID] [--max-cost-usd N] [--max-tokens N] [--daemon-max-cost-usd N]
//! [--daily-max-cost-usd N]`: raises (or cuts) a session's spend caps (`session/set_budget`)
//! or the daemon's over all its sessions (`daemon/set_budget`) (R112, R113). A session held
//! at its budget goes on once its spend is within the new caps (`agents` shows whether it
//! still waits); the command says which caps hold now.

use std::process::ExitCode;

use panewise_api::{
    DaemonBudgetParams, DaemonBudgetResult, Method, SetBudgetParams, SetBudgetResult,
};
use panewise_pane_state::budget::usd;

use crate::agents_cmd::{target, write_out};
use crate::remote::{RemoteArgs, Remotes};
use crate::terminal_text::one_line;

/// `panewise budget`.
#[derive(clap::Args)]
pub struct Args {
    /// The session: its id, a unique prefix of it, or its name (HOST:ID on a remote host).
    /// Left out, only the daemon's caps are set.
    id: Option<String>,
    #[command(flatten)]
    caps: crate::run::BudgetArgs,
    /// What all the daemon's sessions may cost together, in US dollars (over `[limits]
    /// daemon_max_cost_usd`).
    #[arg(long, value_name = "USD", value_parser = crate::run::parse_usd)]
    daemon_max_cost_usd: Option<f64>,
    /// What they may cost in one day (UTC), in US dollars (over `[limits]
    /// daily_max_cost_usd`).
    #[arg(long, value_name = "USD", value_parser = crate::run::parse_usd)]
    daily_max_cost_usd: Option<f64>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// Sets the caps given, keeps the others; prints the caps now.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let session_caps = args.caps.max_cost_usd.is_some() || args.caps.max_tokens.is_some();
    let daemon_caps = args.daemon_max_cost_usd.is_some() || args.daily_max_cost_usd.is_some();
    match (&args.id, session_caps, daemon_caps) {
        (Some(_), false, _) => {
            return Err(crate::exit::usage(
                "panewise budget ID: give --max-cost-usd, --max-tokens or both",
            ))
        }
        (None, true, _) => {
            return Err(crate::exit::usage(
                "panewise budget: --max-cost-usd and --max-tokens are a session's: name it",
            ))
        }
        (None, false, false) => {
            return Err(crate::exit::usage(
                "panewise budget: give a session and its caps, or --daemon-max-cost-usd / \
                 --daily-max-cost-usd",
            ))
        }
        _ => {}
    }
    let mut said = String::new();
    if daemon_caps {
        let remotes = Remotes::load(&args.remote)?;
        let runtime = crate::agents_cmd::runtime()?;
        let host = args
            .remote
            .remote
            .first()
            .cloned()
            .map_or(crate::remote::Host::Local, crate::remote::Host::Remote);
        let set: DaemonBudgetResult = runtime.block_on(async {
            let client = remotes.connect(&host, "panewise budget").await?;
            anyhow::Ok(
                client
                    .call(
                        Method::SetDaemonBudget,
                        DaemonBudgetParams {
                            max_cost_usd: args.daemon_max_cost_usd,
                            daily_max_cost_usd: args.daily_max_cost_usd,
                        },
                    )
                    .await?,
            )
        })?;
        let mut caps = Vec::new();
        if let Some(cap) = set.caps.max_cost_usd {
            caps.push(format!("{} in all", usd(cap)));
        }
        if let Some(cap) = set.caps.daily_max_cost_usd {
            caps.push(format!("{} a day", usd(cap)));
        }
        said.push_str(&format!("budget of the daemon: {}\n", caps.join(" and ")));
    }
    if let Some(id) = &args.id {
        let (runtime, target) = target(&args.remote, id, "panewise budget")?;
        let set: SetBudgetResult = runtime.block_on(target.client.call(
            Method::SetBudget,
            SetBudgetParams {
                session: target.session.clone(),
                max_cost_usd: args.caps.max_cost_usd,
                max_tokens: args.caps.max_tokens,
            },
        ))?;
        let mut caps = Vec::new();
        if let Some(cap) = set.budget.max_cost_usd {
            caps.push(usd(cap));
        }
        if let Some(cap) = set.budget.max_tokens {
            caps.push(format!("{cap} tokens"));
        }
        said.push_str(&format!(
            "budget of {}: {}\n",
            one_line(id, 80),
            caps.join(" and ")
        ));
    }
    write_out(said.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
