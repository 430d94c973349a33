//! A Kubernetes fleet: an inventory file with a `[kubernetes]` table describes the pods
//! iofleet creates to run on, each with its volumes from a StorageClass, instead of
//! listing hosts. This module reads and checks that description and makes the objects
//! from it (docs/kubernetes.md): a headless Service and a StatefulSet whose pods each
//! get the profile's `disks_per_worker` volumes from volume claim templates, spread
//! over nodes as asked, every object labelled as iofleet's and with the fleet's name.
//!
//! A StatefulSet names its pods `NAME-0`, `NAME-1`, …, so the pods (the fleet's hosts)
//! and their disks are known before anything exists: a dry run prints the manifests and
//! the placement without contacting the cluster.
//!
//! ```toml
//! [kubernetes]
//! context = "lab"                 # kubectl's --context (default: kubectl's current)
//! namespace = "bench"             # default "default"
//! name = "fio1"                   # the fleet's name: objects are iofleet-NAME
//! pods = 4                        # or pods_per_node = 2 with nodes = 3
//! storage_class = "rook-ceph-block"
//! volume_size = "20g"             # default: the profile's disk_size (see docs)
//! volume_mode = "filesystem"      # or "block"
//! access_mode = "ReadWriteOnce"
//! spread = "node"                 # "node" (one pod per node), "soft" or "none"
//! image = "debian:bookworm-slim"
//! cpu_request = "2"               # and cpu_limit, memory_request, memory_limit
//! keep = false                    # keep pods and volumes for the next run
//! bind_timeout = "5m"
//! ready_timeout = "10m"
//! [kubernetes.node_selector]
//! "node-role.kubernetes.io/worker" = ""
//! [[kubernetes.tolerations]]
//! key = "storage"
//! operator = "Exists"
//! effect = "NoSchedule"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use iofleet_profile::units::{format_duration, parse_bytes, parse_duration};
use iofleet_profile::Plan;
use serde::Deserialize;
use serde_json::{json, Value};

pub mod cluster;
pub mod job;
mod joined;
mod launcher;

pub use launcher::KubeLauncher;

/// The label every object iofleet creates carries, and its value.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "iofleet");
/// The label naming the fleet an object belongs to.
pub const FLEET_LABEL: &str = "iofleet.io/fleet";
/// The image used when the description names none: glibc (the agent is the controller's
/// own binary), a POSIX shell and coreutils (`sha256sum`, `head`, `mv`).
pub const DEFAULT_IMAGE: &str = "debian:bookworm-slim";
/// Where a filesystem volume is mounted in a pod, and where a block volume appears.
pub const MOUNT_ROOT: &str = "/iofleet";
pub const DEVICE_ROOT: &str = "/dev/iofleet";

/// How a pod sees its volumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeMode {
    /// A filesystem mounted at `/iofleet/disk-K`; the disk is a file on it.
    Filesystem,
    /// A raw block device at `/dev/iofleet/disk-K` (device-safety rules apply).
    Block,
}

impl VolumeMode {
    /// As the description writes it (and results and dry runs show it).
    pub fn name(self) -> &'static str {
        match self {
            VolumeMode::Filesystem => "filesystem",
            VolumeMode::Block => "block",
        }
    }
}

/// What runs the pods: a StatefulSet whose pods idle until iofleet executes its agent in
/// each through `kubectl exec`, or an Indexed Job whose pods run `iofleet agent --join`
/// and connect back to the command's join port (docs/kubernetes.md, "Job mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    StatefulSet,
    Job,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::StatefulSet => "statefulset",
            Mode::Job => "job",
        }
    }
}

