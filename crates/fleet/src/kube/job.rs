//! Job mode (`mode = "job"`): the fleet's pods are the pods of an Indexed Job, each
//! running `iofleet agent --join` and connecting back to the command's join port, so the
//! controller holds one socket per pod and no `kubectl exec` process at all.
//!
//! The objects, in the order they are applied:
//! - the headless **Service** `iofleet-NAME`: the pods' stable names
//!   (`iofleet-NAME-K.iofleet-NAME`, the Job's pod host names under its subdomain);
//! - the **Secret** `iofleet-NAME`: the join address (`join`) and the command's token
//!   (`token`), which reach the agent as environment variables from `secretKeyRef`, so
//!   the token is never on a command line or in the Job;
//! - the **Job** `iofleet-NAME`: `completionMode: Indexed`, completions = parallelism =
//!   pods, `backoffLimitPerIndex: 0` with `maxFailedIndexes` = pods and `restartPolicy:
//!   Never` (a failed pod is a lost host: its index is not retried, and the other pods
//!   go on), one generic ephemeral volume per disk (`volumes[].ephemeral`), a claim per
//!   pod and volume made and deleted with the pod, and the same node selection,
//!   tolerations and spread as the StatefulSet mode. Each pod's rank is its completion
//!   index (`JOB_COMPLETION_INDEX`, which Kubernetes sets).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{KubeFleet, Mode, VolumeMode};
use crate::host::{HostSpec, Reach, Role, TargetArg};

/// The Secret's keys: the join address and the token.
pub const SECRET_JOIN: &str = "join";
pub const SECRET_TOKEN: &str = "token";
/// What a dry run's Secret says in place of what only a run makes.
pub const NOT_YET: &str = "(made when the run starts)";

/// The API server's own limit on an Indexed Job's parallelism (10^5, kubernetes#98812),
/// and the soft limit its validation sets for high completion counts: more than 10^5
/// completions with a parallelism over 10^4 (KEP-2214 "Indexed Job"). The warning's
/// words are iofleet's.
pub const MAX_INDEXED_PARALLELISM: u32 = 100_000;
const WARN_COMPLETIONS: u32 = 100_000;
const WARN_PARALLELISM: u32 = 10_000;

/// The warning the API server gives for an Indexed Job of `completions` and
/// `parallelism`, if any.
pub fn api_warning(completions: u32, parallelism: u32) -> Option<String> {
    (completions > WARN_COMPLETIONS && parallelism > WARN_PARALLELISM).then(|| {
        format!(
            "kubernetes: an Indexed Job of {completions} completions with parallelism {parallelism} is past the API server's soft limit for Indexed Jobs (over 100,000 completions with over 10,000 in parallel)"
        )
    })
}

/// The keys that only mean something in one mode.
pub(super) fn check_mode(
    mode: Mode,
    controller: Option<&str>,
    listen: Option<&str>,
    keep: bool,
) -> Result<(), String> {
    match mode {
        Mode::StatefulSet => {
            if controller.is_some() || listen.is_some() {
                return Err(format!(
                    "kubernetes.{}: only mode = \"job\" has pods that join a controller (the StatefulSet mode reaches its pods through kubectl exec)",
                    if controller.is_some() { "controller" } else { "listen" }
                ));
            }
        }
        Mode::Job => {
            let Some(c) = controller else {
                return Err("kubernetes.controller: mode = \"job\" needs the address the pods reach this controller at, HOST:PORT (e.g. \"10.0.0.5:7070\")".into());
            };
            host_port("controller", c)?;
            if let Some(l) = listen.filter(|l| l.parse::<std::net::SocketAddr>().is_err()) {
                return Err(format!(
                    "kubernetes.listen: '{l}' is not an address and port (e.g. 0.0.0.0:7070)"
                ));
            }
            if keep {
                return Err("kubernetes.keep: a Job's pods end with the command's agents, so nothing can be kept; use mode = \"statefulset\" to keep pods and volumes".into());
            }
        }
    }
    Ok(())
}

/// `HOST:PORT` (a name, an IPv4 address or a bracketed IPv6 address, and a port).
fn host_port(key: &str, v: &str) -> Result<(), String> {
    let ok = v.rsplit_once(':').is_some_and(|(h, p)| {
        !h.is_empty() && p.parse::<u16>().is_ok() && !h.contains(char::is_whitespace)
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "kubernetes.{key}: '{v}' is not HOST:PORT (e.g. \"10.0.0.5:7070\")"
        ))
    }
}

impl KubeFleet {
    /// Where the join port listens and the host its address names: `listen` when given,
    /// else `controller` itself when it is an IP address, else every address on its port
    /// (a host name is advertised, not bound).
    pub fn join_endpoints(&self) -> (String, String) {
        let controller = self.controller.clone().unwrap_or_default();
        let (host, port) = controller
            .rsplit_once(':')
            .map(|(h, p)| (h.to_string(), p.to_string()))
            .unwrap_or_default();
        let listen = match &self.listen {
            Some(l) => l.clone(),
            None if controller.parse::<std::net::SocketAddr>().is_ok() => controller.clone(),
            None => format!("0.0.0.0:{port}"),
        };
        (listen, host)
    }

