//! Contract tests of the built-in profiles: the exact list of names, that each parses and
//! resolves for direct I/O, cites its source, and fits a laptop (<= 2 GiB of disk).

use iofleet_profile::*;

const EXPECTED: &[&str] = &[
    "easy-run-4k70r",
    "easy-run-4k100r",
    "easy-run-8k50r",
    "easy-run-256k0r",
    "vxrail-4k7030",
    "vsan-2m-read",
    "vsan-7030",
    "diskspd-4k-read",
    "vmfleet-general",
    "vmfleet-peak",
    "vmfleet-vdi",
    "vmfleet-sql",
    "xray-vdi-task",
    "xray-vdi-knowledge",
    "xray-vdi-power",
    "xray-oltp",
    "four-corners-randread",
    "four-corners-randwrite",
    "four-corners-seqread",
    "four-corners-seqwrite",
    "iometer-fileserver",
    "iometer-webserver",
    "iometer-database",
    "jesd219",
    "vdi-boot",
    "vdi-monday-login",
    "vdi-tuesday-login",
    "citrix-pvs-boot",
    "citrix-pvs-login",
    "citrix-pvs-steady",
];

fn plan(name: &str) -> Plan {
    let raw = load_builtin(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    resolve(&raw, &Overrides::default(), &Context { direct: true })
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn names_are_exactly_the_list() {
    assert_eq!(builtin_names(), EXPECTED);
}

#[test]
fn files_on_disk_match_the_list() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .map(|n| n.trim_end_matches(".toml").to_string())
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = EXPECTED.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(on_disk, expected);
}

#[test]
fn every_builtin_resolves_with_direct_io() {
    for name in EXPECTED {
        let p = plan(name);
        assert_eq!(p.name, *name, "the name key must match the file name");
        assert_eq!(p.timing.warmup, std::time::Duration::from_secs(5), "{name}");
        assert_eq!(
            p.timing.duration,
            std::time::Duration::from_secs(60),
            "{name}"
        );
        // Also buffered.
        let raw = load_builtin(name).unwrap();
        resolve(&raw, &Overrides::default(), &Context { direct: false }).unwrap();
    }
}

#[test]
fn every_builtin_cites_its_source() {
    for name in EXPECTED {
        let p = plan(name);
        assert!(p.description.len() > 80, "{name}: description too short");
        assert!(p.description.contains("Source: "), "{name}: no 'Source: '");
        assert!(
            p.description.contains("Scaled down"),
            "{name}: no 'Scaled down'"
        );
        let text = builtin_source(name).unwrap();
        assert!(
            text.starts_with(&format!("# {name} ")),
            "{name}: no leading comment block"
        );
    }
}

#[test]
fn every_builtin_says_how_to_set_its_duration() {
    for name in EXPECTED {
        let d = plan(name).description;
        assert!(d.contains("--duration"), "{name}: no --duration in {d}");
    }
    // Where the source published a run length, the description restores it.
    for (name, flags) in [
        ("easy-run-4k70r", "--warmup 30m --duration 1h"),
        ("easy-run-256k0r", "--warmup 30m --duration 1h"),
        ("vxrail-4k7030", "--duration 10m"),
        ("vsan-2m-read", "--duration 1h --interval 60s"),
        ("vsan-7030", "--duration 3h --interval 60s"),
        ("diskspd-4k-read", "--duration 15m"),
    ] {
        let d = plan(name).description.replace(" \n", " ");
        assert!(d.contains(flags), "{name}: {flags} not in {d}");
    }
}

#[test]
fn every_builtin_fits_a_laptop() {
    for name in EXPECTED {
        let f = plan(name).fleet;
        let total = f.workers as u64 * f.disks_per_worker as u64 * f.disk_size.0;
        assert!(total <= 2 * Bytes::GIB, "{name}: {total} bytes of disk");
    }
}

#[test]
fn published_parameters_are_kept() {
    let p = plan("vmfleet-sql");
    let (data, log) = (&p.streams[0], &p.streams[1]);
    assert_eq!((data.rate_iops, data.qd), (Some(6000.0), Some(32)));
    assert_eq!(p.fleet.threads_per_disk, 4);
    assert!(matches!(&data.locality, Locality::HotBands { bands } if bands.len() == 2));
    assert_eq!(
        (log.rate_iops, log.qd, log.random_pct),
        (Some(300.0), Some(1), 0.0)
    );

    let p = plan("xray-oltp");
    assert_eq!(p.fleet.disks_per_worker, 6);
    assert_eq!(p.streams[0].disks, vec![0, 1, 2, 3]);
    assert_eq!(p.streams[0].rate_iops, Some(4000.0));
    assert_eq!(p.streams[1].disks, vec![4, 5]);
    assert_eq!(p.streams[1].rate_iops, Some(200.0));

    // The VxRail report's workload is vdb-8vmdk-10ws-4k-70rdpct-30randompct-2threads.
    let p = plan("vxrail-4k7030");
    let s = &p.streams[0];
    assert_eq!(
        (s.read_pct, s.random_pct, s.working_set_pct),
        (70.0, 30.0, 10.0)
    );
    assert_eq!((p.fleet.disks_per_worker, p.fleet.threads_per_disk), (8, 2));

    let p = plan("jesd219");
    let s = &p.streams[0];
    assert_eq!(s.bs.entries.iter().map(|e| e.1).sum::<u32>(), 100);
    assert_eq!(s.align, Bytes(4096));
    assert_eq!((p.fleet.threads_per_disk, p.fleet.qd), (4, 256));

    for name in ["iometer-fileserver", "iometer-webserver"] {
        let s = &plan(name).streams[0];
        assert_eq!(s.bs.entries.iter().map(|e| e.1).sum::<u32>(), 100, "{name}");
    }
    for (name, rate) in [
        ("xray-vdi-task", 4.0),
        ("xray-vdi-knowledge", 6.0),
        ("xray-vdi-power", 13.0),
    ] {
        let p = plan(name);
        assert!(
            p.streams.iter().all(|s| s.rate_iops == Some(rate)),
            "{name}"
        );
    }
    // VDI phases and Citrix PVS: one worker is one desktop at the published
    // per-desktop rate, shared by closed-loop streams in the published proportions.
    let share = |p: &Plan, f: &dyn Fn(&StreamPlan) -> f64| {
        let total: f64 = p.streams.iter().map(|s| s.weight.unwrap() as f64).sum();
        p.streams
            .iter()
            .map(|s| s.weight.unwrap() as f64 * f(s) / 100.0)
            .sum::<f64>()
            / total
            * 100.0
    };
    for (name, rate, read_pct) in [
        ("vdi-boot", 78.5, None),
        ("vdi-monday-login", 20.7, Some(36.0)),
        ("vdi-tuesday-login", 14.6, None),
        ("citrix-pvs-boot", 17.0, Some(13.0)),
        ("citrix-pvs-login", 12.0, Some(3.0)),
        ("citrix-pvs-steady", 7.5, Some(0.2)),
    ] {
        let p = plan(name);
        assert_eq!(p.timing.rate_iops, Some(rate), "{name}");
        assert_eq!(p.timing.arrival, Arrival::Poisson, "{name}");
        assert!(p.streams.iter().all(|s| s.rate_iops.is_none()), "{name}");
        if let Some(r) = read_pct {
            let got = share(&p, &|s| s.read_pct);
            assert!((got - r).abs() < 1e-9, "{name}: {got}% reads");
        }
        assert!(
            p.description.contains(&format!("{rate} IOPS per desktop")),
            "{name}"
        );
    }
    // Tuesday login: 4K random writes are half of all I/O.
    let p = plan("vdi-tuesday-login");
    let w = &p.streams[0];
    assert_eq!((w.read_pct, w.random_pct), (0.0, 100.0));
    assert_eq!(w.bs.entries, vec![(Bytes(4096), 1)]);
    assert_eq!(
        share(&p, &|s| if s.name == "rand-write" { 100.0 } else { 0.0 }),
        50.0
    );
    // Boot: read-dominated, sequential 64K and 48K first, at the 1% random the S2D
    // report gave its sequential streams.
    let p = plan("vdi-boot");
    assert!(share(&p, &|s| s.read_pct) >= 80.0);
    assert_eq!(p.streams[0].random_pct, 1.0);
    assert!(p.description.contains("1% random"));
    // Citrix PVS block sizes: boot 32K/5K, login 23K/5K, steady 1K/9K.
    for (name, read, write) in [
        ("citrix-pvs-boot", 32, 5),
        ("citrix-pvs-login", 23, 5),
        ("citrix-pvs-steady", 1, 9),
    ] {
        let p = plan(name);
        assert_eq!(p.streams[0].bs.entries[0].0, Bytes(read * 1024), "{name}");
        assert_eq!(p.streams[1].bs.entries[0].0, Bytes(write * 1024), "{name}");
        assert!(p.description.contains("random is assumed"), "{name}");
    }
    // easy-run's 256k0r: 1 thread per disk; the description names the 4 of the KIOXIA
    // reference architecture's namespace rows.
    let p = plan("easy-run-256k0r");
    assert_eq!((p.fleet.threads_per_disk, p.fleet.qd), (1, 1));
    assert!(p.description.contains("--threads 4"));
    for name in ["vdi-boot", "vdi-monday-login", "vdi-tuesday-login"] {
        assert!(plan(name).description.contains("assumption"), "{name}");
    }
    for name in EXPECTED {
        let p = plan(name);
        let reads = p.streams.iter().any(|s| s.read_pct > 0.0);
        if reads {
            assert_eq!(
                p.timing.prepare,
                Prepare::Random,
                "{name} reads: prepare random"
            );
        }
    }
}

/// VM Fleet's four core workloads as read in its Profile.psm1 (microsoft/diskspd, the
/// commit each description names): unbuffered and write-through, 4 KiB at 1 thread x 32
/// for General and Peak, the load-file ranges as working sets.
#[test]
fn vm_fleet_profiles_keep_its_definitions() {
    for name in [
        "vmfleet-general",
        "vmfleet-peak",
        "vmfleet-vdi",
        "vmfleet-sql",
    ] {
        let p = plan(name);
        assert!(p.data.write_through, "{name}: VM Fleet writes through");
        for cited in [
            "Frameworks/VMFleet/Profile.psm1",
            "Get-FleetProfileXml",
            "c361eed6804607db9bc631a53d499b258c6c6741",
        ] {
            assert!(p.description.contains(cited), "{name}: no {cited}");
        }
    }
    let four_k = vec![(Bytes(4096), 1)];
    let p = plan("vmfleet-general");
    let s = &p.streams[0];
    assert_eq!((p.fleet.threads_per_disk, p.fleet.qd), (1, 32));
    assert_eq!(
        (s.bs.entries.clone(), s.read_pct, s.random_pct),
        (four_k.clone(), 100.0, 50.0)
    );
    assert!(
        matches!(&s.locality, Locality::HotBands { bands } if bands.len() == 2
            && (bands[0].io_pct, bands[0].range_pct) == (95.0, 5.0)
            && (bands[1].io_pct, bands[1].range_pct) == (4.0, 10.0))
    );
    assert_eq!((s.rate_iops, s.working_set_pct), (None, 100.0));
    let p = plan("vmfleet-peak");
    let s = &p.streams[0];
    assert_eq!((p.fleet.threads_per_disk, p.fleet.qd), (1, 32));
    assert_eq!(
        (s.bs.entries.clone(), s.read_pct, s.random_pct),
        (four_k, 100.0, 100.0)
    );
    // 5 GiB of the 10 GiB load file, loaded uniformly.
    assert_eq!((&s.locality, s.working_set_pct), (&Locality::Uniform, 50.0));
    // VDI: writes over the whole 10 GiB, reads over its first 8 GiB.
    let p = plan("vmfleet-vdi");
    let ws: Vec<(&str, f64)> = p
        .streams
        .iter()
        .map(|s| (s.name.as_str(), s.working_set_pct))
        .collect();
    assert_eq!(ws, [("write", 100.0), ("read", 80.0)]);
    // SQL: the log on the first 5 GiB.
    assert_eq!(plan("vmfleet-sql").streams[1].working_set_pct, 50.0);
}

#[test]
fn unknown_profile_lists_valid_names() {
    let e = load_builtin("easy-run-4k").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("unknown profile 'easy-run-4k'"), "{msg}");
    for name in EXPECTED {
        assert!(msg.contains(name), "{msg}");
    }
    assert!(matches!(
        load("nope").unwrap_err(),
        ProfileError::UnknownProfile { nearest: None, .. }
    ));
}

