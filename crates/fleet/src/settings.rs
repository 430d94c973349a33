//! `RunSettings`: the run-wide choices that are not part of a profile (engine, direct
//! I/O, data safety, seed, cleanup, liveness). One value is built by the CLI, read by
//! every launcher and sent unchanged to every agent, so a setting cannot mean one thing
//! locally and another on a remote host. Profiles (the workload) travel separately as
//! resolved `GroupPlan`s; targets are per host.

use std::time::Duration;

use iofleet_engine::target::LayoutRequest;
use iofleet_engine::EngineSpec;
use iofleet_profile::GroupPlan;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub engine: EngineSpec,
    /// O_DIRECT.
    pub direct: bool,
    /// `--destroy-data`: devices carrying a signature may be written.
    pub destroy_data: bool,
    /// `--disk-size` was given on the command line (device targets honour it).
    pub disk_size_from_cli: bool,
    pub seed: u64,
    /// Remove the disk files (never devices) when the run ends.
    pub cleanup: bool,
    /// A host silent this long (during the run, or after its end) is marked lost.
    pub host_timeout: Duration,
    /// `--max-uploads`: copies of iofleet sent to hosts at the same time (the
    /// controller's own; agents ignore it).
    #[serde(default = "default_max_uploads")]
    pub max_uploads: u32,
    /// `--drop-caches`: empty the page cache on every host before each measurement.
    #[serde(default)]
    pub drop_caches: Option<DropCaches>,
    /// A fleet-size step (`--vary hosts=K`, `find-max --over hosts`): only the first K
    /// worker hosts run, each its share of the whole fleet's workers; None: every host.
    /// The controller's own: not sent to agents.
    #[serde(skip)]
    pub active_hosts: Option<u32>,
}

/// `--drop-caches`: how each host (workers and observers) empties its page cache before
/// a run, a sweep's step or a steady state's round, after its disks are filled and
/// before the start. It affects the whole host, not only iofleet's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DropCaches {
    /// `local`: flush dirty pages (sync), then write 3 to /proc/sys/vm/drop_caches
    /// (page cache, dentries and inodes). Needs root.
    Local,
    /// `cmd:COMMAND`: a command run with `sh -c` on each host instead (e.g. through
    /// sudo, or one that drops the caches of a storage node the workers cannot reach as
    /// root). Explicit, so that a slip such as `Local` is refused, not run as a command.
    Command(String),
}

impl std::str::FromStr for DropCaches {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        const FORMS: &str = "give `local` (needs root) or `cmd:COMMAND`, a command each host runs with sh -c (e.g. cmd:'sudo sysctl -q vm.drop_caches=3')";
        if s.trim() == "local" {
            return Ok(DropCaches::Local);
        }
        match s.trim_start().strip_prefix("cmd:") {
            Some(c) if !c.trim().is_empty() => Ok(DropCaches::Command(c.to_string())),
            Some(_) => Err(format!("--drop-caches: cmd: names no command; {FORMS}")),
            None => Err(format!("--drop-caches: {s:?} is neither form; {FORMS}")),
        }
    }
}

impl std::fmt::Display for DropCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropCaches::Local => f.write_str("local"),
            DropCaches::Command(c) => write!(f, "cmd:{c}"),
        }
    }
}

impl From<DropCaches> for String {
    fn from(d: DropCaches) -> String {
        d.to_string()
    }
}

impl TryFrom<String> for DropCaches {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// Uploads at a time unless told otherwise: enough to fill a 1-10 GbE link with a
/// binary of tens of MB while the rest of the hosts wait their turn.
pub const MAX_UPLOADS: u32 = 8;

fn default_max_uploads() -> u32 {
    MAX_UPLOADS
}

impl RunSettings {
    /// What laying out worker group `g`'s disks asks of the target, with O_DIRECT as
    /// `direct` (a run uses `self.direct`; a verify scan reads through a plain descriptor).
    pub fn layout_request(&self, g: &GroupPlan, direct: bool) -> LayoutRequest {
        let f = &g.plan.fleet;
        LayoutRequest {
            worker_base: g.worker_base,
            workers: f.workers,
            disks_per_worker: f.disks_per_worker,
            disk_size: f.disk_size.0,
            disk_size_from_cli: self.disk_size_from_cli,
            direct,
            destroy_data: self.destroy_data,
        }
    }
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            engine: EngineSpec::Auto,
            direct: true,
            destroy_data: false,
            disk_size_from_cli: false,
            seed: 1,
            cleanup: false,
            host_timeout: Duration::from_secs(30),
            max_uploads: MAX_UPLOADS,
            drop_caches: None,
            active_hosts: None,
        }
    }
}
