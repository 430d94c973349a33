//! Malformed input: every case is one clear error naming the key or flag, exit code 2,
//! no panic, and nothing written to the target.

mod common;

use std::fs;

use common::*;

/// Run and expect exit 2 with every `needles` in stderr and no panic.
fn expect_input_error(dir: &std::path::Path, args: &[&str], needles: &[&str]) {
    let o = run_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "args {args:?}\nstderr: {err}");
    assert!(!err.contains("panicked"), "panic for {args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "args {args:?}: stderr lacks {n:?}:\n{err}");
    }
}

fn profile_file(dir: &std::path::Path, body: &str) -> String {
    let p = dir.join("p.toml");
    fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

const BASE: &str =
    "name = \"t\"\n[fleet]\nworkers = 1\ndisk_size = \"4m\"\n[timing]\nduration = \"1s\"\n";

#[test]
fn unknown_toml_key() {
    let d = tempfile::tempdir().unwrap();
    let p = profile_file(
        d.path(),
        &format!("{BASE}[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\ncolour = 3\n"),
    );
    expect_input_error(d.path(), &["run", &p, "--engine", "null"], &["colour"]);
}

#[test]
fn read_pct_out_of_range_in_toml_and_flag() {
    let d = tempfile::tempdir().unwrap();
    let p = profile_file(
        d.path(),
        &format!("{BASE}[[stream]]\nbs = \"4k\"\nread_pct = 150\nrandom_pct = 100\n"),
    );
    expect_input_error(
        d.path(),
        &["run", &p, "--engine", "null"],
        &["read_pct", "150"],
    );
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--read-pct",
            "150",
        ],
        &["--read-pct", "150"],
    );
}

#[test]
fn block_size_zero_and_unaligned_with_direct_io() {
    let d = tempfile::tempdir().unwrap();
    expect_input_error(
        d.path(),
        &["run", "easy-run-4k70r", "--engine", "null", "--bs", "0"],
        &["--bs"],
    );
    let p = profile_file(
        d.path(),
        &format!("{BASE}[[stream]]\nbs = \"1000\"\nread_pct = 50\nrandom_pct = 100\n"),
    );
    expect_input_error(d.path(), &["run", &p, "--engine", "null"], &["bs", "512"]);
    // Without direct I/O the same size is accepted.
    let o = run_in(
        d.path(),
        &[
            "run",
            &p,
            "--engine",
            "null",
            "--direct=false",
            "--duration",
            "200ms",
            "--interval",
            "100ms",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn qd_zero() {
    let d = tempfile::tempdir().unwrap();
    expect_input_error(
        d.path(),
        &["run", "easy-run-4k70r", "--engine", "null", "--qd", "0"],
        &["--qd"],
    );
    let p = profile_file(
        d.path(),
        "name = \"t\"\n[fleet]\nqd = 0\n[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\n",
    );
    expect_input_error(d.path(), &["run", &p, "--engine", "null"], &["qd"]);
}

#[test]
fn hosts_clean_without_a_readable_inventory() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["hosts", "clean", "--hosts", "missing.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.toml"), "{}", stderr(&o));
    let o = run_in(d.path(), &["hosts", "clean"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--hosts"), "{}", stderr(&o));
}

#[test]
fn max_uploads_zero_or_not_a_number() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["0", "-1", "many"] {
        expect_input_error(
            d.path(),
            &[
                "run",
                "easy-run-4k70r",
                "--engine",
                "null",
                "--max-uploads",
                bad,
            ],
            &["--max-uploads"],
        );
    }
}

#[test]
fn min_hosts_none_out_of_range_or_not_a_number() {
    let d = tempfile::tempdir().unwrap();
    for (bad, why) in [
        ("0", "at least 1 host"),
        ("0%", "above 0% and at most 100%"),
        ("101%", "above 0% and at most 100%"),
        ("abc", "not a number of hosts or a percentage"),
    ] {
        expect_input_error(
            d.path(),
            &[
                "run",
                "easy-run-4k70r",
                "--engine",
                "null",
                "--min-hosts",
                bad,
            ],
            &["--min-hosts", why],
        );
    }
    // --tolerate-host-loss is the quorum of none: not both.
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--min-hosts",
            "2",
            "--tolerate-host-loss",
        ],
        &["--min-hosts", "--tolerate-host-loss"],
    );
}

