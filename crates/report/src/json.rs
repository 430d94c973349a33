//! JSON export: the `RunResult` as published in `docs/result.schema.json`, with the
//! figures derived from it that the schema also promises: `summary.median_interval` and
//! `summary.peak_interval` (from `intervals`), and, when a published-report convention
//! is asked for, a top-level `convention` block (`convention::Convention::to_json`).
//!
//! The result's fields are listed here by destructuring `RunResult` and `RunSummary`
//! without `..`, so a field added to either does not compile until it is exported too,
//! and the order of the keys stays that of the types.

use std::io::{self, Write};

use serde::Serialize;

use iofleet_stats::result::{IntervalPoint, RunResult, RunSummary};

use crate::convention::Convention;
use crate::Exporter;

pub struct JsonExporter;

impl JsonExporter {
    /// The result, with the convention's figures when it is not `Exact`.
    pub fn export_in(
        &self,
        result: &RunResult,
        convention: Convention,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, &published(result, convention))
            .map_err(io::Error::other)?;
        writeln!(out)
    }
}

impl Exporter for JsonExporter {
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        self.export_in(result, Convention::Exact, out)
    }
}

/// The exported JSON as a value (tests and callers that add to it).
pub fn to_value(result: &RunResult, convention: Convention) -> serde_json::Value {
    serde_json::to_value(published(result, convention)).unwrap_or(serde_json::Value::Null)
}

fn is_none<T>(o: &&Option<T>) -> bool {
    o.is_none()
}

#[derive(Serialize)]
struct Published<'a> {
    schema_version: u32,
    stored: &'a Option<iofleet_stats::result::StoredRun>,
    run: &'a iofleet_stats::result::RunInfo,
    summary: Summary<'a>,
    streams: &'a Vec<iofleet_stats::result::StreamSummary>,
    intervals: &'a Vec<iofleet_stats::result::IntervalRow>,
    workers: &'a Vec<iofleet_stats::result::WorkerSummary>,
    hosts: &'a Vec<iofleet_stats::result::HostSummary>,
    groups: &'a Vec<iofleet_stats::result::GroupSummary>,
    host_intervals: &'a Vec<iofleet_stats::result::PartIntervals>,
    group_intervals: &'a Vec<iofleet_stats::result::PartIntervals>,
    notices: &'a Vec<String>,
    #[serde(skip_serializing_if = "is_none")]
    steady_state: &'a Option<iofleet_stats::steady::SteadyState>,
    validity: &'a iofleet_stats::result::Validity,
    #[serde(skip_serializing_if = "Option::is_none")]
    convention: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct Summary<'a> {
    all: &'a iofleet_stats::OpSummary,
    read: &'a iofleet_stats::OpSummary,
    write: &'a iofleet_stats::OpSummary,
    iops_median_interval: Option<f64>,
    median_interval: Option<IntervalPoint>,
    peak_interval: Option<IntervalPoint>,
    outstanding_io: &'a iofleet_stats::result::Outstanding,
    cpu: &'a Option<iofleet_stats::result::CpuSummary>,
    memory: &'a Option<iofleet_stats::result::MemorySummary>,
    errors: &'a iofleet_stats::result::ErrorSummary,
    generator: &'a Option<iofleet_stats::GeneratorSummary>,
    #[serde(skip_serializing_if = "is_none")]
    verify: &'a Option<iofleet_stats::result::VerifySummary>,
    #[serde(skip_serializing_if = "is_none")]
    net: &'a Option<iofleet_stats::HostNet>,
    #[serde(skip_serializing_if = "is_none")]
    observers: &'a Option<iofleet_stats::HostResources>,
}

fn published(r: &RunResult, convention: Convention) -> Published<'_> {
    let RunResult {
        schema_version,
        stored,
        run,
        summary,
        streams,
        intervals,
        workers,
        hosts,
        groups,
        host_intervals,
        group_intervals,
        notices,
        steady_state,
        validity,
    } = r;
    let RunSummary {
        all,
        read,
        write,
        iops_median_interval,
        outstanding_io,
        cpu,
        memory,
        errors,
        generator,
        verify,
        net,
        observers,
    } = summary;
    let headline = r.interval_headline();
    Published {
        schema_version: *schema_version,
        stored,
        run,
        summary: Summary {
            all,
            read,
            write,
            iops_median_interval: *iops_median_interval,
            median_interval: headline.median_interval,
            peak_interval: headline.peak_interval,
            outstanding_io,
            cpu,
            memory,
            errors,
            generator,
            verify,
            net,
            observers,
        },
        streams,
        intervals,
        workers,
        hosts,
        groups,
        host_intervals,
        group_intervals,
        notices,
        steady_state,
        validity,
        convention: (convention != Convention::Exact).then(|| convention.to_json(r)),
    }
}
