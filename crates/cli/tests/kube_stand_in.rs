//! The stand-in `kubectl` itself (tests/support/kubectl), which the Kubernetes flow
//! tests run iofleet against: that it refuses what an API server refuses, places pods
//! and binds claims as a scheduler and a provisioner would, deletes by cascade, runs
//! `exec` in the image's root, and records every call with its context and namespace.
//! A stand-in that accepted anything would let a flow test pass against a product that
//! a real cluster refuses. The objects are the ones iofleet makes (its `--dry-run`
//! manifests), changed where a test needs a bad one. Only the exec test needs root.

mod common;
#[path = "support/kube_cluster.rs"]
mod kube_cluster;

use std::process::Output;

use common::*;
use kube_cluster::Cluster;
use serde_json::{json, Value};

/// No waiting in these tests: claims are provisioned and containers start at once.
const NOW: [(&str, &str); 2] = [
    ("FAKE_KUBE_BIND_DELAY", "0"),
    ("FAKE_KUBE_READY_DELAY", "0"),
];

/// The objects iofleet makes for a `[kubernetes]` table (with `name`), one disk.
fn manifests(k: &Cluster, name: &str, toml: &str) -> Vec<Value> {
    let kube = k.fleet(name, toml);
    let o = k.iofleet(
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            &kube,
            "--disks",
            "1",
            "--disk-size",
            "16m",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o)
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| {
            d.lines()
                .any(|l| !l.starts_with('#') && !l.trim().is_empty())
        })
        .map(|d| yaml_serde::from_str::<Value>(d).unwrap())
        .collect()
}

/// `kubectl --context CTX -n NS ARGS` with `items` as a JSON List on stdin.
fn call(k: &Cluster, at: (&str, &str), args: &[&str], items: &[Value]) -> Output {
    let mut a = vec!["--context", at.0, "-n", at.1];
    a.extend_from_slice(args);
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": items });
    k.kubectl_with(&a, &list.to_string(), &NOW)
}

fn apply(k: &Cluster, at: (&str, &str), items: &[Value]) -> Output {
    call(k, at, &["apply", "-f", "-"], items)
}

