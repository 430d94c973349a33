//! Exporters: one small `Exporter` trait and one module per format. Every exporter reads
//! the same `RunResult`; none of them measures or computes statistics beyond formatting
//! (the figures were merged upstream). This crate never depends on the engine.

pub mod json;
pub mod table;

use std::io::{self, Write};

use iofleet_stats::result::RunResult;

pub trait Exporter {
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

pub use json::JsonExporter;
pub use table::TableExporter;