#[test]
fn cpus_the_process_may_not_use_or_that_do_not_parse() {
    let d = tempfile::tempdir().unwrap();
    // CPU 4000 exists on no machine this runs on; the error says which CPUs may be used.
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--cpus",
            "0,4000",
        ],
        &["--cpus", "CPU 4000", "may use"],
    );
    expect_input_error(
        d.path(),
        &["run", "easy-run-4k70r", "--engine", "null", "--cpus", "2-1"],
        &["--cpus", "descending"],
    );
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--io-threads",
            "0",
        ],
        &["--io-threads"],
    );
    let p = profile_file(
        d.path(),
        "name = \"t\"\n[fleet]\ncpus = \"4000\"\n[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\n",
    );
    expect_input_error(
        d.path(),
        &["run", &p, "--engine", "null"],
        &["fleet.cpus", "CPU 4000"],
    );
}

#[test]
fn working_set_zero_and_over_100() {
    let d = tempfile::tempdir().unwrap();
    for v in ["0", "120"] {
        expect_input_error(
            d.path(),
            &[
                "run",
                "easy-run-4k70r",
                "--engine",
                "null",
                "--working-set",
                v,
            ],
            &["--working-set", v],
        );
        let p = profile_file(d.path(), &format!("{BASE}[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\nworking_set_pct = {v}\n"));
        expect_input_error(
            d.path(),
            &["run", &p, "--engine", "null"],
            &["working_set_pct"],
        );
    }
}

#[test]
fn target_is_an_existing_regular_file() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("precious.dat");
    fs::write(&f, b"keep me").unwrap();
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            f.to_str().unwrap(),
            "--disk-size",
            "4m",
            "--duration",
            "1s",
        ],
        &["--target", "precious.dat"],
    );
    assert_eq!(fs::read(&f).unwrap(), b"keep me");
}

#[test]
fn disk_size_larger_than_free_space() {
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("data");
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            t.to_str().unwrap(),
            "--disk-size",
            "1000t",
            "--duration",
            "1s",
        ],
        &["--disk-size"],
    );
    // Nothing was created, not even an empty target directory.
    assert!(!t.exists(), "the refused run left {} behind", t.display());
}

#[test]
fn negative_numbers_reach_the_flags_own_range_check() {
    let d = tempfile::tempdir().unwrap();
    for (flag, value, why) in [
        ("--qd", "-1", "must be at least 1"),
        ("--workers", "-2", "must be at least 1"),
        ("--threads", "-1", "must be at least 1"),
        ("--read-pct", "-5", "must be at least 0"),
        ("--random-pct", "-0.5", "must be at least 0"),
        ("--rate", "-10", "must be greater than 0"),
        ("--disk-size", "-4k", "'-4k' is negative"),
        ("--bs", "-4k", "'-4k' is negative"),
        ("--duration", "-1s", "'-1s' is negative"),
    ] {
        for profile in [Some("easy-run-4k70r"), None] {
            let mut args = vec!["run"];
            args.extend(profile);
            args.extend([flag, value, "--engine", "null"]);
            let o = run_in(d.path(), &args);
            let err = stderr(&o);
            assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
            expect_input_error(d.path(), &args, &[flag, why]);
        }
    }
    // A flag after a numeric flag is still a flag, not its value.
    expect_input_error(
        d.path(),
        &["run", "easy-run-4k70r", "--qd", "--json"],
        &["--qd", "a value is required"],
    );
}