/// Where the pods go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Spread {
    /// At most one pod per node (required pod anti-affinity on the node's hostname).
    Node,
    /// As even as the scheduler can, without refusing to schedule.
    Soft,
    /// Wherever the scheduler puts them.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toleration {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: Option<String>,
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    kubernetes: RawKube,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKube {
    mode: Option<Mode>,
    controller: Option<String>,
    listen: Option<String>,
    context: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    pods: Option<u32>,
    pods_per_node: Option<u32>,
    nodes: Option<u32>,
    storage_class: Option<String>,
    volume_size: Option<String>,
    volume_mode: Option<VolumeMode>,
    access_mode: Option<String>,
    #[serde(default)]
    node_selector: BTreeMap<String, String>,
    #[serde(default)]
    tolerations: Vec<Toleration>,
    spread: Option<Spread>,
    image: Option<String>,
    cpu_request: Option<String>,
    cpu_limit: Option<String>,
    memory_request: Option<String>,
    memory_limit: Option<String>,
    keep: Option<bool>,
    bind_timeout: Option<String>,
    ready_timeout: Option<String>,
}

/// A checked `[kubernetes]` description.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeFleet {
    /// StatefulSet (driven over `kubectl exec`) or Indexed Job (agents that join).
    pub mode: Mode,
    /// Job mode: the address the pods reach this controller's join port at
    /// (`HOST:PORT`; port 0 picks a free one).
    pub controller: Option<String>,
    /// Job mode: where the join port listens, when not at `controller` (behind NAT).
    pub listen: Option<String>,
    pub context: Option<String>,
    pub namespace: String,
    /// The fleet's name; its objects are `iofleet-NAME`.
    pub name: String,
    /// Pods in all (each is a host running one worker).
    pub pods: u32,
    /// With `pods_per_node`: the pods each node gets (spread evenly, strictly).
    pub pods_per_node: Option<u32>,
    /// None: the cluster's default StorageClass.
    pub storage_class: Option<String>,
    /// None: sized from the profile's disk size (`volume_bytes`).
    pub volume_size: Option<u64>,
    pub volume_mode: VolumeMode,
    pub access_mode: String,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub spread: Spread,
    pub image: String,
    pub cpu_request: Option<String>,
    pub cpu_limit: Option<String>,
    pub memory_request: Option<String>,
    pub memory_limit: Option<String>,
    pub keep: bool,
    pub bind_timeout: Duration,
    pub ready_timeout: Duration,
}

/// Read and check a description's text (`hosts_file::read` names the file in errors).
pub fn parse(text: &str) -> Result<KubeFleet, String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    if table.contains_key("host") || table.contains_key("defaults") {
        return Err(
            "a [kubernetes] fleet creates its own pods: remove [[host]] and [defaults]".into(),
        );
    }
    let raw: RawFile = toml::from_str(text).map_err(|e| format!("[kubernetes]: {e}"))?;
    check(raw.kubernetes)
}

/// A DNS-1123 label of at most `max` characters: lowercase letters, digits and `-`,
/// starting and ending with a letter or digit.
fn dns_label(key: &str, v: &str, max: usize) -> Result<(), String> {
    let ok = !v.is_empty()
        && v.len() <= max
        && v.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !v.starts_with('-')
        && !v.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "kubernetes.{key}: '{v}' is not a DNS label (lowercase letters, digits and '-', at most {max} characters, starting and ending with a letter or digit)"
        ))
    }
}

/// A Kubernetes resource quantity (`500m`, `2`, `1.5`, `4Gi`, `512M`, `1e3`).
fn quantity(key: &str, v: &str) -> Result<(), String> {
    const SUFFIXES: [&str; 14] = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P",
    ];
    let number_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, suffix) = v.split_at(number_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.chars().any(|c| c.is_ascii_digit());
    let suffix_ok = suffix.is_empty()
        || SUFFIXES.contains(&suffix)
        || suffix == "E"
        || (suffix.starts_with(['e', 'E']) && suffix[1..].parse::<i32>().is_ok());
    if number_ok && suffix_ok {
        Ok(())
    } else {
        Err(format!(
            "kubernetes.{key}: '{v}' is not a Kubernetes quantity (e.g. 500m, 2, 4Gi, 512M)"
        ))
    }
}

