//! What iofleet asks of a cluster, through the user's own `kubectl`: create the fleet's
//! objects, watch its pods become Ready (naming what holds one back), read the facts
//! the result records (nodes, claims, volumes, the StorageClass), and delete the
//! objects by their names and labels and nothing else.
//!
//! Every call is one `kubectl` process with the fleet's context and namespace, in its
//! own process group (a Ctrl-C meant for the controller must not cut a deletion short).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use iofleet_stats::result::{KubePod, KubeVolume, StorageClassFacts};
use serde_json::{json, Value};

use super::{KubeFleet, Mode, FLEET_LABEL, MANAGED_BY};
use crate::agents::transport::kubectl;
use crate::host::PodAddress;

/// The container iofleet runs its agent in.
pub const CONTAINER: &str = "agent";

/// One fleet's view of its cluster.
pub struct Cluster {
    pub address: PodAddress,
    /// `iofleet-NAME`: the StatefulSet's and the Service's name.
    pub object: String,
    /// The label selector that finds the fleet's objects, and only them.
    pub selector: String,
    /// What runs the pods (the kinds to delete and look for).
    pub mode: Mode,
}

/// A pod as the wait for readiness sees it.
#[derive(Debug, Clone, Default)]
pub struct PodState {
    pub exists: bool,
    pub ready: bool,
    pub phase: String,
    /// Why its container is not running yet (`ImagePullBackOff: ...`), if it says.
    pub waiting: Option<String>,
    pub node: Option<String>,
    /// A Job's pod: its completion index (the agent's rank).
    pub index: Option<u32>,
    /// Why its container ended, when it did (`Error, exit code 137`).
    pub terminated: Option<String>,
}

/// The label a Job's pod carries with its completion index.
pub const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// The fleet's pods and claims, by name.
pub type States = (BTreeMap<String, PodState>, BTreeMap<String, ClaimState>);

/// A claim as the wait sees it.
#[derive(Debug, Clone, Default)]
pub struct ClaimState {
    pub exists: bool,
    pub bound: bool,
    pub volume: Option<String>,
    pub storage_class: Option<String>,
    pub created: Option<String>,
}

