//! JSON export: the `RunResult` as published in `docs/result.schema.json`.

use std::io::{self, Write};

use iofleet_stats::result::RunResult;

use crate::Exporter;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result).map_err(io::Error::other)?;
        writeln!(out)
    }
}
