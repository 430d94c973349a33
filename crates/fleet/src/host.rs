//! A host of the fleet as every part of the crate sees it: its name, how to reach it,
//! where its disks are (`TargetArg`, as an agent is told) and what it does in a run.
//! The readers (`inventory`, `kube`) make hosts, the agents' launcher places work on
//! them and reaches them (`agents::transport`); this module only says what a host is,
//! so it sits below all of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where an agent's disks live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TargetArg {
    Dir(String),
    /// Several directories, the disks in turn over them (`TargetSpec::Dirs`).
    Dirs(Vec<String>),
    Devices(Vec<String>),
}

impl TargetArg {
    /// Paths on a host as its target: one directory, several directories (none under
    /// /dev/), else block devices. None without a path.
    pub fn from_paths(mut paths: Vec<String>) -> Option<TargetArg> {
        let devices = paths.iter().any(|p| p.starts_with("/dev/"));
        Some(match paths.len() {
            0 => return None,
            _ if devices => TargetArg::Devices(paths),
            1 => TargetArg::Dir(paths.remove(0)),
            _ => TargetArg::Dirs(paths),
        })
    }

    /// This target with `sub` under each of its directories; devices as they are.
    pub fn under(&self, sub: &str) -> TargetArg {
        let join = |d: &String| format!("{}/{sub}", d.trim_end_matches('/'));
        match self {
            TargetArg::Dir(d) => TargetArg::Dir(join(d)),
            TargetArg::Dirs(v) => TargetArg::Dirs(v.iter().map(join).collect()),
            TargetArg::Devices(v) => TargetArg::Devices(v.clone()),
        }
    }
}

/// How the controller reaches a host's agent: each way with what it needs, so a host
/// reached over ssh has its options and a pod its address, and nothing else does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The system OpenSSH client to the host's `destination`, with these extra
    /// arguments (the inventory's `[ssh] options`, then the host's own `ssh_options`;
    /// Ansible's `ansible_port` and `ansible_ssh_private_key_file`).
    Ssh { options: Vec<String> },
    /// A child process of the controller on this machine (`transport = "local"`).
    Local,
    /// `kubectl exec` into the pod the host's `destination` names, at this address: the
    /// pods of a Kubernetes fleet, which `crate::kube` creates (an inventory cannot name
    /// it).
    Kubectl(PodAddress),
    /// An agent that joined the command's join port (`agents::join`): the rank it
    /// holds, and its member id on that port.
    Joined { rank: u32, member: u64 },
}

impl Reach {
    /// How the way is named in inventories and messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Reach::Ssh { .. } => "ssh",
            Reach::Local => "local",
            Reach::Kubectl(_) => "kubectl",
            Reach::Joined { .. } => "join",
        }
    }
}

/// Where `kubectl exec` finds a pod: the kubeconfig context (None: kubectl's current),
/// namespace and container; the pod is the host's `destination`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAddress {
    pub context: Option<String>,
    pub namespace: String,
    pub container: String,
}

/// What a host does in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// It runs its share of the fleet's workers (the default).
    #[default]
    Workers,
    /// It runs no I/O: its agent reports the host's CPU, memory, network and disks per
    /// interval, e.g. for a storage node of the system under test.
    Observer,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    pub name: String,
    pub destination: String,
    pub target: TargetArg,
    pub workers: Option<u32>,
    pub labels: BTreeMap<String, String>,
    pub iofleet_path: Option<String>,
    /// How the controller reaches the host.
    pub reach: Reach,
    /// Workers, or an observer. An observer's `target` names what it watches: the
    /// devices listed, or the device under a directory; an empty device list (no target
    /// given) watches every disk of the host.
    pub role: Role,
    /// An observer's storage software to watch (`observe`: process names,
    /// `cmdline:TEXT`, `cgroup:/PATH`; see `crate::storage`). Empty elsewhere.
    pub observe: Vec<String>,
    /// An observer's storage exporter to scrape each interval (`scrape`, `metrics` or
    /// `preset`; see `crate::scrape`). None elsewhere.
    pub scrape: Option<crate::scrape::ScrapeSpec>,
}