impl Cluster {
    pub fn new(fleet: &KubeFleet) -> Self {
        Cluster {
            address: PodAddress {
                context: fleet.context.clone(),
                namespace: fleet.namespace.clone(),
                container: CONTAINER.into(),
            },
            object: fleet.object_name(),
            selector: format!(
                "{}={},{FLEET_LABEL}={}",
                MANAGED_BY.0, MANAGED_BY.1, fleet.name
            ),
            mode: fleet.mode,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = kubectl(&self.address);
        c.args(args).process_group(0);
        c
    }

    /// Run `kubectl ARGS` (with `input` on its stdin): its stdout, or an error that
    /// says which call failed and what kubectl said.
    pub fn call(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let mut c = self.command(args);
        c.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("cannot run kubectl: {e}"))?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(bytes)
                .map_err(|e| format!("kubectl {}: {e}", args.join(" ")))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("kubectl {}: {e}", args.join(" ")))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(format!(
                "kubectl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    fn json(&self, args: &[&str]) -> Result<Value, String> {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let out = self.call(&a, None)?;
        serde_json::from_slice(&out)
            .map_err(|e| format!("kubectl {}: its output is not JSON ({e})", args.join(" ")))
    }

    /// Create (or update) the objects, as one `kubectl apply` of a List.
    pub fn apply(&self, objects: &[Value]) -> Result<(), String> {
        let list = json!({ "apiVersion": "v1", "kind": "List", "items": objects });
        self.call(&["apply", "-f", "-"], Some(list.to_string().as_bytes()))
            .map(drop)
    }

    /// Whether the fleet's StatefulSet (or Job) is there already (kept by an earlier
    /// run, or left by a killed one).
    pub fn exists(&self) -> Result<bool, String> {
        let kind = match self.mode {
            Mode::StatefulSet => "statefulset",
            Mode::Job => "job",
        };
        let out = self.call(
            &[
                "get",
                kind,
                &self.object,
                "--ignore-not-found",
                "-o",
                "name",
            ],
            None,
        )?;
        Ok(!String::from_utf8_lossy(&out).trim().is_empty())
    }

    /// The fleet's pods and claims, by name.
    pub fn states(&self) -> Result<States, String> {
        let list = self.json(&["get", "pods,persistentvolumeclaims", "-l", &self.selector])?;
        let mut pods = BTreeMap::new();
        let mut claims = BTreeMap::new();
        for item in list["items"].as_array().into_iter().flatten() {
            let name = text(&item["metadata"]["name"]).unwrap_or_default();
            match item["kind"].as_str() {
                Some("Pod") => {
                    pods.insert(name, pod_state(item));
                }
                Some("PersistentVolumeClaim") => {
                    claims.insert(
                        name,
                        ClaimState {
                            exists: true,
                            bound: item["status"]["phase"] == "Bound",
                            volume: text(&item["spec"]["volumeName"]),
                            storage_class: text(&item["spec"]["storageClassName"]),
                            created: text(&item["metadata"]["creationTimestamp"]),
                        },
                    );
                }
                _ => {}
            }
        }
        Ok((pods, claims))
    }

    /// The last few events of an object, oldest first, as `Reason: message`.
    pub fn events(&self, kind: &str, name: &str) -> Vec<String> {
        let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
        let Ok(list) = self.json(&["get", "events", "--field-selector", &selector]) else {
            return Vec::new();
        };
        let mut events: Vec<(String, String)> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let when = text(&e["lastTimestamp"])
                    .or_else(|| text(&e["eventTime"]))
                    .unwrap_or_default();
                let what = format!(
                    "{}: {}",
                    text(&e["reason"]).unwrap_or_default(),
                    text(&e["message"]).unwrap_or_default()
                );
                (when, what)
            })
            .collect();
        events.sort();
        let skip = events.len().saturating_sub(5);
        events.into_iter().skip(skip).map(|(_, w)| w).collect()
    }

    /// The volumes and StorageClasses behind `claims` (cluster-scoped reads, which the
    /// user may not be allowed: then what could not be read is None, with a notice).
    pub fn volume_facts(
        &self,
        claims: &BTreeMap<String, ClaimState>,
        notices: &mut Vec<String>,
    ) -> (BTreeMap<String, Value>, BTreeMap<String, StorageClassFacts>) {
        let mut volumes = BTreeMap::new();
        let names: Vec<&str> = claims
            .values()
            .filter_map(|c| c.volume.as_deref())
            .collect();
        if !names.is_empty() {
            let mut args = vec!["get", "persistentvolumes"];
            args.extend(&names);
            match self.json(&args) {
                Ok(v) => {
                    // One name gives the object, several a List.
                    let items = match v["items"].as_array() {
                        Some(items) => items.clone(),
                        None => vec![v],
                    };
                    for pv in items {
                        if let Some(n) = text(&pv["metadata"]["name"]) {
                            volumes.insert(n, pv);
                        }
                    }
                }
                Err(e) => notices.push(format!(
                    "kubernetes: the volumes could not be read, so their provisioner and time to bind are not recorded ({e})"
                )),
            }
        }
        let mut classes = BTreeMap::new();
        let wanted: std::collections::BTreeSet<&str> = claims
            .values()
            .filter_map(|c| c.storage_class.as_deref())
            .collect();
        for sc in wanted {
            match self.json(&["get", "storageclass", sc]) {
                Ok(v) => {
                    let parameters = v["parameters"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| (k.clone(), text(v).unwrap_or_else(|| v.to_string())))
                                .collect()
                        })
                        .unwrap_or_default();
                    classes.insert(
                        sc.to_string(),
                        StorageClassFacts {
                            name: sc.to_string(),
                            provisioner: text(&v["provisioner"]).unwrap_or_default(),
                            parameters,
                            reclaim_policy: text(&v["reclaimPolicy"]),
                            volume_binding_mode: text(&v["volumeBindingMode"]),
                        },
                    );
                }
                Err(e) => notices.push(format!(
                    "kubernetes: StorageClass {sc} could not be read, so it is not recorded ({e})"
                )),
            }
        }
        (volumes, classes)
    }

    /// Delete the fleet's StatefulSet (or Job and Secret) and Service (by name, waiting
    /// for its pods to go) and its claims (by the fleet's labels). Objects already gone
    /// are no error.
    pub fn delete(&self) -> Result<(), String> {
        let service = format!("service/{}", self.object);
        let (owner, secret) = match self.mode {
            Mode::StatefulSet => (format!("statefulset/{}", self.object), None),
            // The Job's pods go with it (foreground), their ephemeral claims with them.
            Mode::Job => (
                format!("job/{}", self.object),
                Some(format!("secret/{}", self.object)),
            ),
        };
        let mut args = vec!["delete", owner.as_str(), service.as_str()];
        args.extend(secret.as_deref());
        args.extend(["--ignore-not-found", "--cascade=foreground", "--wait=true"]);
        self.call(&args, None)?;
        self.call(
            &[
                "delete",
                "persistentvolumeclaims",
                "-l",
                &self.selector,
                "--ignore-not-found",
                "--wait=true",
            ],
            None,
        )?;
        Ok(())
    }

    /// What `iofleet kube clean` would remove, or removes: every object of the fleet
    /// (StatefulSet or Job and Secret, Service, pods, claims), as `kind/name`.
    pub fn leftovers(&self) -> Result<Vec<String>, String> {
        let out = self.call(
            &[
                "get",
                match self.mode {
                    Mode::StatefulSet => "statefulsets,services,pods,persistentvolumeclaims",
                    Mode::Job => "jobs,secrets,services,pods,persistentvolumeclaims",
                },
                "-l",
                &self.selector,
                "-o",
                "name",
            ],
            None,
        )?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn pod_state(item: &Value) -> PodState {
    let ready = item["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let waiting = item["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            let w = &c["state"]["waiting"];
            text(&w["reason"]).map(|r| match text(&w["message"]) {
                Some(m) => format!("{r}: {m}"),
                None => r,
            })
        });
    let terminated = item["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            let t = &c["state"]["terminated"];
            t.is_object().then(|| {
                format!(
                    "{}, exit code {}",
                    text(&t["reason"]).unwrap_or_else(|| "terminated".into()),
                    t["exitCode"]
                )
            })
        });
    PodState {
        exists: true,
        ready,
        phase: text(&item["status"]["phase"]).unwrap_or_else(|| "Pending".into()),
        waiting,
        node: text(&item["spec"]["nodeName"]),
        index: text(&item["metadata"]["labels"][INDEX_LABEL]).and_then(|i| i.parse().ok()),
        terminated,
    }
}