#[test]
fn group_with_no_workers_says_workers_must_be_at_least_1() {
    let d = tempfile::tempdir().unwrap();
    for spec in ["a=easy-run-4k70r:0", "a=easy-run-4k70r:-1"] {
        expect_input_error(
            d.path(),
            &["run", "--group", spec, "--engine", "null"],
            &["--group", "workers must be at least 1"],
        );
    }
}

#[test]
fn run_help_marks_no_override_flag_as_required() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["run", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = stdout(&o);
    assert!(
        help.contains("--read-pct") && help.contains("--dry-run"),
        "{help}"
    );
    assert!(!help.contains("Required"), "{help}");
}

#[test]
fn unknown_profile_name_lists_valid_ones_and_suggests_the_nearest() {
    let d = tempfile::tempdir().unwrap();
    let guess = "unknown profile 'easy-run-4k70' (did you mean 'easy-run-4k70r'?)";
    expect_input_error(
        d.path(),
        &["run", "easy-run-4k70", "--engine", "null"],
        &[guess, "easy-run-4k100r"],
    );
    expect_input_error(d.path(), &["profiles", "show", "easy-run-4k70"], &[guess]);
    expect_input_error(d.path(), &["profiles", "show", "nope"], &["nope"]);
}

#[test]
fn duration_with_bad_unit() {
    let d = tempfile::tempdir().unwrap();
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--duration",
            "10x",
        ],
        &["--duration", "10x"],
    );
    let p = profile_file(d.path(), "name = \"t\"\n[timing]\nduration = \"10x\"\n[[stream]]\nbs = \"4k\"\nread_pct = 50\nrandom_pct = 100\n");
    expect_input_error(
        d.path(),
        &["run", &p, "--engine", "null"],
        &["duration", "10x"],
    );
}

#[test]
fn weight_list_that_does_not_parse() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["512:x,4k:60", "4k:60,", ":5"] {
        expect_input_error(
            d.path(),
            &["run", "easy-run-4k70r", "--engine", "null", "--bs", bad],
            &["--bs"],
        );
        let p = profile_file(
            d.path(),
            &format!("{BASE}[[stream]]\nbs = \"{bad}\"\nread_pct = 50\nrandom_pct = 100\n"),
        );
        expect_input_error(d.path(), &["run", &p, "--engine", "null"], &["bs"]);
    }
}

#[test]
fn output_file_in_missing_directory() {
    let d = tempfile::tempdir().unwrap();
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--engine",
            "null",
            "--output",
            "/nonexistent/dir/r.json",
        ],
        &["--output"],
    );
}

