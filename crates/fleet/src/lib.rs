//! The fleet: turns a `Plan` into running I/O threads, keeps them in step on one
//! timeline, collects their per-interval samples and produces a `RunResult`.
//!
//! `run` is the one entry point. Threads are started by a `Launcher`; today the local
//! one (threads in this process), later remote ones behind the same boundary. The
//! controller never touches I/O; the threads never format or lock. This crate decides
//! *what* to run and *when*; `iofleet-engine` decides *how* bytes move.

pub mod agent;
mod collect;
pub mod controller;
pub mod gen;
pub mod inventory;
pub mod launcher;
pub mod observer;
pub mod protocol;
pub mod remote;
pub mod sys;
pub mod thread;

pub use controller::{
    parse_sim_latency, run, run_gated, EngineChoice, FleetError, RunConfig, StartGate, StartNow,
};
pub use observer::{Fanout, IntervalSnapshot, Observer, Phase, Silent};