/// Seconds since 1970 of an RFC 3339 UTC time as the API server writes it
/// (`2026-11-26T10:04:05Z`, fractions ignored).
pub fn seconds_of(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !t.ends_with('Z') {
        return None;
    }
    let n = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let days = iofleet_profile::units::days_from_civil(n(0..4)?, n(5..7)?, n(8..10)?);
    Some(days * 86_400 + n(11..13)? * 3600 + n(14..16)? * 60 + n(17..19)?)
}

/// Each pod's facts for the result: its node and volumes, its claims in disk order.
pub fn pod_facts(
    pod_names: &[String],
    claim_of: impl Fn(u32, &str) -> String,
    disks: u32,
    pods: &BTreeMap<String, PodState>,
    claims: &BTreeMap<String, ClaimState>,
    volumes: &BTreeMap<String, Value>,
    classes: &BTreeMap<String, StorageClassFacts>,
) -> Vec<KubePod> {
    pod_names
        .iter()
        .map(|pod| KubePod {
            pod: pod.clone(),
            node: pods.get(pod).and_then(|p| p.node.clone()),
            volumes: (0..disks)
                .map(|k| {
                    let claim = claim_of(k, pod);
                    let c = claims.get(&claim).cloned().unwrap_or_default();
                    let pv = c.volume.as_ref().and_then(|v| volumes.get(v));
                    let provisioner = pv
                        .and_then(|pv| text(&pv["spec"]["csi"]["driver"]))
                        .or_else(|| {
                            pv.and_then(|pv| {
                                text(
                                    &pv["metadata"]["annotations"]
                                        ["pv.kubernetes.io/provisioned-by"],
                                )
                            })
                        })
                        .or_else(|| {
                            c.storage_class
                                .as_ref()
                                .and_then(|s| classes.get(s))
                                .map(|s| s.provisioner.clone())
                        });
                    let bound_after_s = match (
                        c.created.as_deref().and_then(seconds_of),
                        pv.and_then(|pv| text(&pv["metadata"]["creationTimestamp"]))
                            .as_deref()
                            .and_then(seconds_of),
                    ) {
                        (Some(claimed), Some(made)) if made >= claimed => {
                            Some((made - claimed) as f64)
                        }
                        _ => None,
                    };
                    KubeVolume {
                        claim,
                        volume: c.volume,
                        storage_class: c.storage_class,
                        provisioner,
                        bound_after_s,
                    }
                })
                .collect(),
            timeline: None,
        })
        .collect()
}

/// The claim a StatefulSet makes for volume template `disk-K` of pod `POD`.
pub fn claim_name(k: u32, pod: &str) -> String {
    format!("disk-{k}-{pod}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_server_times() {
        assert_eq!(seconds_of("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(seconds_of("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(seconds_of("2026-11-18T11:06:40Z"), Some(1_795_000_000));
        assert_eq!(seconds_of("2026-11-18T11:06:40.5Z"), Some(1_795_000_000));
        for bad in [
            "",
            "2026-11-18 11:06:40Z",
            "2026-11-18T11:06:40",
            "yesterday",
        ] {
            assert_eq!(seconds_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn pod_states_read_readiness_and_why_a_container_waits() {
        let p = pod_state(&json!({
            "spec": { "nodeName": "n1" },
            "status": {
                "phase": "Pending",
                "conditions": [{ "type": "Ready", "status": "False" }],
                "containerStatuses": [{ "state": { "waiting": {
                    "reason": "ImagePullBackOff", "message": "no such image" } } }],
            },
        }));
        assert!(!p.ready);
        assert_eq!(p.node.as_deref(), Some("n1"));
        assert_eq!(
            p.waiting.as_deref(),
            Some("ImagePullBackOff: no such image")
        );
        let p = pod_state(&json!({
            "status": { "phase": "Running", "conditions": [{ "type": "Ready", "status": "True" }] },
        }));
        assert!(p.ready && p.waiting.is_none());
    }
}
