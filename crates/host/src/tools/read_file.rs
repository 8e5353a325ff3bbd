//! `read_file`: a text file's lines, all of them or a window of them (`offset` lines skipped,
//! then at most `limit`), after a header naming the resolved path and the lines shown.
//!
//! Only a regular file is read (a FIFO, a device, a socket or a directory is refused, its type
//! read before anything is opened and again on what was opened), and it is read as a stream:
//! no more than [`ToolLimits::read_bytes`] of it, the skipped lines counted and dropped, the
//! shown ones kept up to the output cap.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::output::CappedText;
use super::paths::not_a_file;
use super::{ToolContext, ToolLimits, ToolOutcome};

pub use panewise_core::tools::read_file::*;

/// Reads the file.
pub async fn run(args: &Args, context: &ToolContext) -> ToolOutcome {
    let path = context.resolve(&args.path);
    if args.limit == Some(0) {
        return ToolOutcome::error(format!("{NAME}: `limit` must be at least 1")).at(&path);
    }
    let args_path = args.path.clone();
    let window = Window {
        skip: args.offset.unwrap_or(0),
        take: args.limit.unwrap_or(u64::MAX),
    };
    let limits = context.limits;
    let opened = path.clone();
    let reach_system = context.reach_system;
    let read = tokio::task::spawn_blocking(move || {
        read_window(&opened, window, limits, reach_system, &args_path)
    })
    .await;
    match read {
        Ok(Ok(text)) => ToolOutcome::ok(text).at(&path),
        Ok(Err(message)) => ToolOutcome::error(message).at(&path),
        Err(error) => {
            ToolOutcome::error(format!("cannot read {}: {error}", path.display())).at(&path)
        }
    }
}

/// The lines asked for: `skip` lines passed over, then at most `take`.
#[derive(Debug, Clone, Copy)]
struct Window {
    skip: u64,
    take: u64,
}

/// Reads `window`'s lines of the regular file at `path`, streaming: the lines skipped are
/// only counted, the lines shown kept up to the output cap, and nothing past
/// [`ToolLimits::read_bytes`] is read. The error is the result's text.
/// Unless `reach_system`, a file that turns out, once opened, to be in `/proc`, `/sys` or `/dev`
/// (a symlink swapped in after the call's path was checked) is refused, named as `given`.
fn read_window(
    path: &Path,
    window: Window,
    limits: ToolLimits,
    reach_system: bool,
    given: &str,
) -> Result<String, String> {
    let shown = path.display();
    let cannot = |error: std::io::Error| format!("cannot read {shown}: {error}");
    // The type first, from the path: a FIFO is never opened (an open would wait for a writer),
    // a device or a directory never read.
    let metadata = std::fs::metadata(path).map_err(cannot)?;
    if let Some(kind) = not_a_file(metadata.file_type()) {
        return Err(format!(
            "{shown} is {kind}, not a regular file; {NAME} reads regular files only"
        ));
    }
    // Non-blocking, in case a FIFO was put there since: then checked again on what was opened.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    if let (false, Some(reach)) = (reach_system, super::system::opened_in_system(&file)) {
        return Err(reach.refusal(NAME, given));
    }
    let metadata = file.metadata().map_err(cannot)?;
    if let Some(kind) = not_a_file(metadata.file_type()) {
        return Err(format!(
            "{shown} is {kind}, not a regular file; {NAME} reads regular files only"
        ));
    }
    let mut reader = BufReader::new(file.take(limits.read_bytes));
    let mut kept = CappedText::new(limits.output_bytes);
    let mut lines: u64 = 0;
    let mut bytes: u64 = 0;
    let mut in_line = false;
    loop {
        let chunk = reader.fill_buf().map_err(cannot)?;
        if chunk.is_empty() {
            break;
        }
        let length = chunk.len();
        let mut start = 0;
        while start < length {
            let rest = chunk.get(start..).unwrap_or_default();
            let (piece, ends_line) = match rest.iter().position(|byte| *byte == b'\n') {
                Some(at) => (rest.get(..=at).unwrap_or_default(), true),
                None => (rest, false),
            };
            let shown_line = lines >= window.skip && lines - window.skip < window.take;
            if shown_line {
                kept.push(piece);
            }
            in_line = !ends_line;
            if ends_line {
                lines = lines.saturating_add(1);
            }
            start = start.saturating_add(piece.len());
        }
        bytes = bytes.saturating_add(length as u64);
        reader.consume(length);
    }
    // A last line without a newline is a line.
    let total = lines.saturating_add(u64::from(in_line));
    let stopped = bytes >= limits.read_bytes && metadata.len() > bytes;
    let of_total = if stopped {
        format!(
            "of at least {total}; {NAME} stopped at its read cap of {} bytes, the file has {} \
             bytes; read the rest with `shell` (`tail`, `sed -n`)",
            limits.read_bytes,
            metadata.len()
        )
    } else {
        format!("of {total}")
    };
    if window.skip > 0 && window.skip >= total {
        return Err(if stopped {
            format!(
                "offset {} is past what {NAME} reads of {shown}: it stops at its read cap of {} \
                 bytes ({total} {}), and the file has {} bytes; read the rest with `shell` \
                 (`tail`, `sed -n`)",
                window.skip,
                limits.read_bytes,
                plural_u64(total, "line"),
                metadata.len()
            )
        } else {
            format!(
                "offset {} is past the end of {shown}, which has {total} {}",
                window.skip,
                plural_u64(total, "line")
            )
        });
    }
    let shown_count = total.saturating_sub(window.skip).min(window.take);
    let header = if total == 0 {
        format!("{shown} (empty file)\n")
    } else {
        format!(
            "{shown} (lines {}-{} {of_total})\n",
            window.skip.saturating_add(1),
            window.skip.saturating_add(shown_count)
        )
    };
    Ok(format!("{header}{}", kept.finish()))
}

fn plural_u64(count: u64, word: &str) -> String {
    plural(usize::try_from(count).unwrap_or(usize::MAX), word)
}

pub(crate) fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
