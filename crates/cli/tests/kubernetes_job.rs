//! Job mode of a Kubernetes fleet (`mode = "job"`, docs/kubernetes.md): an Indexed Job
//! whose pods run `iofleet agent --join` and connect back to the command's join port on
//! 127.0.0.1, against the project's stand-in `kubectl` (tests/support/kubectl), which
//! plays the Job controller, the pods' generic ephemeral volumes, and the kubelet running
//! each pod's command as a local process (the pod's image mapped to this build's
//! iofleet, its environment from the manifest and the Secret, its volumes at their
//! paths). No `kubectl exec` runs in this mode, and nothing but loopback is contacted.
//! Needs root (the pods' private mount and UTS namespaces, loop devices for block).

mod common;
#[path = "support/kube_cluster.rs"]
mod kube_cluster;

use std::process::Command;

use common::*;
use kube_cluster::Cluster;
use serde_json::{json, Value};

/// A cluster of `nodes` plain nodes whose image `iofleet:test` carries this build's
/// iofleet (as an image from `iofleet kube containerfile` would).
fn job_cluster(test: &str, nodes: u32) -> Option<Cluster> {
    let k = Cluster::new(test)?;
    k.configure(&json!({
        "current-context": "stand-in",
        "contexts": { "stand-in": { "nodes": nodes } },
        "iofleet": { "iofleet:test": assert_cmd::cargo::cargo_bin("iofleet") },
    }));
    Some(k)
}

/// A Job-mode fleet description: its join port on loopback, a port of its own.
fn job_fleet(k: &Cluster, name: &str, extra: &str) -> String {
    k.fleet(
        name,
        &format!(
            "mode = \"job\"\ncontroller = \"127.0.0.1:0\"\nimage = \"iofleet:test\"\nstorage_class = \"fast\"\nready_timeout = \"60s\"\n{extra}"
        ),
    )
}

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
        "--no-save",
        "--warmup",
        "0s",
        "--interval",
        "500ms",
    ];
    a.extend_from_slice(extra);
    a
}

/// Nothing of the fleet is left: no object in the cluster, no volume or pod root, no
/// process of a pod.
fn nothing_left(k: &Cluster, what: &str) {
    // The stand-in's garbage collector runs at each call, as a cluster's runs on its own.
    let _ = k.kubectl(&["get", "pods", "-o", "name"]);
    assert!(k.objects().is_empty(), "{what}: {:?}", k.objects());
    assert!(
        k.leftover_files().is_empty(),
        "{what}: {:?}",
        k.leftover_files()
    );
    assert!(
        k.running_containers().is_empty(),
        "{what}: {:?}",
        k.running_containers()
    );
}

/// A Job-mode run's result: `pods` hosts, one worker each, ranks in order, each with
/// its pod's facts and way to the fleet; every claim an ephemeral one of its pod.
fn check_joined_run(v: &Value, name: &str, pods: usize, disks: usize, block: bool) {
    assert!(schema_problems(v).is_empty(), "{:?}", schema_problems(v));
    let k = &v["run"]["kubernetes"];
    assert_eq!(k["mode"], "job", "{k}");
    assert_eq!(k["volume_mode"], if block { "block" } else { "filesystem" });
    let joined_after = k["joined_after_s"].as_f64().unwrap();
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), pods, "{v}");
    assert_eq!(v["workers"].as_array().unwrap().len(), pods);
    for (rank, h) in hosts.iter().enumerate() {
        let pod = h["kubernetes"]["pod"].as_str().unwrap();
        // An Indexed Job's pod: JOB-INDEX-RANDOM, the index its agent's rank.
        assert!(pod.starts_with(&format!("iofleet-{name}-{rank}-")), "{pod}");
        assert_eq!(h["host"], pod);
        assert!(h["all"]["iops"].as_f64().unwrap() > 0.0, "{h}");
        assert!(h["lost_at_s"].is_null(), "{h}");
        assert!(h["kubernetes"]["node"].is_string(), "{h}");
        let vols = h["kubernetes"]["volumes"].as_array().unwrap();
        assert_eq!(vols.len(), disks);
        for (d, vol) in vols.iter().enumerate() {
            assert_eq!(vol["claim"], format!("{pod}-disk-{d}"));
            assert!(vol["volume"].is_string(), "{vol}");
            assert_eq!(vol["provisioner"], "fake.csi.iofleet.test");
        }
        // Created, bound, Ready as the controller's polls saw them, in that order;
        // joined when the join port took its agent, by the time all had.
        let t = &h["kubernetes"]["timeline"];
        let s = |k: &str| t[k].as_f64().unwrap_or_else(|| panic!("{k}: {t}"));
        assert!(
            s("created_s") <= s("bound_s") && s("bound_s") <= s("ready_s"),
            "{t}"
        );
        assert!(
            s("joined_s") > 0.0 && s("joined_s") <= joined_after + 1e-9,
            "{t}"
        );
    }
}