#[test]
fn o_direct_refused_by_the_filesystem_suggests_direct_false() {
    // tmpfs accepts O_DIRECT on recent kernels; ramfs never does. Mounting needs root.
    let test = "o_direct_refused_by_the_filesystem_suggests_direct_false";
    if !need::need(test, &["root", "mount"]) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("ram");
    std::fs::create_dir(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "ramfs", "ramfs", mnt.to_str().unwrap()])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    // A container may forbid mounts even to root: nothing to install for that.
    if !need::environment(test, "mounting a ramfs is not permitted here", ok) {
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            // io_uring tears a ring down asynchronously after its process exits and holds
            // its registered file until then, so the mount can be briefly busy: retry.
            for _ in 0..30 {
                let done = std::process::Command::new("umount")
                    .arg(self.0)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if done {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            eprintln!("could not unmount {}", self.0.display());
        }
    }
    let _guard = Unmount(&mnt);
    let t = mnt.join("data");
    expect_input_error(
        d.path(),
        &[
            "run",
            "diskspd-4k-read",
            "--target",
            t.to_str().unwrap(),
            "--disk-size",
            "4m",
            "--disks",
            "1",
            "--duration",
            "1s",
            "--quiet",
        ],
        &["O_DIRECT", "--direct=false"],
    );
    // With --direct=false the same target works.
    let o = run_in(
        d.path(),
        &[
            "run",
            "diskspd-4k-read",
            "--target",
            t.to_str().unwrap(),
            "--disk-size",
            "4m",
            "--disks",
            "1",
            "--workers",
            "1",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--direct=false",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn step_commands_refuse_the_flags_of_a_single_run() {
    // sweep and find-max run many steps, each saved in the results store: the flags that
    // shape one run's output are refused, naming them, before any step runs
    // (`--metrics-listen` is not: one listener serves every step, tests/ui.rs).
    let d = tempfile::tempdir().unwrap();
    for flag in [
        &["--dry-run"][..],
        &["--output", "r.json"],
        &["--output-format", "fio-json"],
    ] {
        for cmd in [
            &["sweep", "easy-run-4k100r", "--vary", "qd=1,2"][..],
            &["find-max", "easy-run-4k100r", "--slo", "p99<=1ms"],
        ] {
            let mut args: Vec<&str> = cmd.to_vec();
            args.extend(["--engine", "null"]);
            args.extend_from_slice(flag);
            expect_input_error(d.path(), &args, &[flag[0], "apply to `iofleet run`"]);
        }
    }
    assert!(!d.path().join("r.json").exists());
}

/// A `[vms]` file is checked when it is read (a bad key is named), and what can be known
/// before any hypervisor is contacted is checked by the plan: a kernel or a guest image
/// that does not exist, a remote hypervisor (not built).
#[test]
fn a_vms_description_is_checked_naming_the_key() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("vms.toml");
    std::fs::write(
        &good,
        "[vms]\nvms = 2\npool = \"default\"\n[vms.guest]\nkernel = \"/nonexistent/vmlinuz-0\"\n",
    )
    .unwrap();
    let image = d.path().join("image.toml");
    std::fs::write(
        &image,
        "[vms]\nvms = 2\n[vms.guest]\nimage = \"/var/lib/libvirt/images/x.qcow2\"\n",
    )
    .unwrap();
    let remote = d.path().join("remote.toml");
    std::fs::write(
        &remote,
        "[vms]\nvms = 2\nhypervisors = [\"qemu+ssh://kvm1:ssh/system\"]\n",
    )
    .unwrap();
    for (file, says) in [
        (
            &image,
            "vms.guest.image: /var/lib/libvirt/images/x.qcow2: does not exist",
        ),
        (&remote, "vms.hypervisors: 'qemu+ssh://kvm1:ssh/system'"),
    ] {
        expect_input_error(
            d.path(),
            &[
                "run",
                "easy-run-4k70r",
                "--hosts",
                file.to_str().unwrap(),
                "--dry-run",
            ],
            &[says],
        );
    }
    // An image's boot keys: initrd and cmdline only with a kernel to boot it directly.
    let direct = d.path().join("direct.toml");
    std::fs::write(
        &direct,
        "[vms]\nvms = 2\n[vms.guest]\nimage = \"/i.qcow2\"\ninitrd = \"/boot/initrd.img\"\n",
    )
    .unwrap();
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            direct.to_str().unwrap(),
            "--dry-run",
        ],
        &["direct.toml", "vms.guest.initrd", "vms.guest.kernel"],
    );
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "[vms]\nvms = 2\ncache = \"writeback\"\n").unwrap();
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            good.to_str().unwrap(),
            "--dry-run",
        ],
        &["vms.guest.kernel: /nonexistent/vmlinuz-0 does not exist"],
    );
    expect_input_error(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--hosts",
            bad.to_str().unwrap(),
            "--dry-run",
        ],
        &["bad.toml", "vms.io", "QEMU refuses it"],
    );
    // `vms clean` takes a fleet of VMs only, and checks it as `run` does.
    let inv = d.path().join("hosts.toml");
    std::fs::write(&inv, "[[host]]\ndestination = \"a\"\n").unwrap();
    expect_input_error(
        d.path(),
        &["vms", "clean", "--hosts", inv.to_str().unwrap()],
        &["--hosts", "hosts.toml: not a fleet of VMs"],
    );
    expect_input_error(
        d.path(),
        &["vms", "clean", "--hosts", bad.to_str().unwrap()],
        &["bad.toml", "vms.io"],
    );
}