#[test]
fn a_mistyped_profile_name_gets_the_nearest_built_in() {
    for (typed, meant) in [
        ("easy-run-4k70", "easy-run-4k70r"),
        ("easy-run-4k100", "easy-run-4k100r"),
        ("vmfleet-sq", "vmfleet-sql"),
        ("four-corners-randwrit", "four-corners-randwrite"),
        ("jesd-219", "jesd219"),
    ] {
        let msg = load_builtin(typed).unwrap_err().to_string();
        assert!(
            msg.contains(&format!(
                "unknown profile '{typed}' (did you mean '{meant}'?)"
            )),
            "{msg}"
        );
    }
    // Nothing near: no guess, only the list.
    for typed in ["nope", "my-workload"] {
        let msg = load_builtin(typed).unwrap_err().to_string();
        assert!(!msg.contains("did you mean"), "{msg}");
    }
}

#[test]
fn load_reads_paths() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/jesd219.toml");
    let raw = load(dir).unwrap();
    assert_eq!(raw.name.as_deref(), Some("jesd219"));
    assert_eq!(raw.origin, dir);
    let e = load("does/not/exist.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot read profile does/not/exist.toml"),
        "{e}"
    );
    assert_eq!(
        load_builtin("vsan-7030").unwrap().origin,
        "built-in vsan-7030"
    );
}