fn positive(key: &str, v: Option<u32>) -> Result<Option<u32>, String> {
    match v {
        Some(0) => Err(format!("kubernetes.{key}: must be at least 1")),
        v => Ok(v),
    }
}

fn timeout(key: &str, v: Option<String>, default: Duration) -> Result<Duration, String> {
    match v {
        None => Ok(default),
        Some(t) => match parse_duration(&t) {
            Ok(d) if !d.is_zero() => Ok(d),
            Ok(_) => Err(format!("kubernetes.{key}: must be longer than 0")),
            Err(e) => Err(format!("kubernetes.{key}: {e}")),
        },
    }
}

fn check(r: RawKube) -> Result<KubeFleet, String> {
    let namespace = r.namespace.unwrap_or_else(|| "default".into());
    dns_label("namespace", &namespace, 63)?;
    // iofleet-NAME-ORDINAL stays a valid pod name and label value (63 characters).
    let name = r.name.unwrap_or_else(|| "fleet".into());
    dns_label("name", &name, 40)?;
    let per_node = positive("pods_per_node", r.pods_per_node)?;
    let spread = r.spread.unwrap_or(Spread::Node);
    let pods = pod_count(
        positive("pods", r.pods)?,
        per_node,
        positive("nodes", r.nodes)?,
        spread,
    )?;
    if let Some(sc) = &r.storage_class {
        storage_class(sc)?;
    }
    let volume_size = volume_size(r.volume_size)?;
    let access_mode = access_mode(r.access_mode.unwrap_or_else(|| "ReadWriteOnce".into()))?;
    for (key, v) in [
        ("cpu_request", &r.cpu_request),
        ("cpu_limit", &r.cpu_limit),
        ("memory_request", &r.memory_request),
        ("memory_limit", &r.memory_limit),
    ] {
        if let Some(v) = v {
            quantity(key, v)?;
        }
    }
    tolerations(&r.tolerations)?;
    let image = r.image.unwrap_or_else(|| DEFAULT_IMAGE.into());
    if image.trim().is_empty() || image.contains(char::is_whitespace) {
        return Err(format!(
            "kubernetes.image: '{image}' is not an image reference"
        ));
    }
    let mode = r.mode.unwrap_or(Mode::StatefulSet);
    let keep = r.keep.unwrap_or(false);
    job::check_mode(mode, r.controller.as_deref(), r.listen.as_deref(), keep)?;
    Ok(KubeFleet {
        mode,
        controller: r.controller,
        listen: r.listen,
        context: r.context,
        namespace,
        name,
        pods,
        pods_per_node: per_node,
        storage_class: r.storage_class,
        volume_size,
        volume_mode: r.volume_mode.unwrap_or(VolumeMode::Filesystem),
        access_mode,
        node_selector: r.node_selector,
        tolerations: r.tolerations,
        spread,
        image,
        cpu_request: r.cpu_request,
        cpu_limit: r.cpu_limit,
        memory_request: r.memory_request,
        memory_limit: r.memory_limit,
        keep,
        bind_timeout: timeout("bind_timeout", r.bind_timeout, Duration::from_secs(300))?,
        ready_timeout: timeout("ready_timeout", r.ready_timeout, Duration::from_secs(600))?,
    })
}