#[test]
fn pods_of_an_indexed_job_join_run_report_their_way_and_leave_nothing() {
    let Some(k) = job_cluster("pods_of_an_indexed_job_join", 8) else {
        return;
    };
    // 16 pods of two filesystem volumes each, two per node.
    let kube = job_fleet(&k, "fs16", "pods = 16\nspread = \"soft\"\n");
    let o = k.iofleet(
        &run_args(&kube, "2", &["--duration", "2s", "--engine", "null"]),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    let v = json_of(&o);
    check_joined_run(&v, "fs16", 16, 2, false);
    let notices = v["notices"].to_string();
    assert!(notices.contains("deleted Job iofleet-fs16"), "{notices}");
    // Every agent joined: not one kubectl exec.
    let calls = k.calls();
    assert!(calls.iter().all(|c| c["verb"] != "exec"), "{calls:?}");
    nothing_left(&k, "fs16");

    // 4 pods of one block volume each, on the default engine: the agents write the
    // pods' devices (the stand-in's loop devices, which the kernel counts).
    let kube = job_fleet(
        &k,
        "blk4",
        "pods = 4\nvolume_mode = \"block\"\nspread = \"soft\"\n",
    );
    let mut args = run_args(&kube, "1", &["--duration", "1s"]);
    args.retain(|a| *a != "--no-save");
    let o = k.iofleet(&args, &[]);
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, stderr(&o));
    let v = json_of(&o);
    check_joined_run(&v, "blk4", 4, 1, true);
    for h in v["hosts"].as_array().unwrap() {
        assert!(h["disk"]["iops"].as_f64().unwrap() > 0.0, "{h}");
    }
    nothing_left(&k, "blk4");
    // The stored run keeps each pod's way; the table and the report show it.
    let id = v["stored"]["id"].as_str().unwrap();
    let o = k.iofleet(&["results", "export", id, "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = json_of(&o);
    assert_eq!(stored["run"]["kubernetes"], v["run"]["kubernetes"]);
    assert_eq!(
        stored["hosts"][3]["kubernetes"],
        v["hosts"][3]["kubernetes"]
    );
    let o = k.iofleet(&["results", "show", id], &[]);
    let table = stdout(&o);
    assert!(
        table.contains(
            "Job mode: an Indexed Job whose pods' agents joined the controller, all 4 in"
        ),
        "{table}"
    );
    assert!(table.contains("joined s"), "{table}");
    let html = k.dir.path().join("r.html");
    let o = k.iofleet(&["report", id, "-o", html.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<table class=\"kube-pods\">"), "{page}");
    let pod = v["hosts"][0]["kubernetes"]["pod"].as_str().unwrap();
    assert!(page.contains(&format!("{pod}-disk-0")), "{pod}");
}

#[test]
fn a_pod_killed_mid_run_is_a_lost_host() {
    let Some(k) = job_cluster("job_pod_killed_mid_run", 4) else {
        return;
    };
    let kube = job_fleet(&k, "lose", "pods = 2\n");
    let addr = free_addr();
    let args = run_args(
        &kube,
        "1",
        &[
            "--duration",
            "20s",
            "--engine",
            "null",
            "--host-timeout",
            "3s",
            "--metrics-listen",
            &addr,
            // The command line's join port over the file's: the pods join "localhost".
            "--listen",
            "127.0.0.1:0",
            "--advertise",
            "localhost",
        ],
    );
    let mut child = k.spawn(&args, &[]);
    k.wait_for(
        "an interval measured",
        || metrics_gauge(&addr, "iofleet_interval_index").is_some_and(|i| i >= 1.0),
        &mut child,
    );
    let pod = k.pod_named("iofleet-lose-1-").expect("rank 1's pod");
    let o = k.kubectl(&["stand-in", "kill-pod", &pod]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its 2 pod(s) join iofleet://localhost:"),
        "{}",
        stderr(&o)
    );
    let v = json_of(&o);
    let lost: Vec<&Value> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| !h["lost_at_s"].is_null())
        .collect();
    assert_eq!(lost.len(), 1, "{v}");
    assert_eq!(lost[0]["host"], pod.as_str());
    nothing_left(&k, "a pod killed");
}

/// Ctrl-C (SIGINT to iofleet) once `at` holds: exit 130, and nothing left behind.
fn interrupt(k: &Cluster, name: &str, extra: &[&str], env: &[(&str, &str)], at: &str) -> Value {
    // One pod when filling: the fill allocates its whole disk on this machine's disk.
    let pods = if at == "preparing" {
        "pods = 1\n"
    } else {
        "pods = 2\n"
    };
    let kube = job_fleet(k, name, pods);
    let addr = free_addr();
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
        "--metrics-listen",
        &addr,
    ];
    args.extend_from_slice(extra);
    let mut child = k.spawn(&args, env);
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
        _ => k.wait_for(
            "an interval measured",
            || metrics_gauge(&addr, "iofleet_interval_index").is_some_and(|i| i >= 1.0),
            &mut child,
        ),
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{at}: {}", stderr(&o));
    nothing_left(k, at);
    json_of(&o)
}

