//! Runs on a Kubernetes fleet, second layer of docs/kubernetes.md: the whole flow —
//! create the objects, wait for the pods, run the agents in them through `kubectl exec`,
//! record the Kubernetes facts, delete everything — against the project's stand-in
//! `kubectl` (tests/support/kubectl, its harness support/kube_cluster.rs), placed
//! first on PATH. The stand-in refuses what an API server refuses, schedules pods and
//! binds claims as a cluster would (tests/kube_stand_in.rs tests it), and runs each
//! `exec` as a local process in the pod's own root (a chroot in a private mount
//! namespace, with the pod's volumes at their paths), so it needs root. The main test
//! runs in a namespace and context of its own, with the current context holding a
//! fleet of the same name that no call may touch. The stand-in never contacts a
//! cluster, and no other `kubectl` is ever run here.

mod common;
#[path = "support/kube_cluster.rs"]
mod kube_cluster;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use kube_cluster::Cluster;
use serde_json::{json, Value};

const SHORT: [&str; 6] = ["--duration", "2s", "--warmup", "0s", "--interval", "500ms"];

fn run_args<'a>(kube: &'a str, disks: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "run",
        "easy-run-4k70r",
        "--hosts",
        kube,
        "--disks",
        disks,
        "--disk-size",
        "16m",
        "--output-format",
        "json",
        "--quiet",
    ];
    a.extend(SHORT);
    a.extend_from_slice(extra);
    a
}

