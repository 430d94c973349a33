//! Workload-independent preconditioning (SNIA SSS PTS): every disk of a plan written
//! twice over with 128 KiB sequential writes of random data, and no measured phase. A
//! launcher operation (`Launcher::precondition`), so it runs where a run would: on this
//! host's target, or on every host of an inventory, each host on its share of the disks.
//! After the second pass each disk carries the fill marker of a random fill, so a run
//! that prepares with random data reuses it instead of filling again. This module says
//! what preconditioning is and what it reports (`Preconditioned`, which an agent sends
//! back in its `Done`); the writing is the in-process wing's (`local::fill`).

use serde::{Deserialize, Serialize};

/// Passes over every disk (SNIA: twice the capacity).
pub const PASSES: u32 = 2;

/// What preconditioning wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preconditioned {
    pub disks: Vec<DiskWritten>,
    /// Wall time of the longest host, s.
    pub seconds: f64,
    /// Every pass of every disk finished (false: stopped; disks carry no marker).
    pub complete: bool,
    /// What the user should know (per host, prefixed with its name).
    #[serde(default)]
    pub notices: Vec<String>,
}

impl Preconditioned {
    /// Several hosts' outcomes as one: every disk, the longest time, complete only if
    /// every host completed.
    pub fn merge(parts: impl IntoIterator<Item = Preconditioned>) -> Preconditioned {
        let mut all = Preconditioned {
            complete: true,
            ..Default::default()
        };
        for p in parts {
            all.disks.extend(p.disks);
            all.seconds = all.seconds.max(p.seconds);
            all.complete &= p.complete;
            all.notices.extend(p.notices);
        }
        all
    }
}

/// One disk's share of the writing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskWritten {
    pub host: String,
    pub worker: u32,
    pub disk: u32,
    pub path: String,
    pub region_offset: u64,
    pub size: u64,
    pub bytes_written: u64,
}
