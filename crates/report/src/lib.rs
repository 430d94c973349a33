//! Exporters: one small `Exporter` trait and one module per format. Every exporter reads
//! the same `RunResult`; none of them measures or computes statistics beyond formatting
//! (the figures were merged upstream). This crate never depends on the engine.
//!
//! Reports over several stored runs (`compare`, `gate`, `markdown::report`,
//! `html::report`, drawn by `charts`) take `RunData`: a run's result plus its identity
//! in the results store and its merged latency histograms. The store itself is not a
//! dependency: the binary hands the runs over.

#![forbid(unsafe_code)]

pub mod best;
pub mod browse;
pub mod charts;
pub mod compare;
pub mod convention;
pub mod csv;
pub mod figures;
pub mod fio_json;
pub mod gate;
pub mod html;
pub mod json;
pub mod kube;
pub mod markdown;
pub mod markup;
pub mod table;
pub mod text;
pub mod vms;
pub mod workload;

use std::collections::BTreeMap;
use std::io::{self, Write};

use iofleet_stats::result::RunResult;
use iofleet_stats::{LatencyHist, Series};

pub trait Exporter {
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

pub use convention::Convention;
pub use csv::CsvExporter;
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use table::TableExporter;

/// A stored run as reports see it.
#[derive(Clone, Debug)]
pub struct RunData {
    /// Short id in the results store.
    pub id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// complete, hosts-lost, interrupted, incomplete or running.
    pub status: String,
    /// Environment recorded with the run (JSON object; may be empty).
    pub environment: serde_json::Value,
    /// Figures recomputed from the stored histograms.
    pub result: RunResult,
    /// Merged fleet-wide histograms of the measured phase.
    pub read_hist: LatencyHist,
    pub write_hist: LatencyHist,
    /// The same per host (in the order of `result.hosts`) and per worker group (in
    /// the order of `result.groups`): [read, write].
    pub host_hists: Vec<[LatencyHist; 2]>,
    pub group_hists: Vec<[LatencyHist; 2]>,
    /// Per host (in the order of `result.hosts`): interval rows and CPU over time.
    pub host_series: Vec<Series>,
    /// Per worker group (in the order of `result.groups`): interval rows.
    pub group_series: Vec<Series>,
}

/// Labels that tables leave out: a campaign's fingerprint (`campaign.fp`, JSON that
/// `--resume` compares), kept in the store and in JSON output.
pub const UNSHOWN_LABELS: [&str; 1] = ["campaign.fp"];

/// `key=value` labels joined by spaces, but the [`UNSHOWN_LABELS`].
pub fn labels_text<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    labels
        .into_iter()
        .filter(|(k, _)| !UNSHOWN_LABELS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl RunData {
    /// `key=value` labels joined by spaces (but the [`UNSHOWN_LABELS`]).
    pub fn labels_text(&self) -> String {
        labels_text(&self.labels)
    }

    /// What distinguishes this run in a multi-configuration table: its labels, else its
    /// name.
    pub fn config_text(&self) -> String {
        if self.labels.is_empty() {
            self.name.clone()
        } else {
            self.labels_text()
        }
    }

    /// The stored status, with `INVALID` after it for a run below its quorum of hosts
    /// (`complete`, `hosts-lost INVALID`).
    pub fn status_text(&self) -> String {
        match self.result.validity.valid {
            true => self.status.clone(),
            false => format!("{} INVALID", self.status),
        }
    }

    /// Short title for legends: id and configuration.
    pub fn title(&self) -> String {
        format!("{} {}", self.id, self.config_text())
    }
}