/// The pods in all: `pods`, or `pods_per_node` × `nodes` (which `spread = "node"` allows
/// only at one pod per node); at most 65,536.
fn pod_count(
    pods: Option<u32>,
    per_node: Option<u32>,
    nodes: Option<u32>,
    spread: Spread,
) -> Result<u32, String> {
    let pods = match (pods, per_node, nodes) {
        (Some(p), None, None) => p,
        (None, Some(k), Some(n)) => {
            if spread == Spread::Node && k > 1 {
                return Err(format!(
                    "kubernetes.spread: \"node\" puts at most one pod on a node, but pods_per_node = {k}; use spread = \"soft\" or \"none\" (pods_per_node then spreads them evenly)"
                ));
            }
            k.checked_mul(n)
                .filter(|&p| p <= 65_536)
                .ok_or("kubernetes.pods_per_node × nodes: more than 65,536 pods")?
        }
        (None, Some(_), None) => return Err(
            "kubernetes.nodes: pods_per_node needs the number of nodes to spread over (nodes = N)"
                .into(),
        ),
        (None, None, Some(_)) => return Err("kubernetes.nodes: goes with pods_per_node".into()),
        (Some(_), Some(_), _) | (Some(_), None, Some(_)) => {
            return Err("kubernetes.pods: give pods, or pods_per_node with nodes, not both".into())
        }
        (None, None, None) => {
            return Err("kubernetes.pods: how many pods (or pods_per_node with nodes)".into())
        }
    };
    if pods > 65_536 {
        return Err("kubernetes.pods: at most 65,536".into());
    }
    Ok(pods)
}

/// A StorageClass name: a DNS subdomain.
fn storage_class(sc: &str) -> Result<(), String> {
    let ok = !sc.is_empty()
        && sc.len() <= 253
        && sc
            .split('.')
            .all(|part| dns_label("storage_class", part, 63).is_ok());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "kubernetes.storage_class: '{sc}' is not a valid StorageClass name"
        ))
    }
}

/// `volume_size` in bytes, at least 1 MiB; None: sized from the profile.
fn volume_size(v: Option<String>) -> Result<Option<u64>, String> {
    match v {
        None => Ok(None),
        Some(s) => match parse_bytes(&s) {
            Ok(b) if b.get() >= 1 << 20 => Ok(Some(b.get())),
            Ok(_) => Err("kubernetes.volume_size: at least 1m".into()),
            Err(e) => Err(format!("kubernetes.volume_size: {e}")),
        },
    }
}

/// An access mode a benchmark can write through.
fn access_mode(mode: String) -> Result<String, String> {
    if ![
        "ReadWriteOnce",
        "ReadWriteOncePod",
        "ReadWriteMany",
        "ReadOnlyMany",
    ]
    .contains(&mode.as_str())
    {
        return Err(format!(
            "kubernetes.access_mode: '{mode}' is not ReadWriteOnce, ReadWriteOncePod, ReadWriteMany or ReadOnlyMany (a benchmark writes: ReadOnlyMany is refused too)"
        ));
    }
    if mode == "ReadOnlyMany" {
        return Err("kubernetes.access_mode: ReadOnlyMany volumes cannot be written".into());
    }
    Ok(mode)
}

/// Each toleration's operator and effect, as Kubernetes knows them.
fn tolerations(tolerations: &[Toleration]) -> Result<(), String> {
    for t in tolerations {
        match t.operator.as_deref() {
            None | Some("Equal") | Some("Exists") => {}
            Some(o) => {
                return Err(format!(
                    "kubernetes.tolerations: operator '{o}' is not Equal or Exists"
                ))
            }
        }
        match t.effect.as_deref() {
            None | Some("NoSchedule") | Some("PreferNoSchedule") | Some("NoExecute") => {}
            Some(e) => {
                return Err(format!(
                    "kubernetes.tolerations: effect '{e}' is not NoSchedule, PreferNoSchedule or NoExecute"
                ))
            }
        }
    }
    Ok(())
}

impl KubeFleet {
    /// The group a Kubernetes fleet runs: one profile, one worker per pod (the
    /// profile's worker count replaced by the pods', with a notice saying so).
    pub fn group(
        &self,
        groups: &[iofleet_profile::GroupPlan],
    ) -> Result<(iofleet_profile::GroupPlan, Vec<String>), crate::FleetError> {
        let [group] = groups else {
            return Err(crate::FleetError::Input(
                "--group: a Kubernetes fleet runs one profile (one worker per pod)".into(),
            ));
        };
        let mut group = group.clone();
        let mut notices = Vec::new();
        if group.plan.fleet.workers != self.pods {
            notices.push(format!(
                "one worker per pod: running {} workers, not the profile's {}",
                self.pods, group.plan.fleet.workers
            ));
            group.plan.fleet.workers = self.pods;
        }
        Ok((group, notices))
    }

