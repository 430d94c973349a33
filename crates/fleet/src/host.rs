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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    Ssh,
    Local,
    /// `kubectl exec` into a pod of a Kubernetes fleet (`crate::kube`), which creates
    /// these hosts itself: an inventory cannot name it.
    #[serde(skip)]
    Kubectl,
}

/// Where `kubectl exec` finds a pod: the kubeconfig context (None: kubectl's current)
/// and namespace; the pod is the host's `destination`.
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
    pub transport: TransportKind,
    /// Extra arguments for `ssh` (inventory-wide options, then per-host ones).
    pub ssh_options: Vec<String>,
    /// Workers, or an observer. An observer's `target` names what it watches: the
    /// devices listed, or the device under a directory; an empty device list (no target
    /// given) watches every disk of the host.
    pub role: Role,
    /// With the `kubectl` transport: the pod's context, namespace and container.
    pub pod: Option<PodAddress>,
}
