//! Statistics that merge exactly: latency histograms, per-operation counters, per-stream
//! samples, and the summaries and result model computed from them.
//!
//! Every accumulating type implements `AddAssign<&Self>`, and that one operation is used
//! from thread to worker to host to fleet, so a cluster percentile is always read from
//! the merged histogram, never averaged from per-worker percentiles. This crate does no
//! I/O and knows nothing of engines or targets.

#![forbid(unsafe_code)]

pub mod brief;
pub mod fold;
pub mod generator;
pub mod hist;
pub mod ops;
pub mod result;
pub mod series;
pub mod slo;
pub mod steady;
pub mod summary;
pub mod usage;
pub mod validity;

pub use generator::{GenSample, GeneratorSummary, OtherLoad};
pub use hist::{LatencyHist, PackedHist};
pub use ops::{OpStats, PackedSample, Sample, StreamStats};
pub use series::Series;
pub use summary::{LatencySummary, OpSummary};
pub use usage::{
    rates_of, split_by_role, HostDisk, HostNet, HostResources, HostUsage, ScrapedRates,
    ScrapedUsage, StorageRates, StorageUsage,
};
