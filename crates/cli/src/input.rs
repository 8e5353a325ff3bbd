//! Where a subcommand's input comes from: a file, or standard input for `-`.

use std::io::Read;
use std::path::Path;

/// Opens `path` for reading, or standard input for `-`.
pub fn open(path: &Path) -> std::io::Result<Box<dyn Read>> {
    if path.as_os_str() == "-" {
        Ok(Box::new(std::io::stdin()))
    } else {
        Ok(Box::new(std::fs::File::open(path)?))
    }
}

/// Reads all of `path`, or of standard input for `-`: for inputs needed whole (a conversation
/// to window).
pub fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}