/// The named objects of `kind` in the context and namespace, by name.
fn get(k: &Cluster, at: (&str, &str), kind: &str) -> Vec<Value> {
    let o = call(k, at, &["get", kind, "-o", "json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["items"].as_array().unwrap().clone()
}

fn events(k: &Cluster, at: (&str, &str), kind: &str, name: &str) -> Vec<String> {
    let sel = format!("involvedObject.kind={kind},involvedObject.name={name}");
    let o = call(
        k,
        at,
        &["get", "events", "--field-selector", &sel, "-o", "json"],
        &[],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["reason"].as_str().unwrap(),
                e["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// The refusal of `items`: exit 1 and what kubectl said, the context unchanged.
fn refused(k: &Cluster, at: (&str, &str), items: &[Value]) -> String {
    let before = k.objects_in(at.0);
    let o = apply(k, at, items);
    assert_eq!(o.status.code(), Some(1), "accepted: {}", stdout(&o));
    assert_eq!(k.objects_in(at.0), before, "{}", stderr(&o));
    stderr(&o)
}

fn two_contexts(k: &Cluster) {
    k.configure(&json!({
        "current-context": "other",
        "contexts": {
            "lab": { "namespaces": ["bench"], "nodes": 2 },
            "other": { "namespaces": ["bench"], "nodes": 2 },
        },
    }));
}

const LAB: (&str, &str) = ("lab", "bench");

#[test]
fn refuses_what_an_api_server_refuses_naming_the_field() {
    let Some(k) = Cluster::unprivileged("stand_in_refuses") else {
        return;
    };
    two_contexts(&k);
    let good = manifests(&k, "r1", "namespace = \"bench\"\npods = 2\nkeep = true\n");
    let (svc, set) = (&good[0], &good[1]);

    // A StatefulSet whose selector does not select its template's labels.
    let mut bad = set.clone();
    bad["metadata"]["name"] = json!("iofleet-stray");
    bad["spec"]["selector"]["matchLabels"]["iofleet.io/fleet"] = json!("stray");
    let e = refused(&k, LAB, &[bad]);
    assert!(e.contains("(Invalid, 422)"), "{e}");
    assert!(
        e.contains("spec.template.metadata.labels: Invalid value")
            && e.contains("`selector` does not match template `labels`"),
        "{e}"
    );

    // Objects that fail the OpenAPI schema: a wrong type, an unknown field, a field
    // that is required.
    let mut bad = set.clone();
    bad["spec"]["replicas"] = json!("two");
    let e = refused(&k, LAB, &[bad]);
    assert!(
        e.contains("Error from server (BadRequest)")
            && e.contains("into field spec.replicas of type integer"),
        "{e}"
    );
    let mut bad = set.clone();
    bad["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = json!([]);
    let e = refused(&k, LAB, &[bad]);
    assert!(
        e.contains(
            "strict decoding error: unknown field \"spec.template.spec.containers[0].volumeMount\""
        ),
        "{e}"
    );
    let mut bad = set.clone();
    bad["spec"].as_object_mut().unwrap().remove("selector");
    let e = refused(&k, LAB, &[bad]);
    assert!(e.contains("spec.selector: Required value"), "{e}");
    // A quantity the schema takes as a string but an API server does not.
    let mut bad = set.clone();
    bad["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({ "requests": { "cpu": "two" } });
    let e = refused(&k, LAB, &[bad]);
    assert!(
        e.contains("containers[0].resources.requests[cpu]: Invalid value: \"two\""),
        "{e}"
    );

    // A namespace the context does not have, a context the config does not have.
    let mut elsewhere = svc.clone();
    elsewhere["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    let e = refused(&k, ("lab", "nowhere"), &[elsewhere]);
    assert!(e.contains("namespaces \"nowhere\" not found"), "{e}");
    let o = call(&k, ("nope", "bench"), &["get", "pods", "-o", "name"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("context was not found for specified context: nope"),
        "{}",
        stderr(&o)
    );
    // An object of one namespace applied with --namespace naming another.
    let e = refused(&k, ("lab", "default"), std::slice::from_ref(svc));
    assert!(
        e.contains("the namespace from the provided object \"bench\" does not match the namespace \"default\""),
        "{e}"
    );

    // Stricter than an API server, because a fleet so made would not spread or resolve:
    // a Service that selects none of the pods, an anti-affinity that selects none. (A
    // List is applied item by item, as kubectl does: the Service alone is accepted.)
    let mut stray = svc.clone();
    stray["spec"]["selector"] = json!({ "iofleet.io/fleet": "stray" });
    let o = apply(&k, LAB, &[stray]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = refused(&k, LAB, std::slice::from_ref(set));
    assert!(e.contains("stand-in check"), "{e}");
    assert!(
        e.contains("Service \"iofleet-r1\" selects none of its pods"),
        "{e}"
    );
    let o = apply(&k, LAB, std::slice::from_ref(svc));
    assert!(
        stdout(&o).contains("service/iofleet-r1 configured"),
        "{}",
        stderr(&o)
    );
    let mut lonely = set.clone();
    lonely["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"] =
        json!({ "matchLabels": { "iofleet.io/fleet": "stray" } });
    let e = refused(&k, LAB, &[lonely]);
    assert!(
        e.contains("its required pod anti-affinity selects none of its own pods"),
        "{e}"
    );

    // The fleet as iofleet makes it is accepted; applied again unchanged, it is.
    let o = apply(&k, LAB, &good);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("statefulset.apps/iofleet-r1 created"),
        "{}",
        stdout(&o)
    );
    let o = apply(&k, LAB, &good);
    assert!(
        stdout(&o).contains("statefulset.apps/iofleet-r1 unchanged"),
        "{}",
        stdout(&o)
    );

    // A kept fleet re-applied with another claim template: 422, the kept one stays.
    let mut bigger = set.clone();
    bigger["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] =
        json!("2Gi");
    let e = refused(&k, LAB, &[bigger]);
    assert!(e.contains("(Invalid, 422)"), "{e}");
    assert!(
        e.contains("spec: Forbidden: updates to statefulset spec for fields other than 'replicas'")
            && e.contains("are forbidden (changed: volumeClaimTemplates)"),
        "{e}"
    );
    let kept = k.object("lab", "StatefulSet/bench/iofleet-r1");
    assert_eq!(
        kept["spec"]["volumeClaimTemplates"],
        set["spec"]["volumeClaimTemplates"]
    );
    // So are its selector and its service name; its replicas are not fixed.
    let mut renamed = set.clone();
    renamed["spec"]["serviceName"] = json!("iofleet-r2");
    assert!(refused(&k, LAB, &[renamed]).contains("(changed: serviceName)"));
    let mut three = set.clone();
    three["spec"]["replicas"] = json!(3);
    let o = apply(&k, LAB, &[three]);
    assert!(
        stdout(&o).contains("statefulset.apps/iofleet-r1 configured"),
        "{}",
        stderr(&o)
    );
    let pods: Vec<Value> = get(&k, LAB, "pods");
    assert_eq!(pods.len(), 3);

    // Every call is on record with its context and namespace; the current context,
    // other, was never named and never used.
    let calls = k.calls();
    let (nope, lab): (Vec<&Value>, Vec<&Value>) =
        calls.iter().partition(|c| c["context"] == "nope");
    assert_eq!(nope.len(), 1);
    assert!(nope[0]["in_context"].is_null());
    for c in &lab {
        assert_eq!(
            (&c["context"], &c["in_context"]),
            (&json!("lab"), &json!("lab")),
            "{c}"
        );
    }
    // The refused applies are on record too, each naming its objects.
    let forbidden = lab
        .iter()
        .filter(|c| c["verb"] == "apply" && c["objects"] == json!(["StatefulSet/iofleet-r1"]))
        .count();
    assert!(forbidden >= 8, "{calls:?}");
    assert!(k.objects_in("other").is_empty());
}

#[test]
fn a_wait_for_first_consumer_claim_stays_pending_until_its_pod_is_placed() {
    let Some(k) = Cluster::unprivileged("stand_in_wait_for_first_consumer") else {
        return;
    };
    let nodes = |labelled: bool| {
        json!([
            { "name": "node-0" },
            { "name": "node-1", "labels": if labelled { json!({ "disktype": "nvme" }) } else { json!({}) } },
        ])
    };
    let config = |labelled: bool| {
        json!({
            "current-context": "lab",
            "contexts": { "lab": { "namespaces": ["bench"], "nodes": nodes(labelled) } },
        })
    };
    k.configure(&config(false));
    let pinned =
        "namespace = \"bench\"\npods = 1\n[kubernetes.node_selector]\ndisktype = \"nvme\"\n";
    // fast binds when its pod is placed (WaitForFirstConsumer); fast-now at once.
    let late = manifests(&k, "late", &format!("storage_class = \"fast\"\n{pinned}"));
    let now = manifests(
        &k,
        "now",
        &format!("storage_class = \"fast-now\"\n{pinned}"),
    );
    for m in [&late, &now] {
        let o = apply(&k, LAB, m);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let claims = get(&k, LAB, "persistentvolumeclaims");
    let phase = |claims: &[Value], name: &str| {
        claims
            .iter()
            .find(|c| c["metadata"]["name"] == name)
            .map(|c| c["status"]["phase"].as_str().unwrap().to_string())
    };
    assert_eq!(
        phase(&claims, "disk-0-iofleet-now-0").as_deref(),
        Some("Bound")
    );
    assert_eq!(
        phase(&claims, "disk-0-iofleet-late-0").as_deref(),
        Some("Pending")
    );
    assert_eq!(
        events(&k, LAB, "PersistentVolumeClaim", "disk-0-iofleet-late-0"),
        ["WaitForFirstConsumer: waiting for first consumer to be created before binding"]
    );
    // No node has the label: both pods stay Pending, saying why, node by node.
    for pod in get(&k, LAB, "pods") {
        assert_eq!(pod["status"]["phase"], "Pending", "{pod}");
        assert!(pod["spec"]["nodeName"].is_null(), "{pod}");
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert_eq!(
            events(&k, LAB, "Pod", name),
            ["FailedScheduling: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."]
        );
    }
    // Still Pending, call after call, however long.
    assert_eq!(
        phase(
            &get(&k, LAB, "persistentvolumeclaims"),
            "disk-0-iofleet-late-0"
        )
        .as_deref(),
        Some("Pending")
    );

    // node-1 gets the label: the pods go there, the claim is provisioned for it, and
    // the pods start.
    k.configure(&config(true));
    let claims = get(&k, LAB, "persistentvolumeclaims");
    assert_eq!(
        phase(&claims, "disk-0-iofleet-late-0").as_deref(),
        Some("Bound")
    );
    let late_claim = claims
        .iter()
        .find(|c| c["metadata"]["name"] == "disk-0-iofleet-late-0")
        .unwrap();
    assert_eq!(
        late_claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        "node-1"
    );
    for pod in get(&k, LAB, "pods") {
        assert_eq!(pod["spec"]["nodeName"], "node-1", "{pod}");
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    }
}

#[test]
fn pods_go_only_where_taints_capacity_and_spread_allow() {
    let Some(k) = Cluster::unprivileged("stand_in_scheduling") else {
        return;
    };
    let nodes = json!([
        { "name": "node-0", "labels": { "disktype": "nvme" },
          "taints": [{ "key": "storage", "value": "only", "effect": "NoSchedule" }] },
        { "name": "node-1", "capacity": { "cpu": "1" } },
        { "name": "node-2" },
    ]);
    k.configure(&json!({
        "current-context": "lab",
        "contexts": {
            "lab": { "namespaces": ["bench"], "nodes": nodes },
            "ignore": { "namespaces": ["bench"], "nodes": nodes },
        },
    }));
    let at_in = |ctx: &str, name: &str| -> Vec<(String, Option<String>)> {
        get(&k, (ctx, "bench"), "pods")
            .iter()
            .filter(|p| p["metadata"]["labels"]["iofleet.io/fleet"] == name)
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_string(),
                    p["spec"]["nodeName"].as_str().map(str::to_string),
                )
            })
            .collect()
    };
    let at = |name: &str| at_in("lab", name);
    let place = |name: &str, toml: &str| {
        let m = manifests(
            &k,
            name,
            &format!("namespace = \"bench\"\nstorage_class = \"fast\"\n{toml}"),
        );
        let o = apply(&k, LAB, &m);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
    };
    // More CPU than any node has: each node says why not.
    place("big", "pods = 1\ncpu_request = \"8\"\n");
    assert_eq!(at("big"), [("iofleet-big-0".to_string(), None)]);
    assert_eq!(
        events(&k, LAB, "Pod", "iofleet-big-0"),
        ["FailedScheduling: 0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {storage: only}."]
    );
    // The tainted node, for pods that ask for it and tolerate its taint.
    place(
        "pin",
        "pods = 1\n[kubernetes.node_selector]\ndisktype = \"nvme\"\n",
    );
    assert_eq!(at("pin"), [("iofleet-pin-0".to_string(), None)]);
    place(
        "tol",
        "pods = 1\n[kubernetes.node_selector]\ndisktype = \"nvme\"\n[[kubernetes.tolerations]]\nkey = \"storage\"\noperator = \"Exists\"\neffect = \"NoSchedule\"\n",
    );
    assert_eq!(
        at("tol"),
        [("iofleet-tol-0".to_string(), Some("node-0".to_string()))]
    );
    // Two pods per node (pods_per_node: a hard spread, maxSkew 1), one CPU each. Over
    // node-1 and node-2: node-1 holds one, and a fourth pod on node-2 would be two more
    // than node-1 has, so it waits (without the constraint node-2 would take it).
    let even = "pods_per_node = 2\nnodes = 2\nspread = \"soft\"\ncpu_request = \"1\"\n";
    let m = manifests(
        &k,
        "even",
        &format!("namespace = \"bench\"\nstorage_class = \"fast\"\n{even}"),
    );
    let o = apply(&k, LAB, &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let counts = |pods: &[(String, Option<String>)]| {
        ["node-0", "node-1", "node-2"].map(|n| {
            pods.iter()
                .filter(|(_, at)| at.as_deref() == Some(n))
                .count()
        })
    };
    let placed = at("even");
    assert_eq!(counts(&placed), [0, 1, 2], "{placed:?}");
    let waiting: Vec<&String> = placed
        .iter()
        .filter(|(_, at)| at.is_none())
        .map(|(p, _)| p)
        .collect();
    assert_eq!(waiting.len(), 1, "{placed:?}");
    let why = "FailedScheduling: 0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints, 1 node(s) had untolerated taint {storage: only}.";
    assert_eq!(events(&k, LAB, "Pod", waiting[0]), [why]);
    // That needs nodeTaintsPolicy Honor, which iofleet sets: by Kubernetes' default the
    // tainted node-0 is a domain of the spread with no pod, so node-2 holds one pod too.
    let mut ignore = m.clone();
    ignore[1]["spec"]["template"]["spec"]["topologySpreadConstraints"][0]
        .as_object_mut()
        .unwrap()
        .remove("nodeTaintsPolicy");
    let o = apply(&k, ("ignore", "bench"), &ignore);
    assert!(o.status.success(), "{}", stderr(&o));
    let placed = at_in("ignore", "even");
    assert_eq!(counts(&placed), [0, 1, 1], "{placed:?}");
}

#[test]
fn delete_waits_for_dependents_or_leaves_them_by_cascade() {
    let Some(k) = Cluster::unprivileged("stand_in_delete_cascade") else {
        return;
    };
    two_contexts(&k);
    // keep = false: the StatefulSet owns its claims (retention policy Delete).
    let fleet = manifests(
        &k,
        "d1",
        "namespace = \"bench\"\npods = 2\nstorage_class = \"fast\"\n",
    );
    let kinds = |k: &Cluster| -> Vec<String> {
        let mut v: Vec<String> = k
            .objects_in("lab")
            .iter()
            .map(|o| o.split('/').next().unwrap().to_string())
            .collect();
        v.dedup();
        v
    };
    let make = || {
        let o = apply(&k, LAB, &fleet);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(get(&k, LAB, "pods").len(), 2);
        assert_eq!(
            kinds(&k),
            [
                "PersistentVolume",
                "PersistentVolumeClaim",
                "Pod",
                "Service",
                "StatefulSet"
            ]
        );
    };
    let delete = |args: &[&str]| {
        let mut a = vec!["delete", "statefulset/iofleet-d1"];
        a.extend_from_slice(args);
        let o = call(&k, LAB, &a, &[]);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    };

    // Foreground and waiting (as iofleet deletes): when the call returns, the pods,
    // the claims and their volumes are gone.
    make();
    delete(&["--cascade=foreground", "--wait=true"]);
    assert_eq!(kinds(&k), ["Service"]);
    // Foreground without waiting: the set stays, being deleted, until the cluster moves.
    make();
    delete(&["--cascade=foreground", "--wait=false"]);
    let set = k.object("lab", "StatefulSet/bench/iofleet-d1");
    assert!(set["metadata"]["deletionTimestamp"].is_string(), "{set}");
    assert_eq!(set["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert_eq!(get(&k, LAB, "statefulsets").len(), 0);
    assert_eq!(kinds(&k), ["Service"]);
    // Background (kubectl's default): the set goes at once, its pods and claims when
    // the garbage collector passes (the next call).
    make();
    delete(&[]);
    assert_eq!(
        kinds(&k),
        [
            "PersistentVolume",
            "PersistentVolumeClaim",
            "Pod",
            "Service"
        ]
    );
    assert_eq!(get(&k, LAB, "pods").len(), 0);
    assert_eq!(kinds(&k), ["Service"]);
    // Orphan: the pods and claims stay, owned by nothing.
    make();
    delete(&["--cascade=orphan"]);
    let pods = get(&k, LAB, "pods");
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["metadata"]["ownerReferences"] == json!([])),
        "{pods:?}"
    );
    assert_eq!(get(&k, LAB, "persistentvolumeclaims").len(), 2);

    // A claim a pod still uses waits for the pod (pvc-protection): without --wait it is
    // left Terminating; with a short --timeout the wait fails saying so.
    let o = call(
        &k,
        LAB,
        &[
            "delete",
            "persistentvolumeclaims",
            "disk-0-iofleet-d1-0",
            "--timeout=1s",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "timed out waiting for the condition on persistentvolumeclaims/disk-0-iofleet-d1-0"
        ),
        "{}",
        stderr(&o)
    );
    let claim = k.object("lab", "PersistentVolumeClaim/bench/disk-0-iofleet-d1-0");
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let o = call(
        &k,
        LAB,
        &["delete", "pod/iofleet-d1-0", "pod/iofleet-d1-1"],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = call(
        &k,
        LAB,
        &[
            "delete",
            "persistentvolumeclaims",
            "-l",
            "iofleet.io/fleet=d1",
            "--wait=true",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(kinds(&k), ["Service"]);
    assert!(k.objects_in("other").is_empty());
}

#[test]
fn exec_runs_in_the_images_root_or_the_hosts_usr_without_one() {
    let Some(k) = Cluster::new("stand_in_exec_in_the_image") else {
        return;
    };
    let image = k.image();
    k.configure(&json!({
        "current-context": "lab",
        "contexts": { "lab": { "namespaces": ["bench"], "nodes": 2 } },
        "images": { "debian:bookworm-slim": image, "busybox:1.36": image },
    }));
    let m = manifests(
        &k,
        "x1",
        "namespace = \"bench\"\npods = 1\nstorage_class = \"fast\"\n",
    );
    let o = apply(&k, LAB, &m);
    assert!(o.status.success(), "{}", stderr(&o));
    let sh = |script: &str| {
        let o = call(
            &k,
            LAB,
            &[
                "exec",
                "iofleet-x1-0",
                "-c",
                "agent",
                "--",
                "sh",
                "-c",
                script,
            ],
            &[],
        );
        (o.status.code(), stdout(&o), stderr(&o))
    };
    // The image's files, not the host's: its marker, no python3, its own /usr/bin.
    let (code, out, err) = sh("cat /etc/iofleet-test-image; command -v python3 || echo no python3");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "a minimal image made by the tests\nno python3\n");
    let (_, out, _) = sh("ls /usr/bin");
    let mut tools: Vec<&str> = out.lines().collect();
    tools.sort();
    assert!(
        tools.contains(&"sha256sum") && tools.len() == 16,
        "{tools:?}"
    );
    // The image is read-only, the container's home and the volume are writable.
    let (code, _, err) = sh("touch /usr/bin/x");
    assert_ne!(code, Some(0));
    assert!(err.contains("Read-only file system"), "{err}");
    let (code, _, err) = sh("touch /root/x /iofleet/disk-0/x && ls /iofleet/disk-0");
    assert_eq!(code, Some(0), "{err}");

    // An image the cluster cannot pull: the pod waits, saying so, and takes no exec.
    let mut other = m.clone();
    other[1]["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nowhere/none:1");
    other[1]["metadata"]["name"] = json!("iofleet-x2");
    other[1]["spec"]["serviceName"] = json!("iofleet-x1");
    let o = apply(&k, LAB, &other[1..]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pod = get(&k, LAB, "pods")
        .into_iter()
        .find(|p| p["metadata"]["name"] == "iofleet-x2-0")
        .unwrap();
    assert_eq!(
        pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "ImagePullBackOff",
        "{pod}"
    );
    let o = call(&k, LAB, &["exec", "iofleet-x2-0", "--", "true"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unable to upgrade connection"),
        "{}",
        stderr(&o)
    );

    // Without images in the config: the host's /usr (read-only), as the flow tests
    // that give none run.
    k.configure(&json!({
        "current-context": "lab",
        "contexts": { "lab": { "namespaces": ["bench"], "nodes": 2 } },
    }));
    // (A new pod: its StatefulSet makes it again.)
    let o = call(&k, LAB, &["delete", "pod/iofleet-x1-0"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, out, err) =
        sh("command -v python3; test -e /etc/iofleet-test-image || echo no marker; touch /usr/x");
    assert_ne!(code, Some(0));
    assert!(out.ends_with("python3\nno marker\n"), "{out}");
    assert!(err.contains("Read-only file system"), "{err}");
}

#[test]
fn the_manifests_iofleet_makes_pass_every_check() {
    let Some(k) = Cluster::unprivileged("stand_in_takes_iofleets_manifests") else {
        return;
    };
    two_contexts(&k);
    // Each spread (its anti-affinity or constraint checked against the pods' labels),
    // both volume modes (mounts and devices checked against the claim templates); the
    // schemas of all twelve combinations are checked in tests/kubernetes.rs.
    for (mode, spread) in [
        ("filesystem", "node"),
        ("block", "soft"),
        ("filesystem", "none"),
        ("block", "per-node"),
    ] {
        {
            let shape = if spread == "per-node" {
                "pods_per_node = 2\nnodes = 2\nspread = \"soft\"\n".to_string()
            } else {
                format!("pods = 3\nspread = \"{spread}\"\n")
            };
            let m = manifests(
                &k,
                "m1",
                &format!(
                    "namespace = \"bench\"\nvolume_mode = \"{mode}\"\n{shape}cpu_request = \"500m\"\nmemory_limit = \"2Gi\"\n\
                     [[kubernetes.tolerations]]\nkey = \"storage\"\noperator = \"Exists\"\n"
                ),
            );
            let o = call(&k, LAB, &["apply", "-f", "-", "--dry-run=server"], &m);
            assert!(o.status.success(), "{mode}/{spread}: {}", stderr(&o));
            assert!(
                stdout(&o).contains("statefulset.apps/iofleet-m1 created (server dry run)"),
                "{}",
                stdout(&o)
            );
        }
    }
    // A server dry run keeps nothing.
    assert!(k.objects_in("lab").is_empty());
}
