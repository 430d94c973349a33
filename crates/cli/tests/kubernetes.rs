//! A Kubernetes fleet description (`--hosts` naming a TOML file with a `[kubernetes]`
//! table), first layer of docs/kubernetes.md: the objects iofleet would create, printed
//! by `--dry-run` as YAML, checked here field by field and against the real Kubernetes
//! OpenAPI schemas with an offline validator (`kubernetes-validate` from PyPI, installed
//! by test.sh) for every combination of volume mode, spread and keep; and every bad
//! value refused naming its key. No cluster is contacted: no `kubectl` runs here.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// `run PROFILE --hosts FILE --dry-run` with `extra` flags: stdout.
fn dry_run(dir: &Path, kube: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "easy-run-4k70r", "--hosts", kube, "--dry-run"];
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
}

/// The YAML documents of a dry run, as JSON values.
fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| {
            d.lines()
                .any(|l| !l.starts_with('#') && !l.trim().is_empty())
        })
        .map(|d| yaml_serde::from_str::<Value>(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

/// Whether the offline validator accepts `yaml` (strict: unknown fields refused).
fn validates(dir: &Path, yaml: &str) -> (bool, String) {
    let f = write(dir, "manifests.yaml", yaml);
    let o = Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn", &f])
        .output()
        .expect("kubernetes-validate runs");
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn manifests_for_every_volume_mode_spread_and_keep() {
    let validator = need::need(
        "manifests_for_every_volume_mode_spread_and_keep",
        &["kubernetes-validate"],
    );
    let d = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for mode in ["filesystem", "block"] {
        for spread in ["node", "soft", "none"] {
            for keep in [false, true] {
                let kube = write(
                    d.path(),
                    "kube.toml",
                    &format!(
                        "[kubernetes]\nnamespace = \"bench\"\nname = \"t1\"\npods = 3\n\
                         storage_class = \"fast.ssd\"\nvolume_mode = \"{mode}\"\n\
                         spread = \"{spread}\"\nkeep = {keep}\ncpu_request = \"500m\"\n\
                         memory_limit = \"2Gi\"\n[kubernetes.node_selector]\n\
                         \"disktype\" = \"nvme\"\n[[kubernetes.tolerations]]\n\
                         key = \"storage\"\noperator = \"Exists\"\neffect = \"NoSchedule\"\n"
                    ),
                );
                let yaml = dry_run(d.path(), &kube, &["--disks", "2", "--disk-size", "1g"]);
                let docs = documents(&yaml);
                assert_eq!(docs.len(), 2, "{yaml}");
                let (svc, set) = (&docs[0], &docs[1]);
                assert_eq!(svc["kind"], "Service");
                assert_eq!(svc["spec"]["clusterIP"], "None");
                assert_eq!(set["kind"], "StatefulSet");
                // Every object, the pods and the claims are labelled as iofleet's.
                let pod = &set["spec"]["template"];
                let claims = set["spec"]["volumeClaimTemplates"].as_array().unwrap();
                for labels in [
                    &svc["metadata"]["labels"],
                    &set["metadata"]["labels"],
                    &pod["metadata"]["labels"],
                    &claims[0]["metadata"]["labels"],
                ] {
                    assert_eq!(labels["app.kubernetes.io/managed-by"], "iofleet", "{yaml}");
                    assert_eq!(labels["iofleet.io/fleet"], "t1");
                }
                assert_eq!(set["metadata"]["name"], "iofleet-t1");
                assert_eq!(set["metadata"]["namespace"], "bench");
                assert_eq!(set["spec"]["replicas"], 3);
                assert_eq!(set["spec"]["podManagementPolicy"], "Parallel");
                // One volume per disk of the worker, of the profile's disk size.
                assert_eq!(claims.len(), 2);
                // 1 GiB and its 4 KiB fill marker (1024.004 MiB); on a filesystem 5%
                // and 64 MiB more (1139.2 MiB); rounded up to whole MiB.
                let want_mib = if mode == "block" { 1025 } else { 1140 };
                for (k, c) in claims.iter().enumerate() {
                    assert_eq!(c["metadata"]["name"], format!("disk-{k}"));
                    let spec = &c["spec"];
                    assert_eq!(spec["storageClassName"], "fast.ssd");
                    assert_eq!(
                        spec["resources"]["requests"]["storage"],
                        format!("{want_mib}Mi")
                    );
                    let vm = if mode == "block" {
                        "Block"
                    } else {
                        "Filesystem"
                    };
                    assert_eq!(spec["volumeMode"], vm);
                }
                let c = &pod["spec"]["containers"][0];
                if mode == "block" {
                    assert_eq!(c["volumeDevices"][1]["devicePath"], "/dev/iofleet/disk-1");
                    assert!(c.get("volumeMounts").is_none());
                } else {
                    assert_eq!(c["volumeMounts"][1]["mountPath"], "/iofleet/disk-1");
                    assert!(c.get("volumeDevices").is_none());
                }
                assert_eq!(c["resources"]["requests"]["cpu"], "500m");
                assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
                assert_eq!(pod["spec"]["nodeSelector"]["disktype"], "nvme");
                assert_eq!(pod["spec"]["tolerations"][0]["operator"], "Exists");
                let anti = &pod["spec"]["affinity"]["podAntiAffinity"]
                    ["requiredDuringSchedulingIgnoredDuringExecution"];
                let spread_c = &pod["spec"]["topologySpreadConstraints"];
                match spread {
                    "node" => {
                        assert_eq!(anti[0]["topologyKey"], "kubernetes.io/hostname");
                        assert!(spread_c.is_null());
                    }
                    "soft" => {
                        assert_eq!(spread_c[0]["whenUnsatisfiable"], "ScheduleAnyway");
                        assert!(anti.is_null());
                    }
                    _ => assert!(anti.is_null() && spread_c.is_null(), "{yaml}"),
                }
                let retain = if keep { "Retain" } else { "Delete" };
                let policy = &set["spec"]["persistentVolumeClaimRetentionPolicy"];
                assert_eq!(policy["whenDeleted"], retain);
                // Each pod is a host with its disks, listed after the manifests.
                assert!(
                    yaml.contains("#   pod iofleet-t1-2: worker 2, disks"),
                    "{yaml}"
                );
                assert!(
                    yaml.contains("one worker per pod: running 3 workers"),
                    "{yaml}"
                );
                if validator {
                    let (ok, said) = validates(d.path(), &yaml);
                    assert!(ok, "{mode}/{spread}/{keep}: {said}\n{yaml}");
                    checked += 1;
                }
            }
        }
    }
    // pods_per_node × nodes: an even spread that refuses to schedule otherwise.
    let kube = write(
        d.path(),
        "kube.toml",
        "[kubernetes]\npods_per_node = 2\nnodes = 3\nspread = \"soft\"\n",
    );
    let yaml = dry_run(d.path(), &kube, &[]);
    let set = &documents(&yaml)[1];
    assert_eq!(set["spec"]["replicas"], 6);
    let c = &set["spec"]["template"]["spec"]["topologySpreadConstraints"][0];
    assert_eq!(c["whenUnsatisfiable"], "DoNotSchedule");
    assert_eq!(c["maxSkew"], 1);
    // Tainted nodes the pods cannot use are no domain of the spread (the stand-in's
    // scheduler shows what Kubernetes' default would do: tests/kube_stand_in.rs).
    assert_eq!(c["nodeTaintsPolicy"], "Honor");
    // The default namespace is not written (kubectl's context chooses).
    assert!(set["metadata"].get("namespace").is_none());
    if validator {
        assert!(validates(d.path(), &yaml).0);
        // The validator is not a formality: a manifest it must refuse.
        let broken = yaml.replacen("replicas: 6", "replicas: six", 1);
        let (ok, said) = validates(d.path(), &broken);
        assert!(!ok, "a StatefulSet with replicas: six passed: {said}");
        assert_eq!(checked, 12);
    }
}

/// Whether the offline validator accepts `yaml` for Kubernetes `version` (strict).
fn validates_for(dir: &Path, yaml: &str, version: &str) -> (bool, String) {
    let f = write(dir, "manifests.yaml", yaml);
    let o = Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn", "-k", version, &f])
        .output()
        .expect("kubernetes-validate runs");
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn job_mode_manifests_for_both_volume_modes_valid_for_1_32_and_the_newest_schema() {
    let validator = need::need(
        "job_mode_manifests_for_both_volume_modes",
        &["kubernetes-validate"],
    );
    let d = tempfile::tempdir().unwrap();
    for (mode, spread) in [
        ("filesystem", "node"),
        ("block", "soft"),
        ("filesystem", "none"),
    ] {
        let kube = write(
            d.path(),
            "kube.toml",
            &format!(
                "[kubernetes]\nmode = \"job\"\ncontroller = \"10.0.0.5:7070\"\nnamespace = \"bench\"\n\
                 name = \"j1\"\npods = 3\nstorage_class = \"fast.ssd\"\nvolume_mode = \"{mode}\"\n\
                 spread = \"{spread}\"\nimage = \"registry.lab/iofleet:1\"\ncpu_request = \"500m\"\n\
                 [kubernetes.node_selector]\n\"disktype\" = \"nvme\"\n[[kubernetes.tolerations]]\n\
                 key = \"storage\"\noperator = \"Exists\"\neffect = \"NoSchedule\"\n"
            ),
        );
        let yaml = dry_run(d.path(), &kube, &["--disks", "2", "--disk-size", "1g"]);
        let docs = documents(&yaml);
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Service", "Secret", "Job"], "{yaml}");
        let (secret, job) = (&docs[1], &docs[2]);
        for o in &docs {
            assert_eq!(o["metadata"]["name"], "iofleet-j1");
            assert_eq!(o["metadata"]["namespace"], "bench");
            assert_eq!(o["metadata"]["labels"]["iofleet.io/fleet"], "j1");
        }
        // The token is made by the run: the dry run shows where it goes, not a value.
        assert_eq!(secret["stringData"]["token"], "(made when the run starts)");
        let spec = &job["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 3);
        assert_eq!(spec["parallelism"], 3);
        // No retries: a failed pod is a lost host, and the others go on.
        assert_eq!(spec["backoffLimitPerIndex"], 0);
        assert_eq!(spec["maxFailedIndexes"], 3);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["subdomain"], "iofleet-j1");
        assert_eq!(pod["nodeSelector"]["disktype"], "nvme");
        assert_eq!(pod["tolerations"][0]["key"], "storage");
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "registry.lab/iofleet:1");
        assert_eq!(c["command"], serde_json::json!(["iofleet"]));
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let (root, key) = if mode == "block" {
            ("/dev/iofleet", "volumeDevices")
        } else {
            ("/iofleet", "volumeMounts")
        };
        let disk0 = format!("{root}/disk-0");
        let disk1 = format!("{root}/disk-1");
        assert_eq!(
            args,
            [
                "agent",
                "--join",
                "$(IOFLEET_JOIN)",
                "--target",
                disk0.as_str(),
                "--target",
                disk1.as_str()
            ]
        );
        // The token reaches the agent from the Secret, never on its command line.
        let env = c["env"].as_array().unwrap();
        let token = env
            .iter()
            .find(|e| e["name"] == "IOFLEET_JOIN_TOKEN")
            .unwrap();
        assert_eq!(token["valueFrom"]["secretKeyRef"]["name"], "iofleet-j1");
        assert_eq!(token["valueFrom"]["secretKeyRef"]["key"], "token");
        assert!(!yaml.contains("IOFLEET_JOIN_TOKEN=") && !args.iter().any(|a| a.contains("token")));
        assert_eq!(c[key].as_array().unwrap().len(), 2, "{yaml}");
        // One generic ephemeral volume per disk, of the volume mode, from the class.
        let volumes = pod["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 2);
        for (k, v) in volumes.iter().enumerate() {
            assert_eq!(v["name"], format!("disk-{k}"));
            let t = &v["ephemeral"]["volumeClaimTemplate"];
            assert_eq!(t["metadata"]["labels"]["iofleet.io/fleet"], "j1");
            assert_eq!(t["spec"]["storageClassName"], "fast.ssd");
            assert_eq!(
                t["spec"]["volumeMode"],
                if mode == "block" {
                    "Block"
                } else {
                    "Filesystem"
                }
            );
        }
        match spread {
            "node" => assert!(pod["affinity"]["podAntiAffinity"].is_object(), "{yaml}"),
            "soft" => assert_eq!(
                pod["topologySpreadConstraints"][0]["whenUnsatisfiable"],
                "ScheduleAnyway"
            ),
            _ => assert!(pod.get("affinity").is_none(), "{yaml}"),
        }
        // The pods as hosts: each rank the agent that joins.
        assert!(yaml.contains("#   pod iofleet-j1-2: worker 2"), "{yaml}");
        if validator {
            let (ok, said) = validates_for(d.path(), &yaml, "1.32.0");
            assert!(ok, "{mode}/{spread} for 1.32: {said}\n{yaml}");
            // The newest schema the validator has (its default), whatever it is.
            let (ok, said) = validates(d.path(), &yaml);
            assert!(ok, "{mode}/{spread} for the newest: {said}\n{yaml}");
            let broken = yaml.replacen("completions: 3", "completions: three", 1);
            assert!(!validates_for(d.path(), &broken, "1.32.0").0);
        }
    }
}

#[test]
fn kube_containerfile_carries_this_iofleet() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["kube", "containerfile"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
    assert!(
        text.contains("COPY iofleet /usr/local/bin/iofleet"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("FROM ")), "{text}");
}

#[test]
fn bad_kubernetes_values_exit_2_naming_the_key() {
    let d = tempfile::tempdir().unwrap();
    for (body, says) in [
        ("pods = 2\npodz = 1\n", "podz"),
        ("pods = 0\n", "kubernetes.pods: must be at least 1"),
        ("", "kubernetes.pods"),
        (
            "pods = 2\npods_per_node = 1\nnodes = 2\n",
            "kubernetes.pods",
        ),
        ("pods_per_node = 2\n", "kubernetes.nodes"),
        ("pods_per_node = 2\nnodes = 2\n", "kubernetes.spread"),
        ("pods = 2\nvolume_mode = \"raw\"\n", "volume_mode"),
        ("pods = 2\nspread = \"zone\"\n", "spread"),
        ("pods = 2\nnamespace = \"Bench\"\n", "kubernetes.namespace"),
        ("pods = 2\nname = \"a_b\"\n", "kubernetes.name"),
        (
            "pods = 2\nstorage_class = \"Fast SSD\"\n",
            "kubernetes.storage_class",
        ),
        (
            "pods = 2\nvolume_size = \"12q\"\n",
            "kubernetes.volume_size",
        ),
        (
            "pods = 2\naccess_mode = \"ReadOnlyMany\"\n",
            "kubernetes.access_mode",
        ),
        (
            "pods = 2\naccess_mode = \"RWO\"\n",
            "kubernetes.access_mode",
        ),
        (
            "pods = 2\ncpu_request = \"two\"\n",
            "kubernetes.cpu_request",
        ),
        (
            "pods = 2\nmemory_limit = \"4GB\"\n",
            "kubernetes.memory_limit",
        ),
        (
            "pods = 2\nbind_timeout = \"soon\"\n",
            "kubernetes.bind_timeout",
        ),
        (
            "pods = 2\nready_timeout = \"0s\"\n",
            "kubernetes.ready_timeout",
        ),
        ("pods = 2\nkeep = \"yes\"\n", "keep"),
        ("pods = 2\nimage = \"\"\n", "kubernetes.image"),
        (
            "pods = 2\n[[kubernetes.tolerations]]\noperator = \"In\"\n",
            "kubernetes.tolerations",
        ),
        (
            "pods = 2\n[[kubernetes.tolerations]]\nkey = \"a\"\nefect = \"NoSchedule\"\n",
            "efect",
        ),
        ("pods = 2\nmode = \"cronjob\"\n", "mode"),
        ("pods = 2\nmode = \"job\"\n", "kubernetes.controller"),
        (
            "pods = 2\nmode = \"job\"\ncontroller = \"10.0.0.5\"\n",
            "kubernetes.controller: '10.0.0.5' is not HOST:PORT",
        ),
        (
            "pods = 2\nmode = \"job\"\ncontroller = \"h:1\"\nlisten = \"everywhere\"\n",
            "kubernetes.listen",
        ),
        (
            "pods = 2\nmode = \"job\"\ncontroller = \"h:1\"\nkeep = true\n",
            "kubernetes.keep",
        ),
        ("pods = 2\ncontroller = \"h:1\"\n", "kubernetes.controller"),
    ] {
        let kube = write(d.path(), "kube.toml", &format!("[kubernetes]\n{body}"));
        let o = run_in(
            d.path(),
            &["run", "easy-run-4k70r", "--hosts", &kube, "--dry-run"],
        );
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(says), "{body}: {err}");
        assert!(err.contains("kube.toml"), "{body}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // --listen with --hosts: only a Job-mode fleet's pods join, and they are its agents.
    let job = "[kubernetes]\npods = 2\nmode = \"job\"\ncontroller = \"h:1\"\n";
    for (body, flags, says) in [
        (
            job,
            &["--listen", "0.0.0.0:7070", "--expect", "2"][..],
            "--expect",
        ),
        (job, &["--listen", "nowhere"][..], "--listen \"nowhere\""),
        (
            "[kubernetes]\npods = 2\n",
            &["--listen", "0.0.0.0:7070"][..],
            "only a fleet in Job mode",
        ),
    ] {
        let kube = write(d.path(), "kube.toml", body);
        let mut args = vec!["run", "easy-run-4k70r", "--hosts", &kube, "--dry-run"];
        args.extend_from_slice(flags);
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{flags:?}: {}", stderr(&o));
    }
    let inventory = write(
        d.path(),
        "hosts.toml",
        "[[host]]\ndestination = \"a.invalid\"\n",
    );
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            &inventory,
            "--listen",
            "0.0.0.0:7070",
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is an inventory of hosts"),
        "{}",
        stderr(&o)
    );
    // --advertise names the host the pods dial, at the port listened on.
    let kube = write(d.path(), "kube.toml", job);
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            &kube,
            "--dry-run",
            "--listen",
            "0.0.0.0:7071",
            "--advertise",
            "ctl.lab",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("join: iofleet://ctl.lab:7071/(made when the run starts)"),
        "{}",
        stdout(&o)
    );
    // Hosts beside [kubernetes]: one or the other.
    let kube = write(
        d.path(),
        "kube.toml",
        "[kubernetes]\npods = 1\n[[host]]\ndestination = \"a.invalid\"\n",
    );
    let o = run_in(
        d.path(),
        &["run", "easy-run-4k70r", "--hosts", &kube, "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("remove [[host]]"), "{}", stderr(&o));
}

#[test]
fn a_kubernetes_fleet_is_refused_where_it_cannot_run_before_anything_is_contacted() {
    let d = tempfile::tempdir().unwrap();
    let kube = write(d.path(), "kube.toml", "[kubernetes]\npods = 2\n");
    // The commands that take an inventory of hosts say which commands take this file.
    let o = run_in(d.path(), &["hosts", "clean", "--hosts", &kube]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("Kubernetes fleet"), "{}", stderr(&o));
    // One profile: worker groups are refused, naming the flag.
    let o = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "a=easy-run-4k70r:1",
            "--group",
            "b=easy-run-4k100r:1",
            "--hosts",
            &kube,
            "--dry-run",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--group"), "{}", stderr(&o));
    // A run too, before kubectl is called (the tests' guard kubectl would fail it).
    let o = run_in(
        d.path(),
        &[
            "run",
            "--group",
            "a=easy-run-4k70r:1",
            "--group",
            "b=easy-run-4k100r:1",
            "--hosts",
            &kube,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--group"), "{}", stderr(&o));
    // The dry run is the run's plan: the checks a run makes before it creates anything
    // refuse it too (here --verify with an engine that touches no storage).
    for dry in [true, false] {
        let mut args = vec!["run", "easy-run-4k70r", "--hosts", &kube];
        args.extend(["--engine", "null", "--verify"]);
        if dry {
            args.push("--dry-run");
        }
        let o = run_in(d.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--verify"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "nothing printed: {}", stdout(&o));
    }
}
