//! `panewise sandbox check` and `panewise sandbox run [--mode M] -- CMD...`: what sandbox the
//! own loop's `shell` commands get on this machine, and a command run in the box a mode
//! would use (how a person debugs a refusal).

use std::ffi::OsString;
use std::process::{ExitCode, Stdio};

use anyhow::Context;
use panewise_host::approval::ApprovalMode;
use panewise_host::sandbox::{self, BoxNetwork, Mechanism, MechanismChoice, Probe};

use crate::exit;

/// Arguments of `panewise sandbox`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SandboxCommand,
}

#[derive(clap::Subcommand)]
enum SandboxCommand {
    /// Print the sandbox mechanism available here and why the others are not; exit 0 when
    /// one is available, 1 when none is.
    Check,
    /// Run a command in the box an approval mode gives the own loop's `shell` commands.
    Run(RunArgs),
    /// Inside a box with loopback ports (`[sandbox] network = [PORT, …]`): listen on each
    /// port and carry its connections out, then run the command. panewise starts this in the
    /// box itself; it is not for people.
    #[command(name = "forward-inside", hide = true)]
    ForwardInside(ForwardInsideArgs),
}

#[derive(clap::Args)]
struct ForwardInsideArgs {
    /// PORT=SOCKET: listen on 127.0.0.1:PORT and carry each connection to SOCKET.
    #[arg(long = "link", value_parser = parse_link)]
    links: Vec<sandbox::forward::Link>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

fn parse_link(value: &str) -> Result<sandbox::forward::Link, String> {
    sandbox::forward::parse_link(std::ffi::OsStr::new(value))
}

#[derive(clap::Args)]
struct RunArgs {
    /// The approval mode whose box to use (`full-access` runs it unconfined).
    #[arg(
        long,
        default_value = "auto",
        value_parser = clap::builder::PossibleValuesParser::new(ApprovalMode::ALL.map(ApprovalMode::name))
    )]
    mode: String,
    /// The working directory (writable in the `ask` and `auto` box); default: the current one.
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// Runs `panewise sandbox`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        SandboxCommand::Check => check(),
        SandboxCommand::Run(args) => run_boxed(args),
        SandboxCommand::ForwardInside(args) => {
            let code = sandbox::forward::run_inside(&args.links, &args.command)
                .map_err(|reason| anyhow::anyhow!("sandbox forwarder: {reason}"))?;
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
    }
}

fn yes_or(result: &Result<impl std::fmt::Display, String>) -> String {
    match result {
        Ok(found) => found.to_string(),
        Err(reason) => format!("no: {reason}"),
    }
}

/// The lines `sandbox check` prints for `probe` under `choice` (pure).
fn check_report(
    probe: &Probe,
    choice: MechanismChoice,
    network: &BoxNetwork,
) -> (Vec<String>, bool) {
    let mut lines = vec![
        format!(
            "bubblewrap: {}",
            yes_or(
                &probe
                    .bwrap
                    .as_ref()
                    .map(|(path, version)| format!("{version} ({})", path.display()))
                    .map_err(Clone::clone)
            )
        ),
        format!(
            "user namespaces: {}",
            yes_or(
                &probe
                    .namespaces
                    .as_ref()
                    .map(
                        |()| "yes (bwrap built a box with its own PID, network and IPC \
                               namespaces and /proc)"
                    )
                    .map_err(Clone::clone)
            )
        ),
        format!(
            "landlock: {}",
            yes_or(
                &probe
                    .landlock
                    .as_ref()
                    .map(|abi| format!("ABI {abi}"))
                    .map_err(Clone::clone)
            )
        ),
        format!(
            "seccomp: {}",
            yes_or(&probe.seccomp.as_ref().map(|()| "yes").map_err(Clone::clone))
        ),
        format!(
            "network in the ask/auto box: {} ([sandbox] network)",
            network.describe()
        ),
    ];
    let verdict = probe.mechanism(choice);
    let available = verdict.is_ok();
    lines.push(match verdict {
        Ok(Mechanism::Bubblewrap) => "mechanism: bubblewrap, with a seccomp filter".to_owned(),
        Ok(Mechanism::Landlock) => "mechanism: landlock, with a seccomp filter (no PID namespace: \
             commands see /proc and the other processes, panewise's included; ptrace and \
             process_vm_readv/writev are refused)"
            .to_owned(),
        Err(reason) => format!(
            "mechanism: none ({reason}); in mode auto every shell command is asked, in \
             read-only none runs"
        ),
    });
    (lines, available)
}

