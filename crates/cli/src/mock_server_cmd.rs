//! `panewise mock-server [--port N] [--scenario S] [--log FILE]`: the workspace's scripted mock of
//! the Anthropic Messages, OpenAI Responses and Gemini APIs, on 127.0.0.1, for testing an agent
//! setup offline. It runs until interrupted.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use panewise_mock_server::{MockConfig, Scenario};

/// Arguments of `panewise mock-server`.
#[derive(clap::Args)]
pub struct Args {
    /// The loopback port to listen on; 0 picks a free one (printed at start).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The scripted behaviour for requests without an `x-mock-scenario` header.
    #[arg(
        long,
        default_value = "tool-then-answer",
        value_parser = clap::builder::PossibleValuesParser::new(Scenario::names())
    )]
    scenario: String,
    /// Also append every request, and the usage answered, to this file as JSON lines.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

/// Runs `panewise mock-server` until Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scenario: Scenario = args
        .scenario
        .parse()
        .map_err(|error| anyhow::anyhow!("--scenario: {error}"))?;
    let config = MockConfig {
        port: args.port,
        scenario,
        log_file: args.log,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async {
        tokio::select! {
            served = panewise_mock_server::serve(config) => served.context("the mock server stopped"),
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