#[test]
fn four_pods_of_two_filesystem_volumes_run_are_recorded_and_deleted() {
    let Some(k) = Cluster::new("four_pods_of_two_filesystem_volumes") else {
        return;
    };
    // Two contexts with the same namespace: the fleet's (lab), and the current one
    // (elsewhere), where a call that lost its --context would land. The pods run in a
    // minimal image: a shell, the tools the agent script uses, glibc.
    k.configure(&json!({
        "current-context": "elsewhere",
        "contexts": {
            "lab": { "namespaces": ["bench"], "nodes": 4 },
            "elsewhere": { "namespaces": ["bench"], "nodes": 4 },
        },
        "images": { "debian:bookworm-slim": k.image() },
    }));
    // (A minute for the pods: a lost --namespace would look for them in default.)
    let kube = k.fleet(
        "fs4",
        "context = \"lab\"\nnamespace = \"bench\"\npods = 4\nstorage_class = \"fast\"\nready_timeout = \"60s\"\n",
    );
    // elsewhere holds the same fleet in the same namespace, which a lost --context
    // would reuse without a word and then delete.
    let o = k.iofleet(
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            &kube,
            "--disks",
            "2",
            "--disk-size",
            "16m",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = k.kubectl_with(
        &["--context", "elsewhere", "-n", "bench", "apply", "-f", "-"],
        &stdout(&o),
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let decoy = k.objects_in("elsewhere");
    assert!(
        decoy.contains(&"Pod/bench/iofleet-fs4-3".to_string()),
        "{decoy:?}"
    );
    let decoy_uid = |k: &Cluster| {
        k.object("elsewhere", "StatefulSet/bench/iofleet-fs4")["metadata"]["uid"].clone()
    };
    let uid = decoy_uid(&k);
    let before = k.calls().len();

    let o = k.iofleet(&run_args(&kube, "2", &["--name", "kube-fs4"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert!(schema_problems(&v).is_empty(), "{:?}", schema_problems(&v));

    // One worker per pod, each pod a host with its own figures.
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 4, "{v}");
    assert_eq!(v["workers"].as_array().unwrap().len(), 4);
    let mut nodes = std::collections::BTreeSet::new();
    for (i, h) in hosts.iter().enumerate() {
        let pod = format!("iofleet-fs4-{i}");
        assert_eq!(h["host"], pod.as_str());
        assert!(h["all"]["iops"].as_f64().unwrap() > 0.0, "{h}");
        assert!(h["lost_at_s"].is_null());
        let kh = &h["kubernetes"];
        assert_eq!(kh["pod"], pod.as_str());
        nodes.insert(kh["node"].as_str().unwrap().to_string());
        let vols = kh["volumes"].as_array().unwrap();
        assert_eq!(vols.len(), 2);
        for (d, vol) in vols.iter().enumerate() {
            assert_eq!(vol["claim"], format!("disk-{d}-{pod}").as_str());
            assert!(vol["volume"].as_str().unwrap().starts_with("pvc-"));
            assert_eq!(vol["storage_class"], "fast");
            assert_eq!(vol["provisioner"], "fake.csi.iofleet.test");
            // The stand-in binds a claim one second after it is made.
            let s = vol["bound_after_s"].as_f64().unwrap();
            assert!((1.0..=2.0).contains(&s), "{vol}");
        }
    }
    // spread = "node" (the default): one pod per node.
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    let kr = &v["run"]["kubernetes"];
    assert_eq!(kr["fleet"], "fs4");
    assert_eq!(kr["namespace"], "bench");
    assert_eq!(kr["context"], "lab");
    assert_eq!(kr["volume_mode"], "filesystem");
    assert_eq!(kr["reused"], false);
    assert_eq!(kr["kept"], false);
    assert_eq!(kr["storage_class"]["provisioner"], "fake.csi.iofleet.test");
    assert_eq!(kr["storage_class"]["parameters"]["tier"], "fast");
    assert_eq!(
        kr["storage_class"]["volume_binding_mode"],
        "WaitForFirstConsumer"
    );

    // Every object it created is gone, and every volume with it.
    assert!(k.objects_in("lab").is_empty(), "{:?}", k.objects_in("lab"));
    let volumes: Vec<String> = k.leftover_files();
    assert!(volumes.is_empty(), "{volumes:?}");
    // Every call named the fleet's context and namespace; elsewhere was never touched.
    let calls = k.calls().split_off(before);
    for c in &calls {
        assert_eq!(
            (&c["context"], &c["namespace"], &c["in_context"]),
            (&json!("lab"), &json!("bench"), &json!("lab")),
            "{c}"
        );
    }
    let count = |verb: &str| calls.iter().filter(|c| c["verb"] == verb).count();
    assert_eq!(count("apply"), 1, "{calls:?}");
    for i in 0..4 {
        let pod = json!([format!("Pod/iofleet-fs4-{i}")]);
        assert!(
            calls
                .iter()
                .any(|c| c["verb"] == "exec" && c["objects"] == pod),
            "no exec in pod {i}: {calls:?}"
        );
    }
    assert!(
        calls.iter().any(|c| c["verb"] == "delete"
            && c["objects"] == json!(["StatefulSet/iofleet-fs4", "Service/iofleet-fs4"])),
        "{calls:?}"
    );
    assert_eq!(k.objects_in("elsewhere"), decoy);
    assert_eq!(decoy_uid(&k), uid);

    // The stored run keeps the facts; the table and the report show them.
    let id = v["stored"]["id"].as_str().unwrap();
    let o = k.iofleet(&["results", "export", id, "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = json_of(&o);
    assert_eq!(stored["run"]["kubernetes"], v["run"]["kubernetes"]);
    for (a, b) in stored["hosts"].as_array().unwrap().iter().zip(hosts.iter()) {
        assert_eq!(a["kubernetes"], b["kubernetes"]);
    }
    let o = k.iofleet(&["results", "show", id], &[]);
    let table = stdout(&o);
    assert!(
        table.contains("Kubernetes: fleet fs4 in namespace bench (context lab)"),
        "{table}"
    );
    assert!(
        table.contains("StorageClass fast: provisioner fake.csi.iofleet.test"),
        "{table}"
    );
    assert!(table.contains("iofleet-fs4-3"), "{table}");
    let html = k.dir.path().join("r.html");
    let o = k.iofleet(&["report", id, "-o", html.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"kubernetes\">"));
    assert!(page.contains("disk-1-iofleet-fs4-3"));
}

/// One fleet per command: a sweep's three steps run on pods created once, one agent per
/// pod for the whole sweep (one exec each), deleted once at the end.
#[test]
fn a_sweep_creates_its_pods_once_and_deletes_them_once() {
    let Some(k) = Cluster::new("a_sweep_creates_its_pods_once") else {
        return;
    };
    let kube = k.fleet("sw2", "pods = 2\nstorage_class = \"fast\"\n");
    let before = k.calls().len();
    let mut args = vec![
        "sweep",
        "easy-run-4k70r",
        "--vary",
        "qd=1,2,4",
        "--hosts",
        &kube,
        "--disks",
        "1",
        "--disk-size",
        "16m",
        "--engine",
        "null",
        "--json",
        "--quiet",
    ];
    args.extend(SHORT);
    let o = k.iofleet(&args, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let curve = json_of(&o);
    let points = curve["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "{curve}");
    for p in points {
        assert!(p["iops"].as_f64().unwrap() > 0.0, "{p}");
    }
    let calls = k.calls().split_off(before);
    let count = |verb: &str| calls.iter().filter(|c| c["verb"] == verb).count();
    // Three steps: one apply (three before, one a step), one delete of the set.
    assert_eq!(count("apply"), 1, "{calls:?}");
    let set_deletes = calls
        .iter()
        .filter(|c| {
            c["verb"] == "delete"
                && c["objects"] == json!(["StatefulSet/iofleet-sw2", "Service/iofleet-sw2"])
        })
        .count();
    assert_eq!(set_deletes, 1, "{calls:?}");
    for i in 0..2 {
        let pod = json!([format!("Pod/iofleet-sw2-{i}")]);
        let execs = calls
            .iter()
            .filter(|c| c["verb"] == "exec" && c["objects"] == pod)
            .count();
        assert_eq!(execs, 1, "pod {i}: {calls:?}");
    }
    assert!(k.objects().is_empty(), "{:?}", k.objects());
    assert!(k.leftover_files().is_empty(), "{:?}", k.leftover_files());
}

#[test]
fn two_pods_of_one_block_volume_run_on_their_devices() {
    let Some(k) = Cluster::new("two_pods_of_one_block_volume") else {
        return;
    };
    let kube = k.fleet(
        "blk2",
        "pods = 2\nstorage_class = \"fast\"\nvolume_mode = \"block\"\n",
    );
    let o = k.iofleet(&run_args(&kube, "1", &["--no-save"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert!(schema_problems(&v).is_empty(), "{:?}", schema_problems(&v));
    assert_eq!(v["run"]["kubernetes"]["volume_mode"], "block");
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    for h in hosts {
        assert!(h["all"]["iops"].as_f64().unwrap() > 0.0, "{h}");
        assert_eq!(h["kubernetes"]["volumes"].as_array().unwrap().len(), 1);
        // The pod wrote its raw device (the stand-in's loop device): the kernel counted it.
        assert!(h["disk"]["iops"].as_f64().unwrap() > 0.0, "{h}");
    }
    assert!(k.objects().is_empty(), "{:?}", k.objects());
    assert!(k.leftover_files().is_empty(), "{:?}", k.leftover_files());
}

#[test]
fn io_uring_refused_by_the_containers_seccomp_profile_falls_back_to_psync_with_one_notice() {
    let Some(k) = Cluster::new("io_uring_refused_by_seccomp") else {
        return;
    };
    let kube = k.fleet("sec2", "pods = 2\nstorage_class = \"fast\"\n");
    let o = k.iofleet(
        &run_args(&kube, "1", &["--no-save"]),
        &[("FAKE_KUBE_SECCOMP_URING", "1")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["run"]["engine"], "psync", "{v}");
    let said: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("io_uring is not usable"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("every host (2): io_uring is not usable here (io_uring_setup: EPERM"),
        "{}",
        said[0]
    );
    assert!(said[0].contains("seccomp"), "{}", said[0]);
}

#[test]
fn a_kept_fleet_is_reused_without_refilling_and_kube_clean_removes_it() {
    let Some(k) = Cluster::new("a_kept_fleet_is_reused") else {
        return;
    };
    let kube = k.fleet("keep2", "pods = 2\nstorage_class = \"fast\"\nkeep = true\n");
    // `iofleet precondition` creates the kept fleet and writes each pod's volume twice;
    // the run after it reuses the fleet, and its volumes are not filled again.
    let o = k.iofleet(
        &[
            "precondition",
            "easy-run-4k70r",
            "--hosts",
            &kube,
            "--disks",
            "1",
            "--disk-size",
            "16m",
            "--json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kept StatefulSet iofleet-keep2"),
        "{}",
        stderr(&o)
    );
    let pre: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(pre["complete"], true, "{pre}");
    let mut hosts: Vec<&str> = pre["disks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["host"].as_str().unwrap())
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["iofleet-keep2-0", "iofleet-keep2-1"], "{pre}");
    let o = k.iofleet(&run_args(&kube, "1", &["--no-save"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = json_of(&o);
    assert_eq!(first["run"]["kubernetes"]["reused"], true);
    assert_eq!(first["run"]["kubernetes"]["kept"], true);
    assert!(
        first["notices"]
            .to_string()
            .contains("already carry a valid fill marker and were not refilled"),
        "{}",
        first["notices"]
    );
    let notices = first["notices"].to_string();
    assert!(
        notices.contains("kept StatefulSet iofleet-keep2"),
        "{notices}"
    );
    let kept = k.objects();
    assert!(
        kept.iter().any(|o| o == "Pod/default/iofleet-keep2-1"),
        "{kept:?}"
    );
    assert_eq!(
        kept.iter()
            .filter(|o| o.starts_with("PersistentVolumeClaim/"))
            .count(),
        2
    );

    let o = k.iofleet(&run_args(&kube, "1", &["--no-save"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let second = json_of(&o);
    assert_eq!(second["run"]["kubernetes"]["reused"], true);
    // The same volumes, and the fill skipped: their markers were valid.
    for (a, b) in first["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .zip(second["hosts"].as_array().unwrap())
    {
        assert_eq!(a["kubernetes"]["volumes"], b["kubernetes"]["volumes"]);
    }
    let notices = second["notices"].to_string();
    assert!(
        notices.contains("already carry a valid fill marker and were not refilled"),
        "{notices}"
    );

    // kube clean lists, then deletes, every object of the fleet and nothing else.
    let other = k.fleet("other", "pods = 1\nkeep = true\n");
    let o = k.iofleet(&run_args(&other, "1", &["--no-save"]), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = k.iofleet(&["kube", "clean", "--hosts", &kube, "--dry-run"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("would delete statefulset.apps/iofleet-keep2"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("iofleet-other"), "{}", stdout(&o));
    let o = k.iofleet(&["kube", "clean", "--hosts", &kube], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("fleet keep2 deleted"), "{}", stdout(&o));
    // Left: the other fleet's objects, and its one volume (named by the provisioner).
    let left = k.objects();
    let (volumes, named): (Vec<_>, Vec<_>) = left
        .iter()
        .partition(|o| o.starts_with("PersistentVolume/"));
    assert_eq!(volumes.len(), 1, "{left:?}");
    assert!(
        named.iter().all(|o| o.contains("iofleet-other")),
        "{left:?}"
    );
    assert_eq!(named.len(), 4, "{left:?}");
    let o = k.iofleet(&["kube", "clean", "--hosts", &other], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(k.objects().is_empty(), "{:?}", k.objects());
    let o = k.iofleet(&["kube", "clean", "--hosts", &other], &[]);
    assert!(
        stdout(&o).contains("nothing of fleet other"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_pod_killed_mid_run_is_a_lost_host_and_the_fleet_is_still_deleted() {
    let Some(k) = Cluster::new("a_pod_killed_mid_run") else {
        return;
    };
    let kube = k.fleet("lose2", "pods = 2\nstorage_class = \"fast\"\n");
    let addr = free_addr();
    let mut args = run_args(
        &kube,
        "1",
        &[
            "--no-save",
            "--host-timeout",
            "3s",
            "--metrics-listen",
            &addr,
        ],
    );
    // Long enough to kill a pod in the middle.
    let at = args.iter().position(|a| *a == "2s").unwrap();
    args[at] = "20s";
    let mut child = k.spawn(&args, &[]);
    // Both agents are running once both pods have an exec session, and measuring once
    // /metrics has an interval (waited for: a loaded machine is slow to get there).
    k.wait_for(
        "both pods run their agent",
        || k.sessions("iofleet-lose2-0") > 0 && k.sessions("iofleet-lose2-1") > 0,
        &mut child,
    );
    k.wait_for(
        "an interval measured",
        || metrics_gauge(&addr, "iofleet_interval_index").is_some_and(|i| i >= 1.0),
        &mut child,
    );
    let o = k.kubectl(&["stand-in", "kill-pod", "iofleet-lose2-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json_of(&o);
    let lost: Vec<&Value> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| !h["lost_at_s"].is_null())
        .collect();
    assert_eq!(lost.len(), 1, "{v}");
    assert_eq!(lost[0]["host"], "iofleet-lose2-1");
    assert!(k.objects().is_empty(), "{:?}", k.objects());
}

/// Ctrl-C (SIGINT to iofleet) once `at` holds: exit 130, and nothing left behind.
fn interrupt(k: &Cluster, name: &str, extra: &[&str], env: &[(&str, &str)], at: &str) -> Value {
    let kube = k.fleet(name, "pods = 1\nstorage_class = \"fast\"\n");
    let mut args = vec![
        "run",
        "easy-run-4k70r",
        "--hosts",
        &kube,
        "--disks",
        "1",
        "--no-save",
        "--output-format",
        "json",
        "--quiet",
        "--warmup",
        "0s",
    ];
    let addr = free_addr();
    args.extend_from_slice(&["--metrics-listen", &addr]);
    args.extend_from_slice(extra);
    let mut child = k.spawn(&args, env);
    let pod = format!("iofleet-{name}-0");
    let volumes = k.state().join("volumes");
    match at {
        "creating pods" => k.wait_for(
            "the objects are applied",
            || k.calls().iter().any(|c| c["verb"] == "apply"),
            &mut child,
        ),
        "preparing" => k.wait_for(
            "the fill has begun",
            || {
                std::fs::read_dir(&volumes)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|v| {
                        std::fs::read_dir(v.path())
                            .into_iter()
                            .flatten()
                            .flatten()
                            .any(|f| f.metadata().is_ok_and(|m| m.len() > 0))
                    })
            },
            &mut child,
        ),
        _ => {
            k.wait_for("the agent runs", || k.sessions(&pod) > 0, &mut child);
            k.wait_for(
                "an interval measured",
                || metrics_gauge(&addr, "iofleet_interval_index").is_some_and(|i| i >= 1.0),
                &mut child,
            );
        }
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{at}: {}", stderr(&o));
    assert!(k.objects().is_empty(), "{at}: {:?}", k.objects());
    assert!(
        k.leftover_files().is_empty(),
        "{at}: {:?}",
        k.leftover_files()
    );
    json_of(&o)
}

#[test]
fn ctrl_c_while_creating_pods_preparing_or_measuring_exits_130_and_leaves_nothing() {
    let Some(k) = Cluster::new("ctrl_c_at_every_phase") else {
        return;
    };
    // Pods that take a minute to be Ready: Ctrl-C comes while waiting for them.
    let v = interrupt(
        &k,
        "cc-create",
        &["--disk-size", "16m", "--duration", "5s"],
        &[("FAKE_KUBE_READY_DELAY", "60")],
        "creating pods",
    );
    assert!(
        v["notices"]
            .to_string()
            .contains("interrupted while preparing"),
        "{v}"
    );
    // A disk far larger than can be filled in the time: Ctrl-C comes during the fill.
    let v = interrupt(
        &k,
        "cc-fill",
        &["--disk-size", "8g", "--duration", "5s"],
        &[],
        "preparing",
    );
    assert!(
        v["notices"]
            .to_string()
            .contains("interrupted while preparing"),
        "{v}"
    );
    // Measuring: what was measured is reported, marked interrupted.
    let v = interrupt(
        &k,
        "cc-measure",
        &[
            "--disk-size",
            "16m",
            "--duration",
            "60s",
            "--interval",
            "500ms",
        ],
        &[],
        "measuring",
    );
    assert_eq!(v["run"]["interrupted"], true, "{v}");
    assert!(v["run"]["duration_s"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn a_claim_that_never_binds_fails_within_the_timeout_naming_it() {
    let Some(k) = Cluster::new("a_claim_that_never_binds") else {
        return;
    };
    let kube = k.fleet(
        "nobind",
        "pods = 2\nstorage_class = \"never-binds\"\nbind_timeout = \"2s\"\n",
    );
    let t0 = Instant::now();
    let o = k.iofleet(&run_args(&kube, "1", &["--no-save"]), &[]);
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "claim disk-0-iofleet-nobind-0 was not bound within 2s (kubernetes.bind_timeout)"
        ),
        "{e}"
    );
    assert!(e.contains("ProvisioningFailed"), "{e}");
    assert!(k.objects().is_empty(), "{:?}", k.objects());

    // A pod that cannot be scheduled (one per node, more pods than nodes) is named
    // with its events when ready_timeout passes.
    let kube = k.fleet(
        "crowd",
        "pods = 5\nstorage_class = \"fast\"\nready_timeout = \"3s\"\n",
    );
    let o = k.iofleet(&run_args(&kube, "1", &["--no-save"]), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("pod iofleet-crowd-4 was not Ready within 3s (kubernetes.ready_timeout)"),
        "{e}"
    );
    assert!(e.contains("FailedScheduling"), "{e}");
    assert!(k.objects().is_empty(), "{:?}", k.objects());
}

#[test]
fn kube_clean_refuses_what_is_not_a_kubernetes_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("hosts.toml");
    std::fs::write(&inv, "[[host]]\ndestination = \"a\"\n").unwrap();
    let o = run_in(
        dir.path(),
        &["kube", "clean", "--hosts", inv.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--hosts"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a Kubernetes fleet description"),
        "{}",
        stderr(&o)
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[kubernetes]\npods = 0\n").unwrap();
    let o = run_in(
        dir.path(),
        &["kube", "clean", "--hosts", bad.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("kubernetes.pods"), "{}", stderr(&o));
    // Other commands take a Kubernetes fleet only through run, and precondition a kept
    // one (nothing is contacted).
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[kubernetes]\npods = 1\n").unwrap();
    let good = good.to_str().unwrap();
    for (args, says) in [
        (
            vec!["precondition", "easy-run-4k70r", "--hosts", good],
            "kubernetes.keep: fleet 'fleet' is deleted when this command ends",
        ),
        (
            vec!["verify", "easy-run-4k70r", "--hosts", good],
            "runs `iofleet run` and, kept, `iofleet precondition`",
        ),
    ] {
        let o = run_in(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let o = run_in(dir.path(), &["hosts", "clean", "--hosts", good]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("only `iofleet run` and `iofleet kube clean` take it"),
        "{}",
        stderr(&o)
    );
}

/// On a real cluster, only when one is named: `IOFLEET_KUBE_CONTEXT` (a context of the
/// user's kubeconfig), optionally `IOFLEET_KUBE_NAMESPACE` and
/// `IOFLEET_KUBE_STORAGE_CLASS`. Two pods, one volume each, a short run with the
/// user's own kubectl; the facts recorded and nothing left behind. Otherwise reported as
/// skipped, never passed: the CI machine cannot provide a cluster (need::CI_CANNOT_PROVIDE).
#[test]
fn a_real_cluster_when_one_is_named() {
    let Ok(context) = std::env::var("IOFLEET_KUBE_CONTEXT") else {
        need::unavailable(
            "a_real_cluster_when_one_is_named",
            "a real Kubernetes cluster (IOFLEET_KUBE_CONTEXT)",
        );
        return;
    };
    let namespace = std::env::var("IOFLEET_KUBE_NAMESPACE").unwrap_or_else(|_| "default".into());
    let class = std::env::var("IOFLEET_KUBE_STORAGE_CLASS")
        .map(|c| format!("storage_class = \"{c}\"\n"))
        .unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let kube = dir.path().join("real.toml");
    std::fs::write(
        &kube,
        format!(
            "[kubernetes]\nname = \"iofleet-test\"\ncontext = \"{context}\"\nnamespace = \"{namespace}\"\npods = 2\nspread = \"soft\"\n{class}"
        ),
    )
    .unwrap();
    let kube = kube.to_str().unwrap();
    // The user's own PATH and kubectl: this is the one test that reaches a cluster.
    let real = |args: &[&str]| {
        let mut c = assert_cmd::Command::cargo_bin("iofleet").unwrap();
        c.env("XDG_DATA_HOME", scratch_data_home())
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let o = real(&run_args(kube, "1", &["--no-save"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert!(schema_problems(&v).is_empty(), "{:?}", schema_problems(&v));
    for h in v["hosts"].as_array().unwrap() {
        assert!(h["all"]["iops"].as_f64().unwrap() > 0.0, "{h}");
        assert!(h["kubernetes"]["node"].is_string(), "{h}");
    }
    eprintln!(
        "{}",
        serde_json::to_string_pretty(&v["run"]["kubernetes"]).unwrap()
    );
    let o = real(&["kube", "clean", "--hosts", kube, "--dry-run"]);
    assert!(stdout(&o).contains("nothing of fleet"), "{}", stdout(&o));
}
