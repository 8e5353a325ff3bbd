//! Runs the mock server until Ctrl-C, for trying a CLI against it before `panewise mock-server`
//! exists: `cargo run -p panewise-mock-server --example serve -- [--port N] [--scenario S] [--log FILE]`.

use std::process::ExitCode;

use panewise_mock_server::{serve, MockConfig};

fn config(mut args: impl Iterator<Item = String>) -> Result<MockConfig, String> {
    let mut config = MockConfig::default();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--port" => config.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--scenario" => config.scenario = value()?.parse().map_err(|e| format!("{e}"))?,
            "--log" => config.log_file = Some(value()?.into()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(config)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let config = match config(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("serve: {message}");
            return ExitCode::from(2);
        }
    };
    match serve(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("serve: {error}");
            ExitCode::FAILURE
        }
    }
}
