//! Iometer configuration files (.icf) as iofleet workloads (docs/iometer.md): `parse`
//! reads the file's grammar (its version line, the test setup, the access
//! specifications and the manager list with each worker's settings, specifications and
//! targets); `map` turns each access specification the workers run into a step, the
//! raw profile of the file's workers, with a notice for every setting that does not
//! change the I/O and an error naming the file and line of each one iofleet cannot run.
//!
//! The grammar and the meaning of each field follow Iometer's own source (1.1.0: the
//! code that saves and loads configuration files) and its user guide. Like `vdbench`,
//! this module knows nothing about engines or targets: the targets' names come back as
//! plain values for the CLI to report.

mod map;
mod parse;

use std::path::Path;

pub use map::{import, IometerImport, IometerStep, MAX_STEPS};
pub use parse::{parse_text, Icf, Manager, Pair, Spec, SpecLine, Target, Worker, SPEC_HEADING};

pub use crate::problem::Problem;

use crate::fio::Location;
use thiserror::Error;

/// Why a configuration file could not be read or mapped.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum IometerError {
    #[error("cannot read Iometer configuration file {path}: {message}")]
    Read { path: String, message: String },
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    #[error("{0}")]
    NoSteps(String),
    /// Every setting iofleet cannot run, each with its file, line and name.
    #[error("{}", crate::problem::problems_text("Iometer", "setting", .0, "docs/iometer.md"))]
    Unsupported(Vec<Problem>),
}

impl IometerError {
    pub(crate) fn syntax(at: &Location, message: impl Into<String>) -> Self {
        IometerError::Syntax {
            at: at.clone(),
            message: message.into(),
        }
    }
}

/// Read and map the text of a configuration file named `file` (for locations); `only`
/// names the access specifications to run instead of those the workers are assigned.
pub fn read_text(text: &str, file: &str, only: &[String]) -> Result<IometerImport, IometerError> {
    import(&parse_text(text, file)?, only)
}

/// Read and map the configuration file at `path` through `read` (the CLI's reader,
/// which names the file in its errors).
pub fn read_file_with(
    path: &Path,
    only: &[String],
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<IometerImport, IometerError> {
    let text = read(path).map_err(|e| IometerError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    read_text(&text, &path.display().to_string(), only)
}

/// The Iometer setting a profile key comes from, to name beside a profile error.
pub fn parameter_of_key(key: &str) -> Option<&'static str> {
    let last = key.rsplit('.').next().unwrap_or(key);
    Some(match last {
        "workers" => "the managers whose disk workers have targets and access specifications",
        "disks_per_worker" => "the targets of a manager's workers",
        "threads_per_disk" => "the Iometer workers on each target",
        "disk_size" => "Disk maximum size (512-byte sectors)",
        "qd" => "Number of outstanding IOs",
        "warmup" => "Ramp Up Time",
        "duration" => "Run Time",
        "rate_iops" => "delay and burst",
        "bs" => "size and % of size",
        "read_pct" => "% reads",
        "random_pct" => "% random",
        "align" => "align",
        "weight" => "% of size",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
