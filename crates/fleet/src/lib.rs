//! The fleet: turns worker groups into running I/O, keeps every source on one
//! timeline, folds their per-interval samples and produces a `RunResult`. This crate
//! decides *what* to run and *when*; `iofleet-engine` decides *how* bytes move. The
//! controller never touches I/O; the I/O threads never format or lock.
//!
//! `controller::run` is the one run path; where the workers execute is a `Launcher`,
//! and a command holds its launcher as a `Fleet` for every measurement it makes. The
//! files show the parts, and imports point one way, from a wing to what it builds on
//! (no module imports one that imports it back: `crates/cli/tests/house_rules.rs`):
//!
//! ```text
//!   kube/ ──▶ agents/ ──▶ local/ ──▶ the core (the files at the top)
//!               └──▶ inventory/ ──────▶
//! ```
//!
//! - **The core**, below every wing. Types that every part shares: `error`
//!   (`FleetError`), `settings` (`RunSettings`), `host` (a host, where its disks are
//!   and how to reach it), `plan` (what a run will do: `LaunchPlan` and each launcher's
//!   half), `source` (what a source tells the collector), `observer`, `precondition`
//!   (what preconditioning reports). The run path over them: `launcher` (the seam),
//!   `controller` (plan, materialize, one start instant, collect, finish), `collect`
//!   (the one fold of intervals into a result), `fleet` (a launcher as a command holds
//!   it), `sys` (this host's clock, CPUs, devices and usage), `storage` (what the
//!   storage processes or cgroups an observer watches spend).
//! - **`local/`**: workers as I/O threads of this process (`ThreadLauncher`, and
//!   `run_local`): the lanes and their loop, the stream generator, filling and
//!   preconditioning disks, the verify journals, the memory a plan needs.
//! - **`agents/`**: workers as an `iofleet agent` per host (`AgentLauncher`): the hosts'
//!   plan (each host's share), the agent itself (which runs its share with the local
//!   wing), the wire protocol, the transports that run a script on a host (`ssh`,
//!   `local`, `kubectl`), and `join/`: the command's join port, where agents any
//!   launcher started connect back over TLS and are held as sockets.
//! - **`inventory/`**: `--hosts` inventories (iofleet's TOML, Ansible INI and YAML) read
//!   into hosts, and their errors.
//! - **`kube/`**: a Kubernetes fleet: its description, the objects made from it, the
//!   cluster's state through `kubectl`, and `KubeLauncher`, which creates the pods once
//!   per command and runs on them through the agents' wing.

#![forbid(unsafe_code)]

pub mod agents;
mod collect;
pub mod controller;
pub mod error;
#[cfg(test)]
mod fixtures;
pub mod fleet;
pub mod host;
pub mod hosts_file;
pub mod inventory;
pub mod kube;
pub mod launcher;
pub mod local;
pub mod observer;
pub mod plan;
pub mod precondition;
pub mod relay;
pub mod scrape;
pub mod settings;
pub mod source;
pub mod storage;
pub mod sys;
pub mod vms;

pub use controller::{run, StartGate, StartNow};
pub use error::FleetError;
pub use fleet::Fleet;
pub use iofleet_engine::EngineSpec;
pub use local::run_local;
pub use observer::{Fanout, IntervalSnapshot, Observer, Phase, Silent};
pub use settings::RunSettings;