    /// The command line's `--listen` (where the join port listens) and `--advertise`
    /// (the host the pods reach it at), over the description's `listen` and
    /// `controller`. Only Job mode's pods join.
    pub fn join_at(&mut self, listen: Option<&str>, advertise: Option<&str>) -> Result<(), String> {
        if self.mode != Mode::Job {
            return Err(
                "--listen: only a fleet in Job mode (mode = \"job\") has pods that join".into(),
            );
        }
        if let Some(l) = listen {
            if l.parse::<std::net::SocketAddr>().is_err() {
                return Err(format!(
                    "--listen {l:?}: not an address and port (e.g. 0.0.0.0:7070)"
                ));
            }
            self.listen = Some(l.to_string());
        }
        if let Some(host) = advertise {
            let port = self
                .listen
                .as_deref()
                .or(self.controller.as_deref())
                .and_then(|a| a.rsplit_once(':'))
                .map_or("0", |(_, p)| p)
                .to_string();
            self.controller = Some(format!("{host}:{port}"));
        }
        Ok(())
    }

    /// The Secret the agents read the join address and token from; `joined` is the
    /// run's (address, token), None for a dry run.
    pub fn secret(&self, meta: &Value, joined: Option<(&str, &str)>) -> Value {
        let (join, token) = match joined {
            Some((j, t)) => (j.to_string(), t.to_string()),
            None => (
                format!(
                    "iofleet://{}/{NOT_YET}",
                    self.controller.as_deref().unwrap_or("")
                ),
                NOT_YET.to_string(),
            ),
        };
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": "Opaque",
            "stringData": { SECRET_JOIN: join, SECRET_TOKEN: token },
        })
    }

    /// The agent's container: `iofleet agent --join` with the address and the token
    /// from the Secret, its disks' paths as its targets.
    fn agent_container(&self, disks: u32) -> Value {
        let mut c = self.container(disks);
        let mut args = vec![
            "agent".to_string(),
            "--join".into(),
            // Expanded by the kubelet from the container's environment.
            "$(IOFLEET_JOIN)".into(),
        ];
        for k in 0..disks {
            args.push("--target".into());
            args.push(self.disk_path(k));
        }
        c["command"] = json!(["iofleet"]);
        c["args"] = json!(args);
        let from_secret = |var: &str, key: &str| {
            json!({ "name": var, "valueFrom": { "secretKeyRef": {
                "name": self.object_name(), "key": key } } })
        };
        c["env"] = json!([
            from_secret("IOFLEET_JOIN", SECRET_JOIN),
            from_secret("IOFLEET_JOIN_TOKEN", SECRET_TOKEN),
        ]);
        c
    }

    /// The Indexed Job: its pods, their ephemeral volumes, no retries.
    pub(super) fn job(&self, meta: Value, plan: &iofleet_profile::Plan) -> Value {
        let disks = plan.fleet.disks_per_worker;
        let mut pod = self.pod_spec(disks);
        pod["containers"] = json!([self.agent_container(disks)]);
        pod["restartPolicy"] = json!("Never");
        pod["subdomain"] = json!(self.object_name());
        let volumes: Vec<Value> = self
            .claims(disks, plan.fleet.disk_size.get())
            .into_iter()
            .map(|c| {
                let name = c["metadata"]["name"].clone();
                json!({
                    "name": name,
                    "ephemeral": { "volumeClaimTemplate": {
                        "metadata": { "labels": c["metadata"]["labels"] },
                        "spec": c["spec"],
                    } },
                })
            })
            .collect();
        pod["volumes"] = json!(volumes);
        let mut job_meta = meta;
        job_meta["annotations"] = json!({
            "iofleet.io/bind-timeout": iofleet_profile::units::format_duration(self.bind_timeout),
            "iofleet.io/ready-timeout": iofleet_profile::units::format_duration(self.ready_timeout),
        });
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": job_meta,
            "spec": {
                "completionMode": "Indexed",
                "completions": self.pods,
                "parallelism": self.pods,
                // A failed pod is a lost host: its index is not retried and the Job's
                // other pods go on.
                "backoffLimitPerIndex": 0,
                "maxFailedIndexes": self.pods,
                "template": {
                    "metadata": { "labels": self.labels() },
                    "spec": pod,
                },
            },
        })
    }

    /// The name of the claim Kubernetes makes for ephemeral volume `disk-K` of `pod`.
    pub fn ephemeral_claim(pod: &str, k: u32) -> String {
        format!("{pod}-disk-{k}")
    }

    /// Whether a block volume: the agent's targets are devices.
    pub fn block(&self) -> bool {
        self.volume_mode == VolumeMode::Block
    }
}