fn check() -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let config = panewise_host::config::load(&cwd)?;
    let probe = sandbox::probe();
    let (lines, available) = check_report(
        &probe,
        config.sandbox.mechanism.unwrap_or_default(),
        &config.sandbox.network(),
    );
    for line in lines {
        println!("{line}");
    }
    Ok(if available {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::DATA)
    })
}

fn run_boxed(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mode = ApprovalMode::from_name(&args.mode)
        .ok_or_else(|| anyhow::anyhow!("--mode: unknown mode `{}`", args.mode))?;
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = args.cwd.map_or_else(|| here.clone(), |dir| here.join(dir));
    let config = panewise_host::config::load(&cwd)?;
    let shell = sandbox::probed(config.sandbox);
    let plan = shell.plan(mode);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let status = runtime.block_on(async {
        match (plan.boxed, &shell.mechanism) {
            (Some(boxed), _) => {
                let mut spawned = sandbox::run::spawn(boxed, &cwd, &args.command, |command| {
                    command
                        .stdin(Stdio::inherit())
                        .stdout(Stdio::inherit())
                        .stderr(Stdio::inherit());
                })
                .context("cannot start the sandbox")?;
                let status = spawned
                    .child
                    .wait()
                    .await
                    .context("cannot wait for the command")?;
                drop(spawned.guard);
                anyhow::Ok(status)
            }
            (None, Err(reason)) if mode != ApprovalMode::FullAccess => {
                anyhow::bail!(
                    "no sandbox for mode {} on this machine: {reason}",
                    mode.name()
                )
            }
            (None, _) => {
                eprintln!("panewise: mode full-access: no sandbox");
                let (program, rest) = args
                    .command
                    .split_first()
                    .ok_or_else(|| anyhow::anyhow!("no command to run"))?;
                let status = tokio::process::Command::new(program)
                    .args(rest)
                    .current_dir(&cwd)
                    .status()
                    .await
                    .with_context(|| format!("cannot run {}", program.to_string_lossy()))?;
                anyhow::Ok(status)
            }
        }
    })?;
    let code = status
        .code()
        .and_then(|code| u8::try_from(code).ok())
        .unwrap_or(1);
    Ok(ExitCode::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_mechanism_and_why_not_the_others() {
        let bwrap = Ok((
            std::path::PathBuf::from("/usr/bin/bwrap"),
            "bubblewrap 0.8.0".to_owned(),
        ));
        let cases = [
            (
                Probe {
                    bwrap: bwrap.clone(),
                    namespaces: Ok(()),
                    landlock: Ok(7),
                    seccomp: Ok(()),
                },
                "mechanism: bubblewrap",
                true,
            ),
            (
                Probe {
                    bwrap: bwrap.clone(),
                    namespaces: Err("RTM_NEWADDR".into()),
                    landlock: Ok(7),
                    seccomp: Ok(()),
                },
                "mechanism: landlock, with a seccomp filter (no PID namespace",
                true,
            ),
            (
                Probe {
                    bwrap: Err("not on PATH".into()),
                    namespaces: Err("not tried".into()),
                    landlock: Err("not built".into()),
                    seccomp: Ok(()),
                },
                "mechanism: none (bubblewrap: not on PATH; Landlock: not built)",
                false,
            ),
        ];
        for (probe, expected, available) in cases {
            let (lines, ok) = check_report(&probe, MechanismChoice::Auto, &BoxNetwork::None);
            assert_eq!(ok, available, "{lines:?}");
            assert!(
                lines.iter().any(|line| line.starts_with(expected)),
                "{lines:?}"
            );
        }
    }
}