    /// The StatefulSet's (and Service's) name.
    pub fn object_name(&self) -> String {
        format!("iofleet-{}", self.name)
    }

    /// The pods' names, in order: the StatefulSet's ordinals.
    pub fn pod_names(&self) -> Vec<String> {
        (0..self.pods)
            .map(|i| format!("{}-{i}", self.object_name()))
            .collect()
    }

    /// Where a pod finds disk `k`: its volume's mount (filesystem) or device (block).
    pub fn disk_path(&self, k: u32) -> String {
        match self.volume_mode {
            VolumeMode::Filesystem => format!("{MOUNT_ROOT}/disk-{k}"),
            VolumeMode::Block => format!("{DEVICE_ROOT}/disk-{k}"),
        }
    }

    /// Each volume's size in bytes: `volume_size`, else the profile's disk size and
    /// its 4 KiB fill marker, on a filesystem with room for the filesystem's metadata
    /// too (5% and 64 MiB more); rounded up to whole MiB.
    pub fn volume_bytes(&self, disk_size: u64) -> u64 {
        const MIB: u64 = 1 << 20;
        let want = self.volume_size.unwrap_or(match self.volume_mode {
            // The device also holds the disk's fill marker after its data.
            VolumeMode::Block => disk_size + iofleet_engine::target::MARKER_LEN,
            VolumeMode::Filesystem => disk_size + disk_size / 20 + 64 * MIB,
        });
        want.div_ceil(MIB) * MIB
    }

    /// The labels every object carries.
    pub(crate) fn labels(&self) -> Value {
        json!({
            MANAGED_BY.0: MANAGED_BY.1,
            "app.kubernetes.io/name": "iofleet",
            FLEET_LABEL: self.name,
        })
    }

    /// The labels that select the fleet's pods.
    pub(crate) fn selector(&self) -> Value {
        json!({ "matchLabels": { FLEET_LABEL: self.name } })
    }