/// A minimal Containerfile for the pods' image in Job mode: a glibc base and this very
/// iofleet (the agent must run the controller's agent protocol; the join refuses any
/// other).
pub fn containerfile() -> String {
    let v = env!("CARGO_PKG_VERSION");
    format!(
        "# The image of an iofleet Kubernetes fleet in Job mode (docs/kubernetes.md): iofleet {v},\n\
         # the same version as the controller's (the join refuses an agent of another protocol).\n\
         # Build it where this iofleet binary is:\n\
         #   cp \"$(command -v iofleet)\" . && podman build -t REGISTRY/iofleet:{v} .\n\
         # then name it in the fleet's description: image = \"REGISTRY/iofleet:{v}\".\n\
         FROM {base}\n\
         COPY iofleet /usr/local/bin/iofleet\n\
         RUN [\"/usr/local/bin/iofleet\", \"--version\"]\n\
         ENTRYPOINT [\"/usr/local/bin/iofleet\"]\n",
        base = super::DEFAULT_IMAGE
    )
}

/// The fleet's pods as the dry run and the plan see them: one per rank, named by the
/// host name Kubernetes gives an Indexed Job's pod (`JOB-INDEX`), reached by its join.
pub(super) fn planned_hosts(fleet: &KubeFleet, disks: u32) -> Vec<HostSpec> {
    (0..fleet.pods)
        .map(|rank| {
            joined_host(
                fleet,
                disks,
                format!("{}-{rank}", fleet.object_name()),
                rank,
                0,
                "joins".into(),
            )
        })
        .collect()
}

pub(super) fn joined_host(
    fleet: &KubeFleet,
    disks: u32,
    name: String,
    rank: u32,
    member: u64,
    destination: String,
) -> HostSpec {
    let paths: Vec<String> = (0..disks).map(|k| fleet.disk_path(k)).collect();
    let mut labels = BTreeMap::new();
    labels.insert("rank".to_string(), rank.to_string());
    HostSpec {
        name,
        destination,
        target: match fleet.volume_mode {
            VolumeMode::Filesystem => TargetArg::Dirs(paths),
            VolumeMode::Block => TargetArg::Devices(paths),
        },
        workers: None,
        labels,
        iofleet_path: None,
        reach: Reach::Joined { rank, member },
        role: Role::Workers,
        observe: Vec::new(),
        scrape: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::parse;

    #[test]
    fn job_mode_needs_a_controller_address_and_keeps_nothing() {
        let e = parse("[kubernetes]\npods = 2\nmode = \"job\"\n").unwrap_err();
        assert!(e.contains("kubernetes.controller"), "{e}");
        let e = parse("[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"nowhere\"\n")
            .unwrap_err();
        assert!(e.contains("is not HOST:PORT"), "{e}");
        let e =
            parse("[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"h:1\"\nkeep = true\n")
                .unwrap_err();
        assert!(e.contains("kubernetes.keep"), "{e}");
        let e = parse("[kubernetes]\npods = 2\ncontroller = \"h:1\"\n").unwrap_err();
        assert!(e.contains("only mode = \"job\""), "{e}");
        let e = parse("[kubernetes]\npods = 2\nmode = \"cronjob\"\n").unwrap_err();
        assert!(e.contains("mode"), "{e}");
        let f = parse("[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"10.0.0.5:7070\"\n")
            .unwrap();
        assert_eq!(f.mode, Mode::Job);
        assert_eq!(
            f.join_endpoints(),
            ("10.0.0.5:7070".into(), "10.0.0.5".into())
        );
        let f =
            parse("[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"bastion.lab:7070\"\n")
                .unwrap();
        assert_eq!(
            f.join_endpoints(),
            ("0.0.0.0:7070".into(), "bastion.lab".into())
        );
        let f = parse(
            "[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"203.0.113.9:7070\"\nlisten = \"10.1.1.1:7070\"\n",
        )
        .unwrap();
        assert_eq!(f.join_endpoints().0, "10.1.1.1:7070");
    }

    #[test]
    fn the_command_lines_join_port_overrides_the_descriptions() {
        let mut f =
            parse("[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"10.0.0.5:7070\"\n")
                .unwrap();
        f.join_at(Some("0.0.0.0:7071"), Some("bastion.lab"))
            .unwrap();
        assert_eq!(
            f.join_endpoints(),
            ("0.0.0.0:7071".into(), "bastion.lab".into())
        );
        assert!(f
            .join_at(Some("nowhere"), None)
            .unwrap_err()
            .contains("--listen"));
        let mut sts = parse("[kubernetes]\npods = 2\n").unwrap();
        assert!(sts
            .join_at(Some("0.0.0.0:1"), None)
            .unwrap_err()
            .contains("only a fleet in Job mode"));
    }

    #[test]
    fn the_api_servers_warning_for_large_indexed_jobs() {
        assert!(api_warning(100_000, 100_000).is_none());
        assert!(api_warning(100_001, 10_000).is_none());
        let w = api_warning(100_001, 10_001).unwrap();
        assert!(w.contains("100001 completions"), "{w}");
    }

    #[test]
    fn the_containerfile_carries_this_version() {
        let c = containerfile();
        assert!(c.contains(env!("CARGO_PKG_VERSION")));
        assert!(c.contains("COPY iofleet /usr/local/bin/iofleet"));
    }
}
