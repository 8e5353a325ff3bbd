//! One exit code table for every subcommand, and the mapping from an error to its code.

use std::process::ExitCode;

/// The table, printed after the options in every `--help` and in the README.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  data problem: the input was read but is wrong, of the wrong kind, or empty
  2  usage error: unknown flag, missing argument, a value that is not one of the choices
  3  I/O error: the input cannot be read or the output cannot be written
A closed standard output (as in `panewise … | head -1`) ends the command quietly with 0.";

/// The input was read but is wrong or empty.
pub const DATA: u8 = 1;
/// The command line is wrong: clap's own errors, and [`Usage`] for what clap cannot check.
pub const USAGE: u8 = 2;
/// The input cannot be read or the output cannot be written.
pub const IO: u8 = 3;

/// The exit code for a command that failed with `error`, or `None` when it should end quietly
/// (standard output was closed by its reader).
pub fn code_for(error: &anyhow::Error) -> Option<ExitCode> {
    if error.chain().any(|cause| cause.is::<Usage>()) {
        return Some(ExitCode::from(USAGE));
    }
    let io = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>());
    match io {
        Some(io) if io.kind() == std::io::ErrorKind::BrokenPipe => None,
        Some(_) => Some(ExitCode::from(IO)),
        None => Some(ExitCode::from(DATA)),
    }
}

/// The error every subcommand gives for an input with no line in it.
pub fn empty_input(name: &str) -> anyhow::Error {
    anyhow::anyhow!("{name}: empty input: there is no line in it")
}

/// The warning every subcommand gives for a last line cut off without its newline (a writer
/// that crashed mid-line); the same words as the session log reader's.
pub fn truncated_last_line(line: u64) -> String {
    panewise_pane_state::log::LogWarning::TruncatedLastLine {
        line: usize::try_from(line).unwrap_or(usize::MAX),
    }
    .to_string()
}

/// `run`: the answer could not be written to standard output (a full disk, a device error).
pub const OUTPUT_LOST: u8 = IO;
/// A command line that parsed but is wrong as a whole (a flag's value that does not go with
/// another's): exit code 2, as clap's own usage errors.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A [`Usage`] error.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(message.into()))
}
