//! The HTTP listeners: the small HTTP/1.1 server (`http`) and who may use it
//! (`access`), shared by `run --metrics-listen` (the `/metrics` exporter, `metrics`,
//! and with `--ui` the live view, `live_web`) and `iofleet serve` (the results site,
//! `serve`), and what the live view is told of a command's rounds and steps (`step`).
//! Nothing here measures or parses a command line, and nothing here imports the
//! session (`crate::run`), which imports these.

pub mod access;
pub mod http;
pub mod live_web;
pub mod metrics;
pub mod serve;
pub mod step;