#[test]
fn ctrl_c_while_creating_filling_or_measuring_leaves_nothing() {
    let Some(k) = job_cluster("job_ctrl_c_at_every_phase", 4) else {
        return;
    };
    // Pods that take a minute to start: Ctrl-C comes while waiting for them to join.
    interrupt(
        &k,
        "cc-create",
        &["--disk-size", "16m", "--duration", "5s", "--engine", "null"],
        &[("FAKE_KUBE_READY_DELAY", "60")],
        "creating pods",
    );
    // A disk far larger than can be filled in the time: Ctrl-C comes during the fill.
    let v = interrupt(
        &k,
        "cc-fill",
        &["--disk-size", "4g", "--duration", "5s"],
        &[],
        "preparing",
    );
    assert!(
        v["notices"]
            .to_string()
            .contains("interrupted while preparing"),
        "{v}"
    );
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
            "--engine",
            "null",
        ],
        &[],
        "measuring",
    );
    assert_eq!(v["run"]["interrupted"], true, "{v}");
}

#[test]
fn the_stand_in_plays_indexed_jobs_and_their_ephemeral_volumes() {
    let Some(k) = job_cluster("the_stand_in_plays_indexed_jobs", 2) else {
        return;
    };
    // Index 0 succeeds, index 1 fails: with backoffLimitPerIndex 0 the failed index is
    // not retried and the Job fails once every index has ended.
    let job = json!({
        "apiVersion": "v1", "kind": "List", "items": [
            { "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s" },
              "stringData": { "word": "from-the-secret" } },
            { "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": "j" },
              "spec": {
                "completionMode": "Indexed", "completions": 2, "parallelism": 2,
                "backoffLimitPerIndex": 0, "maxFailedIndexes": 2,
                "template": { "metadata": { "labels": { "app": "j" } }, "spec": {
                    "restartPolicy": "Never",
                    "containers": [{ "name": "c", "image": "iofleet:test",
                        "command": ["sh", "-c", "echo $(WORD) $0 > /data/out; exit $JOB_COMPLETION_INDEX"],
                        "args": ["$(WORD)"],
                        "env": [{ "name": "WORD", "valueFrom": { "secretKeyRef": { "name": "s", "key": "word" } } }],
                        "volumeMounts": [{ "name": "data", "mountPath": "/data" }] }],
                    "volumes": [{ "name": "data", "ephemeral": { "volumeClaimTemplate": {
                        "metadata": { "labels": { "app": "j" } },
                        "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "fast-now",
                                  "resources": { "requests": { "storage": "1Mi" } } } } } }] } } } },
        ] });
    let o = k.kubectl_with(&["apply", "-f", "-"], &job.to_string(), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t0 = std::time::Instant::now();
    let status = loop {
        let j = k.get_json(&["get", "job", "j"]);
        if j["status"]["conditions"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            break j["status"].clone();
        }
        assert!(t0.elapsed().as_secs() < 60, "{j}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(status["conditions"][0]["type"], "Failed", "{status}");
    assert_eq!(status["conditions"][0]["reason"], "FailedIndexes");
    assert_eq!(status["completedIndexes"], "0");
    assert_eq!(status["failedIndexes"], "1");
    // Each pod had its own claim, POD-VOLUME, owned by the pod; its command saw the
    // secret's value through $(VAR) and the environment, and ran in the pod's volume.
    let pods = k.get_json(&["get", "pods", "-l", "app=j"]);
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for p in pods {
        let name = p["metadata"]["name"].as_str().unwrap();
        let claim = k.get_json(&["get", "pvc", &format!("{name}-data")]);
        assert_eq!(claim["metadata"]["ownerReferences"][0]["name"], name);
        let volume = claim["spec"]["volumeName"].as_str().unwrap();
        let out = std::fs::read_to_string(k.state().join("volumes").join(volume).join("out"));
        assert_eq!(out.unwrap(), "from-the-secret from-the-secret\n");
    }
    // A re-applied Job whose template changed is refused, as the API server refuses it.
    let mut changed = job.clone();
    changed["items"][1]["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
    let o = k.kubectl_with(&["apply", "-f", "-"], &changed.to_string(), &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("spec.template: Invalid value: field is immutable"),
        "{}",
        stderr(&o)
    );
    // Deleting the Job in the foreground takes its pods, and with them their claims.
    let o = k.kubectl(&[
        "delete",
        "job/j",
        "secret/s",
        "--cascade=foreground",
        "--wait=true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    nothing_left(&k, "the Job deleted");
}

#[test]
fn an_image_without_iofleet_fails_naming_the_pod_and_a_killed_commands_fleet_is_cleaned() {
    let Some(k) = job_cluster("an_image_without_iofleet", 4) else {
        return;
    };
    // The image is not mapped to an iofleet: the pods' command is not found.
    let kube = k.fleet(
        "noagent",
        "mode = \"job\"\ncontroller = \"127.0.0.1:0\"\nimage = \"plain:1\"\npods = 2\nstorage_class = \"fast\"\n",
    );
    let o = k.iofleet(&run_args(&kube, "1", &["--engine", "null"]), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("ended before its agent joined"), "{e}");
    assert!(
        e.contains("exit code 127") && e.contains("image plain:1"),
        "{e}"
    );
    nothing_left(&k, "an image without iofleet");

    // A command killed outright leaves its fleet; `kube clean` finds it by its labels.
    let kube = job_fleet(&k, "killed", "pods = 2\n");
    let addr = free_addr();
    let args = run_args(
        &kube,
        "1",
        &[
            "--duration",
            "30s",
            "--engine",
            "null",
            "--metrics-listen",
            &addr,
        ],
    );
    let mut child = k.spawn(&args, &[]);
    k.wait_for(
        "an interval measured",
        || metrics_gauge(&addr, "iofleet_interval_index").is_some_and(|i| i >= 1.0),
        &mut child,
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let o = k.iofleet(&["kube", "clean", "--hosts", &kube, "--dry-run"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed = stdout(&o);
    for kind in [
        "job.batch/iofleet-killed",
        "secret/iofleet-killed",
        "service/iofleet-killed",
    ] {
        assert!(listed.contains(kind), "{listed}");
    }
    let o = k.iofleet(&["kube", "clean", "--hosts", &kube], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    nothing_left(&k, "kube clean");
}
