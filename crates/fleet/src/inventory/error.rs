//! What reading a `--hosts` file can fail with: the file and, when known, the line and
//! key to fix, or a bad `IOFLEET_INVENTORY_READER`. Its own module, below the readers
//! (TOML, INI, `ansible-inventory`) and the Kubernetes description (`crate::kube`),
//! which all report through it.

use std::path::PathBuf;

/// The environment variable that chooses how non-TOML inventories are read.
pub const READER_ENV: &str = "IOFLEET_INVENTORY_READER";

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// A problem with the inventory, at a line when one is known.
    #[error("--hosts {}{}: {message}", file.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    File {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("{READER_ENV}={0}: expected auto, native or ansible-inventory")]
    Reader(String),
}
