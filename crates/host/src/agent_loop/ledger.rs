//! The window ledger's writer and reader: the line types, their parsing and the printed
//! lines are `panewise_core::agent_loop::ledger`'s; this module writes them to the file
//! beside the session log, one whole line per write, and reads the file back.

use std::io::Write;
use std::path::{Path, PathBuf};

use panewise_protocol::SessionStats;
use panewise_providers::PriceTable;
use panewise_window::{openai, Message, WindowRecord};

pub use panewise_core::agent_loop::ledger::*;

/// Reads the ledger at `path` (at most [`crate::regular_file::MAX_READ_BYTES`]; a FIFO or a
/// device is refused, not waited on).
pub fn read(path: &Path) -> std::io::Result<Ledger> {
    let bytes = crate::regular_file::read_capped(path, crate::regular_file::MAX_READ_BYTES)
        .map_err(crate::regular_file::FileError::into_io)?;
    Ok(Ledger::parse(&String::from_utf8_lossy(&bytes)))
}

/// A ledger being written.
pub struct WindowLedger {
    file: Box<dyn Write + Send>,
    path: PathBuf,
}

impl std::fmt::Debug for WindowLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowLedger")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl WindowLedger {
    /// Creates the ledger at `path`, which must not exist yet, mode 0600 (it holds the
    /// conversation).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            file: Box::new(crate::journal::files::create_new_private(path)?),
            path: path.to_path_buf(),
        })
    }

    /// Where it is written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a message given to the conversation.
    pub fn message(&mut self, message: &Message) -> std::io::Result<()> {
        self.line(&LedgerLine::Message {
            message: openai::to_value(message),
        })
    }

    /// Appends an engaged visit's record.
    pub fn visit(&mut self, record: &WindowRecord) -> std::io::Result<()> {
        self.line(&LedgerLine::Visit {
            record: Box::new(record.clone()),
        })
    }

    /// Appends a visit that did not engage, with the reading and the threshold it was held
    /// to.
    pub fn idle(
        &mut self,
        iteration: u32,
        strategy: &str,
        measured_tokens: Option<u64>,
        threshold_tokens: Option<u64>,
    ) -> std::io::Result<()> {
        self.line(&LedgerLine::Idle {
            iteration,
            strategy: strategy.to_owned(),
            measured_tokens,
            threshold_tokens,
            floor_tokens: None,
        })
    }

    /// Appends one line, written whole and flushed.
    pub fn write(&mut self, line: &LedgerLine) -> std::io::Result<()> {
        self.line(line)
    }

    /// Appends the end of a model call: `iteration` as the loop counts it, the `model` that
    /// answered and the call's `stats` as `ProviderEvent::CallEnded` carries them, priced by
    /// kind with `prices` (the table the transport priced the call with, so the split adds up
    /// to the call's `cost_usd`).
    pub fn call(
        &mut self,
        iteration: u32,
        model: Option<&str>,
        stats: &SessionStats,
        prices: &PriceTable,
    ) -> std::io::Result<()> {
        self.line(&call_entry(iteration, model, stats, prices))
    }

    fn line(&mut self, line: &LedgerLine) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        // One write per line, flushed: a crash loses at most the line being written.
        self.file.write_all(&bytes)?;
        self.file.flush()
    }
}
