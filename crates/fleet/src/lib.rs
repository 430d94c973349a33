//! The fleet: turns worker groups into running I/O, keeps every source on one
//! timeline, folds their per-interval samples and produces a `RunResult`.
//!
//! `controller::run` is the one run path. Where workers execute is a `Launcher`:
//! threads in this process (`local`), or agents on hosts reached over a transport
//! (`agents`), or on the pods of a Kubernetes fleet (`kube`). The controller never
//! touches I/O; the threads never format or lock. This crate decides *what* to run and
//! *when*; `iofleet-engine` decides *how* bytes move.

#![forbid(unsafe_code)]

pub mod agents;
mod collect;
pub mod controller;
pub mod error;
#[cfg(test)]
mod fixtures;
pub mod fleet;
pub mod host;
pub mod inventory;
pub mod kube;
pub mod launcher;
pub mod local;
pub mod observer;
pub mod plan;
pub mod precondition;
pub mod settings;
pub mod source;
pub mod sys;

pub use controller::{run, StartGate, StartNow};
pub use error::FleetError;
pub use fleet::Fleet;
pub use iofleet_engine::EngineSpec;
pub use local::run_local;
pub use observer::{Fanout, IntervalSnapshot, Observer, Phase, Silent};
pub use settings::RunSettings;
