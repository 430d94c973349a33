//! A fleet of worker VMs on real libvirt and QEMU (issue 40): `--hosts` naming a `[vms]`
//! file creates the VMs, they join over their channels and run the workload, and
//! nothing is left. One libvirt for the binary (its daemons started here when none runs,
//! a directory pool in a temp dir), guests under software emulation with 256 MiB, short
//! workloads: one test walks every case in turn, so the daemons start and stop once and
//! no two fleets boot at once on this machine's two cores.
//!
//! A remote hypervisor (`qemu+ssh://`) is this machine's libvirt reached through a
//! loopback sshd: virsh goes through libvirt's ssh transport, iofleet's files and the
//! VM's join channel through iofleet's own ssh connection.
//!
//! `--dry-run` is tested without a hypervisor: every document it prints is valid against
//! libvirt's own schemas (`virt-xml-validate`).

mod common;
#[path = "support/iscsi.rs"]
mod iscsi;
#[path = "support/libvirt.rs"]
mod libvirt;
#[path = "support/sshd.rs"]
mod sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{need, Watched};
use serde_json::Value;

/// Bound for a loaded machine (a guest boots in about 7 s under emulation), not a
/// timing claim.
const PATIENCE: Duration = Duration::from_secs(120);

/// A kernel in /boot with its modules: the guest iofleet builds needs one.
fn have_kernel() -> bool {
    std::fs::read_dir("/boot").is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .is_some_and(|v| {
                    Path::new("/lib/modules")
                        .join(v)
                        .join("modules.dep")
                        .is_file()
                })
        })
    })
}

/// A `[vms]` file for fleet `name` of `vms` VMs in `pool`, with `extra` keys.
fn fleet_file(dir: &Path, name: &str, vms: u32, pool: &str, extra: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    let boot = if extra.contains("boot_timeout") {
        ""
    } else {
        "boot_timeout = \"100s\"\n"
    };
    std::fs::write(
        &p,
        format!(
            "[vms]\nname = \"{name}\"\nvms = {vms}\nmemory = \"256m\"\npool = \"{pool}\"\ndomain_type = \"qemu\"\n{boot}{extra}"
        ),
    )
    .unwrap();
    p
}

/// `iofleet run easy-run-4k70r --hosts FILE` with `disks` disks of `size`, for
/// `duration`, its result as JSON on stdout.
fn run_args(file: &Path, disks: &str, size: &str, duration: &str) -> Vec<String> {
    [
        "run",
        "easy-run-4k70r",
        "--hosts",
        file.to_str().unwrap(),
        "--disks",
        disks,
        "--disk-size",
        size,
        "--duration",
        duration,
        "--warmup",
        "0s",
        "--interval",
        "1s",
        "--output-format",
        "json",
        "--no-save",
    ]
    .map(String::from)
    .to_vec()
}

fn run(dir: &Path, args: &[String]) -> Output {
    common::iofleet()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// The same run watched through its metrics endpoint.
fn watched(dir: &Path, args: &[String], extra: &[&str]) -> Watched {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_iofleet"));
    c.current_dir(dir)
        .env("XDG_DATA_HOME", common::scratch_data_home())
        .env("PATH", common::guarded_path())
        .args(args)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra);
    Watched::spawn(c)
}

/// Nothing of fleet `name` is left: no domain, volume, initramfs, QEMU log or QEMU
/// process.
fn nothing_left(lv: &libvirt::Libvirt, name: &str) {
    let prefix = format!("iofleet-{name}-");
    assert_eq!(lv.domains(&prefix), Vec::<String>::new());
    let vols: Vec<String> = lv
        .volumes()
        .into_iter()
        .filter(|v| v.starts_with(&prefix))
        .collect();
    assert_eq!(vols, Vec::<String>::new());
    for dir in ["/var/lib/libvirt/boot", "/var/log/libvirt/qemu"] {
        let left: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{dir}");
    }
    let t0 = Instant::now();
    while libvirt::Libvirt::qemu_processes(&prefix) > 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "a QEMU process stays"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn domstats_writes(domain: &str) -> u64 {
    libvirt::virsh(&["domstats", "--block", domain])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once('=')?;
            (k.starts_with("block.") && k.ends_with(".wr.reqs")).then(|| v.parse::<u64>().ok())?
        })
        .sum()
}

/// Whether a run watched has reached a phase.
type Reached<'a> = dyn Fn(&Watched) -> bool + 'a;