    /// The objects to create for `plan` (its `disks_per_worker` volumes per pod, of
    /// its disk size unless `volume_size` says), in the order to apply them.
    pub fn manifests(&self, plan: &Plan) -> Vec<Value> {
        let disks = plan.fleet.disks_per_worker;
        let mut meta = json!({ "name": self.object_name(), "labels": self.labels() });
        if self.namespace != "default" {
            meta["namespace"] = json!(self.namespace);
        }
        let service = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "clusterIP": "None",
                "selector": { FLEET_LABEL: self.name },
            },
        });
        if self.mode == Mode::Job {
            return vec![service, self.secret(&meta, None), self.job(meta, plan)];
        }
        let claims = self.claims(disks, plan.fleet.disk_size.get());
        vec![
            service,
            self.stateful_set(meta, self.pod_spec(disks), claims),
        ]
    }

    /// The pod's one container: the agent's image, idle, with the pod's `disks` volumes
    /// mounted (filesystem) or attached (block) and the resources asked for.
    pub(crate) fn container(&self, disks: u32) -> Value {
        let mut container = json!({
            "name": "agent",
            "image": self.image,
            // Idle until iofleet execs its agent in it (docs/kubernetes.md).
            "command": ["sleep", "infinity"],
        });
        let mounts: Vec<Value> = (0..disks)
            .map(|k| json!({ "name": format!("disk-{k}"), "mountPath": self.disk_path(k) }))
            .collect();
        let devices: Vec<Value> = (0..disks)
            .map(|k| json!({ "name": format!("disk-{k}"), "devicePath": self.disk_path(k) }))
            .collect();
        match self.volume_mode {
            VolumeMode::Filesystem => container["volumeMounts"] = json!(mounts),
            VolumeMode::Block => container["volumeDevices"] = json!(devices),
        }
        let mut resources = json!({});
        for (kind, cpu, mem) in [
            ("requests", &self.cpu_request, &self.memory_request),
            ("limits", &self.cpu_limit, &self.memory_limit),
        ] {
            let mut m = serde_json::Map::new();
            if let Some(c) = cpu {
                m.insert("cpu".into(), json!(c));
            }
            if let Some(v) = mem {
                m.insert("memory".into(), json!(v));
            }
            if !m.is_empty() {
                resources[kind] = Value::Object(m);
            }
        }
        if resources.as_object().is_some_and(|m| !m.is_empty()) {
            container["resources"] = resources;
        }
        container
    }

    /// The pods' spec: the container, where the pods may go (node selector,
    /// tolerations) and how they spread over the nodes.
    pub(crate) fn pod_spec(&self, disks: u32) -> Value {
        let mut pod_spec = json!({
            "containers": [self.container(disks)],
            // The agent ends with its session; nothing to drain.
            "terminationGracePeriodSeconds": 5,
        });
        if !self.node_selector.is_empty() {
            pod_spec["nodeSelector"] = json!(self.node_selector);
        }
        if !self.tolerations.is_empty() {
            pod_spec["tolerations"] = Value::Array(
                self.tolerations
                    .iter()
                    .map(|t| {
                        let mut v = serde_json::Map::new();
                        for (k, x) in [
                            ("key", &t.key),
                            ("operator", &t.operator),
                            ("value", &t.value),
                            ("effect", &t.effect),
                        ] {
                            if let Some(x) = x {
                                v.insert(k.into(), json!(x));
                            }
                        }
                        if let Some(s) = t.toleration_seconds {
                            v.insert("tolerationSeconds".into(), json!(s));
                        }
                        Value::Object(v)
                    })
                    .collect(),
            );
        }
        let selector = self.selector();
        let hostname = "kubernetes.io/hostname";
        match (self.spread, self.pods_per_node) {
            (Spread::Node, _) => {
                pod_spec["affinity"] = json!({
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            { "labelSelector": selector, "topologyKey": hostname }
                        ]
                    }
                });
            }
            (_, Some(_)) => {
                // pods_per_node × nodes pods, at most one apart: each node gets its share.
                // Over the nodes the pods may go to: by default (Ignore) a node whose
                // taint they do not tolerate (a control-plane node) is an empty domain
                // that holds every other node to one pod.
                pod_spec["topologySpreadConstraints"] = json!([{
                    "maxSkew": 1,
                    "topologyKey": hostname,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "nodeTaintsPolicy": "Honor",
                    "labelSelector": selector,
                }]);
            }
            (Spread::Soft, None) => {
                pod_spec["topologySpreadConstraints"] = json!([{
                    "maxSkew": 1,
                    "topologyKey": hostname,
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": selector,
                }]);
            }
            (Spread::None, None) => {}
        }
        pod_spec
    }

    /// The volume claim templates: `disks` volumes per pod, each of `volume_bytes` for a
    /// disk of `disk_size` bytes.
    pub(crate) fn claims(&self, disks: u32, disk_size: u64) -> Vec<Value> {
        let size = format!("{}Mi", self.volume_bytes(disk_size) >> 20);
        let labels = self.labels();
        (0..disks)
            .map(|k| {
                let mut spec = json!({
                    "accessModes": [self.access_mode],
                    "volumeMode": match self.volume_mode {
                        VolumeMode::Filesystem => "Filesystem",
                        VolumeMode::Block => "Block",
                    },
                    "resources": { "requests": { "storage": size } },
                });
                if let Some(sc) = &self.storage_class {
                    spec["storageClassName"] = json!(sc);
                }
                json!({
                    "metadata": { "name": format!("disk-{k}"), "labels": labels },
                    "spec": spec,
                })
            })
            .collect()
    }

    /// The StatefulSet (`meta`: its name, labels and namespace): the pods all at once,
    /// their claims, and the fleet's `keep` and timeouts as annotations, so the objects
    /// say what they were made with.
    fn stateful_set(&self, meta: Value, pod_spec: Value, claims: Vec<Value>) -> Value {
        let mut set_meta = meta;
        set_meta["annotations"] = json!({
            "iofleet.io/keep": self.keep.to_string(),
            "iofleet.io/bind-timeout": format_duration(self.bind_timeout),
            "iofleet.io/ready-timeout": format_duration(self.ready_timeout),
        });
        json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": set_meta,
            "spec": {
                "serviceName": self.object_name(),
                "replicas": self.pods,
                // Every pod at once, not one after another.
                "podManagementPolicy": "Parallel",
                "selector": self.selector(),
                "template": {
                    "metadata": { "labels": self.labels() },
                    "spec": pod_spec,
                },
                "volumeClaimTemplates": claims,
                // Volumes go with the StatefulSet unless keep = true.
                "persistentVolumeClaimRetentionPolicy": {
                    "whenDeleted": if self.keep { "Retain" } else { "Delete" },
                    "whenScaled": if self.keep { "Retain" } else { "Delete" },
                },
            },
        })
    }
}