#[test]
fn a_fleet_of_vms_joins_runs_counts_as_the_hypervisor_and_leaves_nothing_on_every_path() {
    let test =
        "a_fleet_of_vms_joins_runs_counts_as_the_hypervisor_and_leaves_nothing_on_every_path";
    if !need::need(
        test,
        &[
            "root",
            "qemu-system-x86_64",
            "virsh",
            "libvirtd",
            "virtlogd",
            "tgtd",
            "tgtadm",
            "mkfs.ext4",
            "qemu-img",
        ],
    ) {
        return;
    }
    if !have_kernel() {
        need::skip(
            "a kernel in /boot with its modules (linux-image-cloud-amd64)",
            test,
        );
        return;
    }
    if !Path::new(ISCSI_DIRECT).exists() {
        need::skip(
            "libvirt's iscsi-direct pools (libvirt-daemon-driver-storage-iscsi-direct)",
            test,
        );
        return;
    }
    let lv = libvirt::Libvirt::start("iofleet-test-vmfleet");
    let d = tempfile::tempdir().unwrap();
    let pool = lv.pool.clone();

    // 1. Two VMs with two data disks each join and run; the hypervisor's count of each
    // disk's requests over the run (a warm-up, the measured phase, the drain) equals
    // iofleet's.
    let f = fleet_file(d.path(), "vf", 2, &pool, "");
    let t0 = Instant::now();
    let mut args = run_args(&f, "2", "16m", "3s");
    args.retain(|a| a != "--no-save");
    let w = args.iter().position(|a| a == "--warmup").unwrap();
    args[w + 1] = "1s".into();
    let o = run(d.path(), &args);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(common::schema_problems(&v), Vec::<String>::new());
    eprintln!("two VMs: the run took {:.1} s", t0.elapsed().as_secs_f64());
    let hosts: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["iofleet-vf-0", "iofleet-vf-1"]);
    let vms = &v["run"]["vms"];
    assert_eq!(vms["domain_type"], "qemu");
    assert!(
        err.contains("vms: destroyed and undefined 2 domain(s), deleted 4 volume(s)"),
        "{err}"
    );
    let plan = &v["run"]["plan"]["fleet"];
    let lanes = plan["threads_per_disk"].as_u64().unwrap() * plan["qd"].as_u64().unwrap();
    let n = |x: &Value| x.as_u64().unwrap();
    for (i, vm) in vms["vms"].as_array().unwrap().iter().enumerate() {
        assert_eq!(vm["domain"], hosts[i]);
        assert_eq!(vm["hypervisor"], libvirt::URI);
        assert_eq!(
            (vm["vcpus"].as_u64(), vm["memory_bytes"].as_u64()),
            (Some(1), Some(256 << 20))
        );
        let t = &vm["timeline"];
        let (df, rn, jn) = (
            t["defined_s"].as_f64().unwrap(),
            t["running_s"].as_f64().unwrap(),
            t["joined_s"].as_f64().unwrap(),
        );
        assert!(df <= rn && rn <= jn, "{t}");
        let worker = v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["host"] == hosts[i])
            .unwrap();
        let disks = vm["disks"].as_array().unwrap();
        assert_eq!(disks.len(), 2);
        for (k, disk) in disks.iter().enumerate() {
            assert_eq!(disk["pool"], pool.as_str());
            assert_eq!(disk["volume"], format!("{}-d{k}", hosts[i]));
            assert_eq!(
                (&disk["bus"], &disk["cache"], &disk["io"]),
                (
                    &Value::from("virtio-blk"),
                    &Value::from("none"),
                    &Value::from("native")
                )
            );
            let ours = &worker["disks"][k];
            let u = &ours["unmeasured"];
            let (warm, after) = (
                n(&u["warmup_reads"]) + n(&u["warmup_writes"]),
                n(&u["after_reads"]) + n(&u["after_writes"]),
            );
            // Every request iofleet sent reached the hypervisor as one request
            // (scheduler none, nomerges 2, O_DIRECT) and nothing else did: the measured
            // I/Os and errors, the warm-up's, and those in flight when the measured
            // phase ended (at most one per lane), drained before the count was read.
            let r = n(&ours["read"]["ios"])
                + n(&ours["read"]["errors"])
                + n(&u["warmup_reads"])
                + n(&u["after_reads"]);
            let w = n(&ours["write"]["ios"])
                + n(&ours["write"]["errors"])
                + n(&u["warmup_writes"])
                + n(&u["after_writes"]);
            let hv = &disk["requests"];
            let (hr, hw) = (n(&hv["reads"]), n(&hv["writes"]));
            assert!(warm > 0, "{ours}");
            assert!((1..=lanes).contains(&after), "{ours}");
            assert_eq!(
                (hr, hw),
                (r, w),
                "disk {k} of {}: hypervisor {hv}, iofleet {ours}",
                hosts[i]
            );
            eprintln!(
                "{} d{k}: hypervisor {hr}+{hw} = iofleet {r}+{w} (warm-up {warm}, in flight at the end {after})",
                hosts[i]
            );
        }
    }
    nothing_left(&lv, "vf");
    // The stored run keeps the facts; the table and the report show them.
    let id = v["stored"]["id"].as_str().unwrap();
    let o = run(
        d.path(),
        &["results", "export", id, "--format", "json"].map(String::from),
    );
    let stored: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stored["run"]["vms"], v["run"]["vms"]);
    let o = run(d.path(), &["results", "show", id].map(String::from));
    let table = common::stdout(&o);
    assert!(
        table.contains("VMs: fleet vf, 2 VM(s) (qemu: software emulation)"),
        "{table}"
    );
    assert!(
        table.contains(&format!("{pool}/iofleet-vf-1-d1")),
        "{table}"
    );
    assert!(table.contains("virtio-blk cache=none io=native"), "{table}");
    // Each disk shows the hypervisor's count and iofleet's, equal (the grid is split
    // in two to fit the width: once in each part).
    let hv = &v["run"]["vms"]["vms"][1]["disks"][1]["requests"];
    let counted = format!("{}+{}", hv["reads"], hv["writes"]);
    assert_eq!(table.matches(&counted).count(), 2, "{counted}: {table}");
    assert!(table.contains("iofleet requests"), "{table}");
    let html = d.path().join("r.html");
    let o = run(
        d.path(),
        &["report", id, "-o", html.to_str().unwrap()].map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"vms\">"), "{page}");
    assert!(page.contains("iofleet-vf-0-d1"));

    // 2. A VM destroyed mid-run is lost at once (its channel closes); one suspended is
    // lost at the host timeout.
    let f = fleet_file(d.path(), "vl", 2, &pool, "");
    let w = watched(
        d.path(),
        &run_args(&f, "1", "16m", "30s"),
        &["--host-timeout", "3s"],
    );
    w.wait_for("iofleet_interval_index", |i| i >= 1.0, PATIENCE);
    libvirt::virsh(&["destroy", "iofleet-vl-1"]).unwrap();
    w.wait_for("iofleet_interval_index", |i| i >= 3.0, PATIENCE);
    libvirt::virsh(&["suspend", "iofleet-vl-0"]).unwrap();
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("host iofleet-vl-1 lost: its agent's connection closed"),
        "{err}"
    );
    assert!(
        err.contains("host iofleet-vl-0 stopped responding: nothing heard from it for 3 s"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let lost: Vec<f64> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["lost_at_s"].as_f64().unwrap())
        .collect();
    assert!(lost[1] < lost[0], "the destroyed VM first: {lost:?}");
    nothing_left(&lv, "vl");

    // 3. Ctrl-C while the domains are defined, while they boot, during the fill and
    // during the measurement: nothing is left.
    let f = fleet_file(d.path(), "vc", 1, &pool, "");
    let args = run_args(&f, "2", "256m", "30s");
    let phases: [(&str, &Reached); 4] = [
        ("define", &|_| !lv.volumes().is_empty()),
        ("boot", &|_| {
            libvirt::virsh(&["domstate", "iofleet-vc-0"]).is_ok_and(|s| s.trim() == "running")
        }),
        ("fill", &|w| {
            w.gauge("iofleet_interval_index").is_none() && domstats_writes("iofleet-vc-0") > 0
        }),
        ("measurement", &|w| {
            w.gauge("iofleet_interval_index").is_some_and(|i| i >= 1.0)
        }),
    ];
    for (phase, reached) in phases {
        let w = watched(d.path(), &args, &[]);
        let t0 = Instant::now();
        while !reached(&w) {
            assert!(
                t0.elapsed() < PATIENCE,
                "never: {phase}: {}",
                w.stderr_now()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        w.signal("-INT");
        let o = w.finish();
        let err = common::stderr(&o);
        assert_ne!(o.status.code(), Some(0), "Ctrl-C during {phase}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        nothing_left(&lv, "vc");
        eprintln!("Ctrl-C during {phase}: exit {:?}", o.status.code());
    }

    // 4. Errors name the key, exit non-zero and leave nothing: a pool that does not
    // exist, a hypervisor that cannot be reached, VMs that do not join in time.
    for (file, says) in [
        (
            fleet_file(d.path(), "ve", 1, "no-such-pool", ""),
            "vms.pool: 'no-such-pool'",
        ),
        (
            {
                let p = d.path().join("unreachable.toml");
                std::fs::write(
                    &p,
                    "[vms]\nname = \"ve\"\nvms = 1\nhypervisors = [\"qemu:///system?socket=/nonexistent/libvirt-sock\"]\n",
                )
                .unwrap();
                p
            },
            "vms.hypervisors: 'qemu:///system?socket=/nonexistent/libvirt-sock' cannot be reached",
        ),
        (
            fleet_file(d.path(), "vt", 1, &pool, "boot_timeout = \"1s\"\n"),
            "vms.boot_timeout: 1 of 1 VM(s) did not join within 1s: iofleet-vt-0 (rank 0)",
        ),
    ] {
        let o = run(d.path(), &run_args(&file, "1", "16m", "2s"));
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // `domain_type = "auto"` asks libvirt: here it lists KVM (which hangs guests on this
    // kind of machine), so the VM never joins and the boot timeout says the domain ran
    // under KVM; where libvirt lists none, it ran under emulation and the hint is absent.
    let auto = d.path().join("va.toml");
    std::fs::write(
        &auto,
        format!("[vms]\nname = \"va\"\nvms = 1\nmemory = \"256m\"\npool = \"{pool}\"\nboot_timeout = \"1s\"\n"),
    )
    .unwrap();
    let o = run(d.path(), &run_args(&auto, "1", "16m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("vms.boot_timeout: 1 of 1 VM(s)"), "{err}");
    let caps = libvirt::virsh(&["capabilities"]).unwrap();
    let x86 = caps
        .split("<arch name='x86_64'>")
        .nth(1)
        .unwrap_or_default();
    let x86 = x86.split("</arch>").next().unwrap_or_default();
    assert_eq!(
        err.contains("the domains ran under KVM (vms.domain_type = \"auto\")"),
        x86.contains("<domain type='kvm'"),
        "{err}"
    );
    nothing_left(&lv, "va");

    // Preconditioning a fleet that goes at the end, or verifying one, is refused before
    // anything is made (exit 2).
    let gone = fleet_file(d.path(), "vp", 1, &pool, "");
    for (cmd, says) in [
        (
            "precondition",
            "vms.keep: fleet 'vp' is removed when this command ends",
        ),
        (
            "verify",
            "a fleet of VMs cannot be verified by a later command",
        ),
    ] {
        let o = run(
            d.path(),
            &[cmd, "--hosts", gone.to_str().unwrap(), "--disks", "1"].map(String::from),
        );
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains(says), "{cmd}: {err}");
    }
    nothing_left(&lv, "ve");
    nothing_left(&lv, "vt");
    nothing_left(&lv, "vp");

    // 5. `iofleet vms clean` removes this fleet's leftovers and nothing else: the
    // domains and volumes a dry run describes, made by hand (and an image guest's seed),
    // beside a fleet whose name starts the same (with an image guest's copy) and a
    // volume of nobody's.
    let mine = fleet_file(d.path(), "vk", 2, &pool, "");
    let theirs = fleet_file(d.path(), "vk-2", 1, &pool, "");
    for f in [&mine, &theirs] {
        for (kind, doc) in dry_run(d.path(), f, "1", "4m").1 {
            let file = d.path().join("doc.xml");
            std::fs::write(&file, &doc).unwrap();
            let file = file.to_str().unwrap();
            match kind.as_str() {
                "volume" => libvirt::virsh(&["vol-create", &pool, file]).unwrap(),
                _ => libvirt::virsh(&["define", file]).unwrap(),
            };
        }
    }
    libvirt::virsh(&["vol-create-as", &pool, "keepme", "1M"]).unwrap();
    // An image guest's seed of this fleet, and a copy of an image of the other.
    libvirt::virsh(&["vol-create-as", &pool, "iofleet-vk-1-seed", "1M"]).unwrap();
    libvirt::virsh(&["vol-create-as", &pool, "iofleet-vk-2-0-boot", "1M"]).unwrap();
    std::fs::write("/var/lib/libvirt/boot/iofleet-vk-1.initrd", "x").unwrap();
    // A run of the fleet finds them in its way, says so and touches none of them.
    let o = run(d.path(), &run_args(&mine, "1", "4m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let said = err
        .split("vms: fleet vk is there already (")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_else(|| panic!("{err}"));
    let mut said: Vec<&str> = said.split(", ").collect();
    said.sort();
    assert_eq!(
        said,
        [
            "/var/lib/libvirt/boot/iofleet-vk-1.initrd",
            "iofleet-vk-0",
            "iofleet-vk-0-d0",
            "iofleet-vk-1",
            "iofleet-vk-1-d0",
            "iofleet-vk-1-seed"
        ],
        "{err}"
    );
    assert!(err.contains("`iofleet vms clean --hosts"), "{err}");
    assert_eq!(
        lv.domains("iofleet-vk-").len(),
        3,
        "a refused run removes nothing"
    );
    let o = run(
        d.path(),
        &[
            "vms",
            "clean",
            "--hosts",
            mine.to_str().unwrap(),
            "--dry-run",
        ]
        .map(String::from),
    );
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    for line in [
        "would remove domain iofleet-vk-0 on qemu:///system",
        "would remove domain iofleet-vk-1 on qemu:///system",
        &format!("would remove volume iofleet-vk-1-d0 of pool {pool} on qemu:///system"),
        &format!("would remove volume iofleet-vk-1-seed of pool {pool} on qemu:///system"),
        "would remove /var/lib/libvirt/boot/iofleet-vk-1.initrd",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert_eq!(out.lines().count(), 6, "{out}");
    assert_eq!(
        lv.domains("iofleet-vk-").len(),
        3,
        "a dry run removes nothing"
    );
    let o = run(
        d.path(),
        &["vms", "clean", "--hosts", mine.to_str().unwrap()].map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(common::stdout(&o).contains("vms: fleet vk removed"));
    assert_eq!(lv.domains("iofleet-vk-"), ["iofleet-vk-2-0"]);
    let mut vols = lv.volumes();
    vols.sort();
    assert_eq!(vols, ["iofleet-vk-2-0-boot", "iofleet-vk-2-0-d0", "keepme"]);
    assert!(!Path::new("/var/lib/libvirt/boot/iofleet-vk-1.initrd").exists());
    let o = run(
        d.path(),
        &["vms", "clean", "--hosts", theirs.to_str().unwrap()].map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    libvirt::virsh(&["vol-delete", "keepme", "--pool", &pool]).unwrap();
    nothing_left(&lv, "vk");
    let o = run(
        d.path(),
        &["vms", "clean", "--hosts", mine.to_str().unwrap()].map(String::from),
    );
    assert!(common::stdout(&o).contains("vms: nothing of fleet vk is there"));

    // 6. A pool of existing LUNs (iSCSI, through libvirt's iscsi-direct pool over a
    // user-space target on loopback): its LUNs are the data disks as they are, under
    // the device rule (one carrying a file system is refused without --destroy-data),
    // and nothing is created or deleted in it.
    let lun_bytes = 64 << 20;
    let luns = iscsi::Iscsi::start("iofleet-test-luns", 2, lun_bytes);
    let ext4 = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&luns.luns[1])
        .status()
        .unwrap();
    assert!(ext4.success());
    let superblock = || {
        let b = std::fs::read(&luns.luns[1]).unwrap();
        u16::from_le_bytes([b[1080], b[1081]])
    };
    assert_eq!(superblock(), 0xEF53);
    let lu = fleet_file(d.path(), "lu", 1, &luns.pool, "");
    let o = run(d.path(), &run_args(&lu, "2", "16m", "2s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ext4") && err.contains("pass --destroy-data to overwrite it"),
        "{err}"
    );
    assert_eq!(superblock(), 0xEF53, "the refused LUN is untouched");
    nothing_left(&lv, "lu");
    // Two VMs need four LUNs: refused before anything is made, naming the key.
    let lu2 = fleet_file(d.path(), "lu", 2, &luns.pool, "");
    let o = run(d.path(), &run_args(&lu2, "2", "16m", "2s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("vms.pool: 'iofleet-test-luns' on qemu:///system is a iscsi-direct pool")
            && err.contains("it has 2 LUN(s), the fleet's 2 VM(s) there need 4"),
        "{err}"
    );
    nothing_left(&lv, "lu");
    let lu = fleet_file(d.path(), "lu", 1, &luns.pool, "");
    let mut args = run_args(&lu, "2", "16m", "2s");
    args.push("--destroy-data".into());
    let o = run(d.path(), &args);
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("the data disks are unit:0:0:1, unit:0:0:2 as they are"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let vm = &v["run"]["vms"]["vms"][0];
    let worker = &v["workers"][0];
    for (k, disk) in vm["disks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(disk["pool"], luns.pool.as_str());
        assert_eq!(disk["volume"], format!("unit:0:0:{}", k + 1));
        let bytes = disk["bytes"].as_u64().unwrap();
        assert!(bytes > lun_bytes - 4096 && bytes <= lun_bytes, "{disk}");
        // The hypervisor's count equals iofleet's here too.
        let (ours, u, hv) = (
            &worker["disks"][k],
            &worker["disks"][k]["unmeasured"],
            &disk["requests"],
        );
        // `unmeasured` is absent when nothing completed outside the measured phase.
        let n = |x: &Value| x.as_u64().unwrap_or(0);
        assert!(ours["read"]["ios"].as_u64().unwrap() > 0, "{ours}");
        assert_eq!(
            n(&hv["reads"]),
            n(&ours["read"]["ios"])
                + n(&ours["read"]["errors"])
                + n(&u["warmup_reads"])
                + n(&u["after_reads"]),
            "{hv} {ours}"
        );
        assert_eq!(
            n(&hv["writes"]),
            n(&ours["write"]["ios"])
                + n(&ours["write"]["errors"])
                + n(&u["warmup_writes"])
                + n(&u["after_writes"]),
            "{hv} {ours}"
        );
    }
    assert_ne!(superblock(), 0xEF53, "overwritten with --destroy-data");
    assert_eq!(luns.volumes(), ["unit:0:0:0", "unit:0:0:1", "unit:0:0:2"]);
    assert!(err.contains("deleted 0 volume(s)"), "{err}");
    nothing_left(&lv, "lu");
    drop(luns);

    // 7. `keep = true`: `iofleet precondition` makes the fleet, writes its disk twice
    // and keeps it; the next command reuses it, the disk's fill marker with it (not
    // filled again); a run asking for other disks is refused, naming `vms clean`.
    let kp = fleet_file(d.path(), "kp", 1, &pool, "keep = true\n");
    let o = run(
        d.path(),
        &[
            "precondition",
            "easy-run-4k70r",
            "--hosts",
            kp.to_str().unwrap(),
            "--disks",
            "1",
            "--disk-size",
            "16m",
            "--json",
        ]
        .map(String::from),
    );
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("vms: kept 1 domain(s) and 1 volume(s)"),
        "{err}"
    );
    let pre: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(pre["complete"], true, "{pre}");
    let written = &pre["disks"][0];
    assert_eq!(written["host"], "iofleet-kp-0", "{pre}");
    assert_eq!(written["bytes_written"], 2 * (16 << 20), "{pre}");
    assert_eq!(lv.domains("iofleet-kp-"), ["iofleet-kp-0"]);
    assert!(lv.volumes().contains(&"iofleet-kp-0-d0".to_string()));
    let o = run(d.path(), &run_args(&kp, "1", "16m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("vms: the kept fleet kp is reused"), "{err}");
    assert!(
        err.contains("1 of 1 disks already carry a valid fill marker"),
        "{err}"
    );
    let o = run(d.path(), &run_args(&kp, "2", "16m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not the fleet this run would keep") && err.contains("vms clean"),
        "{err}"
    );
    let o = run(
        d.path(),
        &["vms", "clean", "--hosts", kp.to_str().unwrap()].map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    nothing_left(&lv, "kp");

    // 8. A remote hypervisor, reached over ssh.
    remote_hypervisor(&lv, d.path(), &pool);

    // 9. A guest booted from an image: a stand-in qcow2 with no boot loader, so it never
    // joins. While the run waits, its copy of the image holds the image's bytes and its
    // seed is the cidata FAT naming the domain, attached read-only; the run ends with the
    // boot timeout and leaves nothing.
    let t6 = Instant::now();
    let image = stand_in_image(d.path());
    let f = fleet_file(
        d.path(),
        "vi",
        1,
        &pool,
        &format!(
            "boot_timeout = \"10s\"\n[vms.guest]\nimage = \"{}\"\n",
            image.display()
        ),
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_iofleet"))
        .env("XDG_DATA_HOME", common::scratch_data_home())
        .env("PATH", common::guarded_path())
        .current_dir(d.path())
        .args(run_args(&f, "1", "4m", "1s"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    while !libvirt::virsh(&["domstate", "iofleet-vi-0"]).is_ok_and(|s| s.trim() == "running") {
        assert!(waited.elapsed() < PATIENCE, "the image VM never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut vols = lv.volumes();
    vols.retain(|v| v.starts_with("iofleet-vi-"));
    vols.sort();
    assert_eq!(
        vols,
        ["iofleet-vi-0-boot", "iofleet-vi-0-d0", "iofleet-vi-0-seed"]
    );
    let copy = d.path().join("boot.copy");
    libvirt::virsh(&[
        "vol-download",
        "--pool",
        &pool,
        "iofleet-vi-0-boot",
        copy.to_str().unwrap(),
    ])
    .unwrap();
    assert!(
        std::fs::read(&copy).unwrap() == std::fs::read(&image).unwrap(),
        "the boot volume holds the image's bytes"
    );
    let info = libvirt::virsh(&["vol-dumpxml", "--pool", &pool, "iofleet-vi-0-boot"]).unwrap();
    assert!(info.contains("<format type='qcow2'/>"), "{info}");
    assert!(
        info.contains(&format!("<capacity unit='bytes'>{}</capacity>", 8u64 << 20)),
        "the image's virtual size: {info}"
    );
    // The seed's first MiB: its boot sector labels it cidata, and meta-data (its first
    // file) names the domain.
    let seed = d.path().join("seed.head");
    libvirt::virsh(&[
        "vol-download",
        "--pool",
        &pool,
        "iofleet-vi-0-seed",
        seed.to_str().unwrap(),
        "--length",
        "1048576",
    ])
    .unwrap();
    let head = std::fs::read(&seed).unwrap();
    assert_eq!(&head[43..54], b"cidata     ", "the seed's label");
    assert_eq!(&head[54..62], b"FAT16   ");
    let text = String::from_utf8_lossy(&head);
    let instance = instance_id(&text);
    assert!(
        instance.starts_with("iofleet-vi-0-") && instance.len() == "iofleet-vi-0-".len() + 12,
        "the seed's instance-id is the domain's and the command's: {instance}"
    );
    assert!(
        text.contains("local-hostname: \"iofleet-vi-0\"\n"),
        "the seed's meta-data names the domain"
    );
    assert!(
        text.contains("--guest-join /run/iofleet/join.json"),
        "the seed's user-data starts the agent"
    );
    let live = libvirt::virsh(&["dumpxml", "iofleet-vi-0"]).unwrap();
    let seed_disk = live
        .split("<disk ")
        .find(|d| d.contains("volume='iofleet-vi-0-seed'"))
        .unwrap_or_else(|| panic!("no seed disk: {live}"));
    assert!(seed_disk.contains("<readonly/>"), "{seed_disk}");
    let boot_disk = live
        .split("<disk ")
        .find(|d| d.contains("volume='iofleet-vi-0-boot'"))
        .unwrap_or_else(|| panic!("no boot disk: {live}"));
    assert!(
        boot_disk.contains("type='qcow2'") && boot_disk.contains("<boot order='1'/>"),
        "{boot_disk}"
    );
    let o = child.wait_with_output().unwrap();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "vms.boot_timeout: 1 of 1 VM(s) did not join within 10s: iofleet-vi-0 (rank 0)"
        ),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    nothing_left(&lv, "vi");
    let seeds: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("iofleet-seed-") && n.ends_with("-iofleet-vi-0"))
        .collect();
    assert_eq!(
        seeds,
        Vec::<String>::new(),
        "the seed's upload file is gone"
    );
    eprintln!("an image guest: {:.1} s", t6.elapsed().as_secs_f64());

    // 10. A kept image fleet is reused by the next command: each VM's copy as it is (not
    // copied again: a stand-in put there between the commands stays), its seed made
    // again with a new instance-id (so cloud-init would start the agent again); a copy
    // of another image's size is refused, naming `vms clean`.
    let t7 = Instant::now();
    let kept = fleet_file(
        d.path(),
        "vj",
        1,
        &pool,
        &format!(
            "keep = true\nboot_timeout = \"2s\"\n[vms.guest]\nimage = \"{}\"\n",
            image.display()
        ),
    );
    let seed_instance = || {
        let head = d.path().join("vj-seed.head");
        libvirt::virsh(&[
            "vol-download",
            "--pool",
            &pool,
            "iofleet-vj-0-seed",
            head.to_str().unwrap(),
            "--length",
            "1048576",
        ])
        .unwrap();
        instance_id(&String::from_utf8_lossy(&std::fs::read(&head).unwrap()))
    };
    let o = run(d.path(), &run_args(&kept, "1", "4m", "1s"));
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let first = seed_instance();
    // Another copy of the same virtual size in its place, as if the guest had changed
    // it: what the next command must boot, not a new copy of the image.
    let replace = |virtual_size: &str| {
        // Kept running (the stand-in never boots): powered off first, as a guest would be.
        let _ = libvirt::virsh(&["destroy", "iofleet-vj-0"]);
        libvirt::virsh(&["vol-delete", "--pool", &pool, "iofleet-vj-0-boot"]).unwrap();
        libvirt::virsh(&[
            "vol-create-as",
            &pool,
            "iofleet-vj-0-boot",
            virtual_size,
            "--format",
            "qcow2",
        ])
        .unwrap();
    };
    let boot_bytes = || {
        let copy = d.path().join("vj-boot.copy");
        let _ = std::fs::remove_file(&copy);
        libvirt::virsh(&[
            "vol-download",
            "--pool",
            &pool,
            "iofleet-vj-0-boot",
            copy.to_str().unwrap(),
        ])
        .unwrap();
        std::fs::read(&copy).unwrap()
    };
    replace("8M");
    let before = boot_bytes();
    assert_ne!(before, std::fs::read(&image).unwrap());
    let o = run(d.path(), &run_args(&kept, "1", "4m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // Reused (an error ends the run, so its notices are not printed): the boot timeout,
    // not the refusal of a fleet in the way.
    assert!(err.contains("vms.boot_timeout: 1 of 1 VM(s)"), "{err}");
    let second = seed_instance();
    assert!(
        second.starts_with("iofleet-vj-0-") && second != first,
        "{first} {second}"
    );
    assert!(boot_bytes() == before, "the kept copy was not copied again");
    replace("4M");
    let o = run(d.path(), &run_args(&kept, "1", "4m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "vms: the kept fleet vj's copy iofleet-vj-0-boot holds an image of {} bytes, less than {}",
            4u64 << 20,
            8u64 << 20
        )) && err.contains("vms clean"),
        "{err}"
    );
    let o = run(
        d.path(),
        &["vms", "clean", "--hosts", kept.to_str().unwrap()].map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    nothing_left(&lv, "vj");
    eprintln!("a kept image fleet: {:.1} s", t7.elapsed().as_secs_f64());
}

/// The instance-id in a seed's `meta-data` (the text of its first MiB).
fn instance_id(seed: &str) -> String {
    seed.split("instance-id: \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no instance-id in the seed"))
        .to_string()
}

/// Wait until `ok`, at most `PATIENCE`.
fn wait_until(what: &str, ok: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < PATIENCE, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The ssh processes of a remote hypervisor's URI (libvirt's transport and iofleet's
/// connection name its key).
fn ssh_processes(key: &Path) -> Vec<String> {
    sshd::pids_matching(key.to_str().unwrap())
        .into_iter()
        .map(sshd::cmdline)
        .filter(|c| !c.is_empty())
        .collect()
}

/// A `qemu+ssh://` hypervisor through a loopback sshd (this machine's libvirt again):
/// one VM joins through its channel forwarded over ssh, runs, and nothing is left of it
/// on the hypervisor or here, no ssh process either; a hypervisor nobody answers for is
/// an error naming `vms.hypervisors`.
fn remote_hypervisor(lv: &libvirt::Libvirt, dir: &Path, pool: &str) {
    let began = Instant::now();
    let Some(cluster) = sshd::Cluster::start_forwarding(1) else {
        return;
    };
    let host = &cluster.hosts[0];
    let key = cluster.client_key.clone();
    // The ssh binary both libvirt and iofleet run (`command=`): the machine's, with
    // the throwaway servers' host keys kept out of root's known_hosts.
    let ssh = dir.join("ssh-loopback");
    std::fs::write(
        &ssh,
        "#!/bin/sh\nexec ssh -o UserKnownHostsFile=/dev/null -o GlobalKnownHostsFile=/dev/null -o LogLevel=ERROR \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let uri = |port: u16| {
        format!(
            "qemu+ssh://root@{}:{port}/system?keyfile={}&no_verify=1&command={}",
            host.addr,
            key.display(),
            ssh.display()
        )
    };
    let remote = uri(host.port);
    let f = fleet_file(dir, "vr", 1, pool, &format!("hypervisors = [{remote:?}]\n"));
    let t0 = Instant::now();
    let w = watched(dir, &run_args(&f, "1", "16m", "2s"), &[]);
    w.wait_for("iofleet_interval_index", |i| i >= 1.0, PATIENCE);
    // The run goes through one ssh connection of iofleet's (its control master, which
    // carries the channel) beside libvirt's own.
    let masters: Vec<String> = ssh_processes(&key)
        .into_iter()
        .filter(|c| c.contains("ControlMaster=yes"))
        .collect();
    assert_eq!(masters.len(), 1, "{masters:?}");
    assert!(
        masters[0].contains(&format!("-p {} -i {}", host.port, key.display())),
        "{masters:?}"
    );
    let o = w.finish();
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    eprintln!(
        "a VM on a remote hypervisor: the run took {:.1} s, joined after {} s",
        t0.elapsed().as_secs_f64(),
        v["run"]["vms"]["joined_after_s"]
    );
    assert_eq!(v["hosts"][0]["host"], "iofleet-vr-0");
    let vm = &v["run"]["vms"]["vms"][0];
    assert_eq!(vm["hypervisor"], remote.as_str());
    let disk = &vm["disks"][0];
    assert_eq!(disk["volume"], "iofleet-vr-0-d0");
    let ours = &v["workers"][0]["disks"][0];
    let (r, w) = (
        ours["read"]["ios"].as_u64().unwrap(),
        ours["write"]["ios"].as_u64().unwrap(),
    );
    let (hr, hw) = (
        disk["requests"]["reads"].as_u64().unwrap(),
        disk["requests"]["writes"].as_u64().unwrap(),
    );
    assert!(r + w > 0 && hr >= r && hw >= w, "{disk} {ours}");
    assert!(
        err.contains("vms: destroyed and undefined 1 domain(s), deleted 1 volume(s)"),
        "{err}"
    );
    nothing_left(lv, "vr");
    let no_ssh = || ssh_processes(&key).is_empty() && cluster.session_pids(0).is_empty();
    wait_until("no ssh process of the remote hypervisor", no_ssh);

    // What a killed command left on the remote hypervisor's file system is found there
    // by name (over ssh): a run refuses it, `vms clean` removes it.
    let left = Path::new("/var/lib/libvirt/boot/iofleet-vr-0.kernel");
    std::fs::write(left, "x").unwrap();
    let o = run(dir, &run_args(&f, "1", "16m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "vms: fleet vr is there already ({}:",
            left.display()
        )),
        "{err}"
    );
    let clean = |extra: &[&str]| {
        let mut a = vec!["vms", "clean", "--hosts", f.to_str().unwrap()];
        a.extend(extra);
        run(dir, &a.into_iter().map(String::from).collect::<Vec<_>>())
    };
    let o = clean(&["--dry-run"]);
    assert_eq!(
        common::stdout(&o).trim(),
        format!("would remove {} on {remote}", left.display())
    );
    assert!(left.exists());
    let o = clean(&[]);
    assert!(
        common::stdout(&o).contains("vms: fleet vr removed"),
        "{o:?}"
    );
    assert!(!left.exists());

    // An image guest's direct-boot kernel is a file of the remote hypervisor: looked for
    // there, over ssh, before anything is created (a dry run, which opens nothing, does
    // not look).
    let sub = dir.join("remote-image");
    std::fs::create_dir_all(&sub).unwrap();
    let image = stand_in_image(&sub);
    let fi = fleet_file(
        dir,
        "vri",
        1,
        pool,
        &format!(
            "hypervisors = [{remote:?}]\n[vms.guest]\nimage = \"{}\"\nkernel = \"/nonexistent/vmlinuz\"\n",
            image.display()
        ),
    );
    let (out, _) = dry_run(dir, &fi, "1", "16m");
    assert!(
        out.contains("directly from kernel /nonexistent/vmlinuz"),
        "{out}"
    );
    let o = run(dir, &run_args(&fi, "1", "16m", "1s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "vms.guest.kernel: /nonexistent/vmlinuz does not exist on hypervisor {remote}"
        )),
        "{err}"
    );
    nothing_left(lv, "vri");

    // A remote hypervisor nobody answers for (a port nobody listens on).
    let port = std::net::TcpListener::bind((host.addr.as_str(), 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = uri(port);
    let f = fleet_file(dir, "vu", 1, pool, &format!("hypervisors = [{gone:?}]\n"));
    let o = run(dir, &run_args(&f, "1", "16m", "2s"));
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("vms.hypervisors: '{gone}' cannot be reached")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    nothing_left(lv, "vu");
    assert_eq!(ssh_processes(&key), Vec::<String>::new());
    eprintln!(
        "the remote hypervisor's cases took {:.1} s",
        began.elapsed().as_secs_f64()
    );
}

/// A stand-in cloud image: 8 MiB of qcow2 holding a pattern in its first MiB and no
/// boot loader (a guest that never joins), made by `qemu-img`.
fn stand_in_image(dir: &Path) -> PathBuf {
    let raw = dir.join("image.raw");
    let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&raw, pattern).unwrap();
    let image = dir.join("image.qcow2");
    let o = std::process::Command::new("qemu-img")
        .args(["convert", "-q", "-f", "raw", "-O", "qcow2"])
        .arg(&raw)
        .arg(&image)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = std::process::Command::new("qemu-img")
        .args(["resize", "-q"])
        .arg(&image)
        .arg("8M")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    // QEMU runs as its own user and reads the copy, not this file; libvirt's upload
    // reads it as root.
    image
}

/// libvirt's storage backend for `iscsi-direct` pools (Debian's
/// libvirt-daemon-driver-storage-iscsi-direct).
const ISCSI_DIRECT: &str =
    "/usr/lib/x86_64-linux-gnu/libvirt/storage-backend/libvirt_storage_backend_iscsi-direct.so";

/// `iofleet run easy-run-4k70r --hosts FILE --disks N --disk-size SIZE --dry-run`,
/// which must succeed: what it printed, and its documents.
/// The stderr of a dry run of `file` that is refused as bad input (exit 2).
fn refused_dry_run(dir: &Path, file: &Path) -> String {
    let o = run(
        dir,
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            file.to_str().unwrap(),
            "--dry-run",
        ]
        .map(String::from),
    );
    let err = common::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    err
}

fn dry_run(dir: &Path, file: &Path, disks: &str, size: &str) -> (String, Vec<(String, String)>) {
    let o = run(
        dir,
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            file.to_str().unwrap(),
            "--disks",
            disks,
            "--disk-size",
            size,
            "--dry-run",
        ]
        .map(String::from),
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let out = common::stdout(&o);
    let docs = documents(&out);
    (out, docs)
}

/// The documents of a `--dry-run` on a `[vms]` file: (volume or domain, its XML).
fn documents(out: &str) -> Vec<(String, String)> {
    let mut docs: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("# ---- ") {
            let kind = rest.split_whitespace().next().unwrap_or_default();
            if kind == "end" {
                break;
            }
            docs.push((kind.to_string(), String::new()));
        } else if let Some((_, doc)) = docs.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

/// `--dry-run` prints every volume's and domain's XML, as libvirt's own schemas accept
/// them, and contacts no hypervisor (the one named does not exist).
#[test]
fn a_dry_run_prints_every_volume_and_domain_valid_for_libvirt() {
    let test = "a_dry_run_prints_every_volume_and_domain_valid_for_libvirt";
    if !need::need(test, &["virt-xml-validate", "qemu-img"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();

    // A guest booted from an image, directly from a kernel: per VM its copy of the
    // image and its seed, then its data disks; the domain boots the copy.
    let image = stand_in_image(d.path());
    let (kernel, initrd) = (d.path().join("vmlinuz"), d.path().join("initrd.img"));
    std::fs::write(&kernel, "k").unwrap();
    std::fs::write(&initrd, "i").unwrap();
    let f = d.path().join("image.toml");
    std::fs::write(
        &f,
        format!(
            "[vms]\nname = \"dri\"\nvms = 2\npool = \"nowhere\"\nhypervisors = [\"qemu:///system?socket=/nonexistent/sock\"]\n[vms.guest]\nimage = \"{}\"\nkernel = \"{}\"\ninitrd = \"{}\"\ncmdline = \"root=LABEL=iofleet-root console=ttyS0\"\n",
            image.display(),
            kernel.display(),
            initrd.display()
        ),
    )
    .unwrap();
    let (out, docs) = dry_run(d.path(), &f, "1", "16m");
    let names: Vec<String> = docs
        .iter()
        .map(|(k, doc)| {
            let name = doc
                .split("<name>")
                .nth(1)
                .and_then(|r| r.split("</name>").next())
                .unwrap_or_default();
            format!("{k} {name}")
        })
        .collect();
    assert_eq!(
        names,
        [
            "volume iofleet-dri-0-boot",
            "volume iofleet-dri-0-seed",
            "volume iofleet-dri-0-d0",
            "volume iofleet-dri-1-boot",
            "volume iofleet-dri-1-seed",
            "volume iofleet-dri-1-d0",
            "domain iofleet-dri-0",
            "domain iofleet-dri-1",
        ],
        "{out}"
    );
    validate_all(d.path(), &docs);
    assert!(docs[0].1.contains("<format type='qcow2'/>"), "{out}");
    assert!(
        docs[0]
            .1
            .contains(&format!("<capacity unit='bytes'>{}</capacity>", 8u64 << 20)),
        "the image's virtual size: {out}"
    );
    let dom = &docs[7].1;
    assert!(
        dom.contains(&format!("<kernel>{}</kernel>", kernel.display())),
        "{dom}"
    );
    assert!(
        dom.contains("<cmdline>root=LABEL=iofleet-root console=ttyS0</cmdline>"),
        "{dom}"
    );
    assert!(dom.contains("volume='iofleet-dri-1-seed'/>\n      <target dev='vdy' bus='virtio'/>\n      <readonly/>"), "{dom}");
    assert!(
        out.contains(&format!(
            "# ---- domain iofleet-dri-1 on qemu:///system?socket=/nonexistent/sock (virsh define FILE): boots volume iofleet-dri-1-boot (a copy of {}, qcow2, vol-upload)",
            image.display()
        )),
        "{out}"
    );
    // The direct boot's files must be on a hypervisor of this machine: checked when the
    // plan is made, an error naming the key and the hypervisor.
    std::fs::remove_file(&initrd).unwrap();
    let err = refused_dry_run(d.path(), &f);
    assert!(
        err.contains(&format!(
            "vms.guest.initrd: {} does not exist on hypervisor qemu:///system?socket=/nonexistent/sock",
            initrd.display()
        )),
        "{err}"
    );

    // The image must exist: an error names the key, before anything is planned.
    std::fs::remove_file(&image).unwrap();
    let err = refused_dry_run(d.path(), &f);
    assert!(
        err.contains(&format!(
            "vms.guest.image: {}: does not exist",
            image.display()
        )),
        "{err}"
    );

    if !have_kernel() {
        need::skip("a kernel in /boot with its modules", test);
        return;
    }
    let f = d.path().join("f.toml");
    std::fs::write(
        &f,
        "[vms]\nname = \"dry\"\nvms = 3\npool = \"nowhere\"\nbus = \"virtio-scsi\"\nqueues = 2\nhypervisors = [\"qemu:///system?socket=/nonexistent/sock\"]\n",
    )
    .unwrap();
    let (out, docs) = dry_run(d.path(), &f, "2", "64m");
    let kinds: Vec<&str> = docs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [vec!["volume"; 6], vec!["domain"; 3]].concat(),
        "{out}"
    );
    validate_all(d.path(), &docs);
    assert!(docs[5].1.contains("<name>iofleet-dry-2-d1</name>"), "{out}");
    // 64 MiB and the fill marker, in whole MiB.
    assert!(
        docs[0].1.contains(&format!(
            "<capacity unit='bytes'>{}</capacity>",
            65u64 << 20
        )),
        "{out}"
    );
    assert!(docs[8].1.contains("<name>iofleet-dry-2</name>"), "{out}");
    assert!(
        docs[8]
            .1
            .contains("/var/lib/libvirt/boot/iofleet-dry-2.initrd"),
        "{out}"
    );
    // Its kernel: the controller's, copied beside the initramfs.
    assert!(
        docs[8]
            .1
            .contains("<kernel>/var/lib/libvirt/boot/iofleet-dry-2.kernel</kernel>"),
        "{out}"
    );
    assert!(out.contains("#   VMs:         3"), "{out}");
    assert!(!out.contains("token"), "{out}");
}

/// Each document valid against libvirt's schema for its kind (`virt-xml-validate`).
fn validate_all(dir: &Path, docs: &[(String, String)]) {
    for (i, (kind, doc)) in docs.iter().enumerate() {
        let file = dir.join(format!("{i}.xml"));
        std::fs::write(&file, doc).unwrap();
        let schema = if kind == "volume" {
            "storagevol"
        } else {
            "domain"
        };
        let v = std::process::Command::new("virt-xml-validate")
            .arg(&file)
            .arg(schema)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{}{}\n{doc}",
            common::stdout(&v),
            common::stderr(&v)
        );
    }
}