/// The manifests as YAML documents that `kubectl apply -f -` accepts.
pub fn to_yaml(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| {
            let y = yaml_serde::to_string(d).expect("JSON values serialise as YAML");
            format!("---\n{}", y.trim_start_matches("---\n"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_and_labels() {
        for ok in ["500m", "2", "1.5", "4Gi", "512M", "1e3", "100Ki"] {
            quantity("cpu_request", ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in ["", "two", "4GB", "1..5", "-1", "Gi"] {
            let e = quantity("cpu_request", bad).unwrap_err();
            assert!(e.contains("kubernetes.cpu_request"), "{bad}: {e}");
        }
        dns_label("name", "fio-1", 40).unwrap();
        for bad in ["Fio", "-a", "a-", "a_b", ""] {
            assert!(dns_label("name", bad, 40).is_err(), "{bad}");
        }
    }

    #[test]
    fn pods_per_node_needs_nodes_and_a_spread_that_allows_it() {
        let base = "[kubernetes]\n";
        let f = parse(&format!(
            "{base}pods_per_node = 2\nnodes = 3\nspread = \"soft\"\n"
        ))
        .unwrap();
        assert_eq!(f.pods, 6);
        let e = parse(&format!("{base}pods_per_node = 2\nnodes = 3\n")).unwrap_err();
        assert!(e.contains("kubernetes.spread"), "{e}");
        let e = parse(&format!("{base}pods_per_node = 2\n")).unwrap_err();
        assert!(e.contains("kubernetes.nodes"), "{e}");
        let e = parse(&format!("{base}pods = 2\npods_per_node = 2\nnodes = 1\n")).unwrap_err();
        assert!(e.contains("kubernetes.pods"), "{e}");
    }

    #[test]
    fn volume_size_leaves_room_for_a_filesystem() {
        let mut f = parse("[kubernetes]\npods = 1\n").unwrap();
        let gib = 1u64 << 30;
        // 1 GiB + 51.2 MiB + 64 MiB, rounded up to whole MiB: 1140 MiB.
        assert_eq!(f.volume_bytes(gib), 1140 << 20);
        f.volume_mode = VolumeMode::Block;
        // The fill marker's 4 KiB after the data round up to one more MiB.
        assert_eq!(f.volume_bytes(gib), gib + (1 << 20));
        assert_eq!(f.volume_bytes(gib - 4096), gib);
        f.volume_size = Some(5 * gib);
        assert_eq!(f.volume_bytes(gib), 5 * gib);
    }
}
