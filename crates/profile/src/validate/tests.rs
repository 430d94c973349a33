//! Unit tests of resolution: parsers, defaults, cross-field rules, overrides, and that
//! every error names the key (and flag) that fixes it.

use super::*;
use crate::raw::parse_toml;

const MIN: &str =
    "name = \"t\"\n[[stream]]\nname = \"main\"\nbs = \"4k\"\nread_pct = 70\nrandom_pct = 100\n";

fn raw(text: &str) -> RawProfile {
    parse_toml(text, "test.toml").unwrap()
}

fn ok(text: &str) -> Plan {
    resolve(&raw(text), &Overrides::default(), &Context::default()).unwrap()
}

fn fail(text: &str) -> ProfileError {
    fail_with(text, &Overrides::default(), Context::default())
}

fn fail_with(text: &str, ov: &Overrides, ctx: Context) -> ProfileError {
    match resolve(&raw(text), ov, &ctx) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => e,
    }
}

/// A one-stream profile with `extra` lines added to the stream table.
fn stream(extra: &str) -> String {
    format!("{MIN}{extra}\n")
}

fn bs(s: &str) -> BlockSizes {
    parse_block_sizes(s).unwrap()
}

// ---- disk lists ----

#[test]
fn disk_lists() {
    let t = |s: &str| parse_disk_list(&RawDisks::Text(s.into()));
    assert_eq!(t("all").unwrap(), None);
    assert_eq!(t("0-3").unwrap(), Some(vec![0, 1, 2, 3]));
    assert_eq!(t("4,5").unwrap(), Some(vec![4, 5]));
    assert_eq!(t(" 5, 0-1 ,1").unwrap(), Some(vec![0, 1, 5]));
    assert_eq!(
        parse_disk_list(&RawDisks::List(vec![3, 1, 1])).unwrap(),
        Some(vec![1, 3])
    );
    assert!(t("3-1").unwrap_err().contains("backwards"));
    assert!(t("a").unwrap_err().contains("not a disk index"));
    assert!(t("").is_err());
    assert!(parse_disk_list(&RawDisks::List(vec![]))
        .unwrap_err()
        .contains("empty"));
    assert!(parse_disk_list(&RawDisks::List(vec![-1])).is_err());
    // An index no worker can have is refused before a range is expanded (a range to
    // u32::MAX would otherwise fill memory).
    assert_eq!(t("1020-1023").unwrap().map(|v| v.len()), Some(4));
    for bad in ["0-4294967295", "1024", "5,99999"] {
        let e = t(bad).unwrap_err();
        assert!(
            e.contains("fleet.disks_per_worker is at most 1024"),
            "{bad}: {e}"
        );
    }
    let e = parse_disk_list(&RawDisks::List(vec![1024])).unwrap_err();
    assert!(e.contains("disk 1024 is beyond the last disk"), "{e}");
}

#[test]
fn disks_in_profile() {
    let base = "name = \"t\"\n[fleet]\ndisks_per_worker = 6\n[[stream]]\nname = \"d\"\nbs = \"4k\"\nread_pct = 1\nrandom_pct = 1\n";
    assert_eq!(
        ok(&format!("{base}disks = \"0-3\"\n")).streams[0].disks,
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        ok(&format!("{base}disks = [5, 4]\n")).streams[0].disks,
        vec![4, 5]
    );
    assert_eq!(ok(base).streams[0].disks, vec![0, 1, 2, 3, 4, 5]);
    let e = fail(&format!("{base}disks = \"4-6\"\n"));
    assert_eq!(e.key(), Some("stream[0] (\"d\").disks"));
    assert!(e.to_string().contains("disk 6 does not exist"), "{e}");
    let e = fail(&format!("{base}disks = \"x\"\n"));
    assert_eq!(e.key(), Some("stream[0] (\"d\").disks"));
}

// ---- defaults ----

#[test]
fn defaults() {
    let p = ok("name = \"t\"\n[[stream]]\nbs = \"4k\"\nread_pct = 70\nrandom_pct = 100\n");
    assert_eq!(
        p.fleet,
        FleetShape {
            workers: 1,
            disks_per_worker: 1,
            disk_size: Bytes(Bytes::GIB),
            threads_per_disk: 1,
            qd: 1,
            io_threads: None,
            cpus: None,
        }
    );
    assert_eq!(p.timing.prepare, Prepare::Random);
    assert_eq!(p.timing.warmup, Duration::ZERO);
    assert_eq!(p.timing.duration, Duration::from_secs(60));
    assert_eq!(p.timing.interval, Duration::from_secs(1));
    assert_eq!(p.timing.rate_iops, None);
    assert_eq!(p.timing.arrival, Arrival::Poisson);
    assert_eq!(p.description, "");
    let s = &p.streams[0];
    assert_eq!(s.name, "stream0");
    assert_eq!(s.weight, Some(1));
    assert_eq!((s.rate_iops, s.qd), (None, None));
    assert_eq!(s.locality, Locality::Uniform);
    assert_eq!(s.working_set_pct, 100.0);
    assert_eq!(s.disks, vec![0]);
    assert_eq!(s.align, Bytes(4096));
}

#[test]
fn align_default_and_checks() {
    let align = |extra: &str| {
        let text = format!("name = \"t\"\n[[stream]]\nread_pct = 1\nrandom_pct = 1\n{extra}\n");
        ok(&text).streams[0].align
    };
    assert_eq!(align("bs = \"4k\""), Bytes(4096));
    assert_eq!(align("bs = \"3k\""), Bytes(4096));
    assert_eq!(align("bs = \"1.5k:1,8k:1\""), Bytes(2048));
    assert_eq!(align("bs = \"100\""), Bytes(512));
    assert_eq!(align("bs = \"512:1,64k:1\""), Bytes(512));
    assert_eq!(align("bs = \"8k\"\nalign = \"512\""), Bytes(512));

    let e = fail(&stream("align = \"3k\""));
    assert_eq!(e.key(), Some("stream[0] (\"main\").align"));
    assert!(e.to_string().contains("power of two"), "{e}");
    // Below a sector: fine buffered, refused with direct I/O.
    let text = stream("align = \"256\"");
    assert_eq!(ok(&text).streams[0].align, Bytes(256));
    let e = fail_with(&text, &Overrides::default(), Context { direct: true });
    assert_eq!(e.key(), Some("stream[0] (\"main\").align"));
    let e = fail(&format!(
        "{}[fleet]\ndisk_size = \"1m\"\n",
        stream("align = \"2m\"")
    ));
    assert_eq!(e.key(), Some("stream[0] (\"main\").align"));
}

// ---- lanes: weight vs rate ----

#[test]
fn weight_and_rate_are_exclusive() {
    let e = fail(&stream("weight = 2\nrate_iops = 100.0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").weight"));
    let msg = e.to_string();
    assert!(msg.contains("stream[0] (\"main\").rate_iops"), "{msg}");
    assert!(msg.contains("mutually exclusive"), "{msg}");
}

#[test]
fn rated_stream_lane() {
    let p = ok(&format!("{}[fleet]\nqd = 4\n", stream("rate_iops = 250.0")));
    let s = &p.streams[0];
    assert_eq!((s.weight, s.rate_iops, s.qd), (None, Some(250.0), Some(4)));
    let p = ok(&stream("rate_iops = 250.0\nqd = 2"));
    assert_eq!(p.streams[0].qd, Some(2));
    let p = ok(&stream("weight = 3"));
    assert_eq!(p.streams[0].weight, Some(3));

    let e = fail(&stream("qd = 2"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").qd"));
    assert!(e.to_string().contains("rate_iops"), "{e}");
    let e = fail(&stream("rate_iops = 0.0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").rate_iops"));
    let e = fail(&stream("weight = 0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").weight"));
    let e = fail(&stream("rate_iops = 10.0\nqd = 0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").qd"));
}

#[test]
fn locality() {
    let p = ok(&stream("hot_bands = \"95/5:4/10\""));
    assert!(matches!(&p.streams[0].locality, Locality::HotBands { bands } if bands.len() == 2));
    let p = ok(&stream("zipf = 1.1"));
    assert_eq!(p.streams[0].locality, Locality::Zipf { theta: 1.1 });
    let e = fail(&stream("zipf = 1.1\nhot_bands = \"95/5\""));
    assert_eq!(e.key(), Some("stream[0] (\"main\").hot_bands"));
    assert!(e.to_string().contains("zipf"), "{e}");
    let e = fail(&stream("zipf = 0.0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").zipf"));
    let e = fail(&stream("hot_bands = \"95/5:10/10\""));
    assert_eq!(e.key(), Some("stream[0] (\"main\").hot_bands"));
}

// ---- required malformed-input cases ----

#[test]
fn read_pct_out_of_range() {
    let e = fail(&MIN.replace("read_pct = 70", "read_pct = 150"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").read_pct"));
    assert_eq!(
        e.to_string(),
        "test.toml: stream[0] (\"main\").read_pct: 150 is out of range 0..=100: must be at most 100"
    );
}

#[test]
fn bs_zero() {
    let e = fail(&MIN.replace("\"4k\"", "\"0\""));
    assert_eq!(e.key(), Some("stream[0] (\"main\").bs"));
    assert!(e.to_string().contains("greater than 0"), "{e}");
    let e = fail(&MIN.replace("\"4k\"", "0"));
    assert_eq!(e.key(), Some("stream[0] (\"main\").bs"));
}

#[test]
fn bs_not_sector_multiple_only_with_direct_io() {
    let text = MIN.replace("\"4k\"", "\"1000\"");
    let p = resolve(
        &raw(&text),
        &Overrides::default(),
        &Context { direct: false },
    )
    .unwrap();
    assert_eq!(p.streams[0].bs, BlockSizes::fixed(Bytes(1000)));
    assert_eq!(p.streams[0].align, Bytes(1024));
    let e = fail_with(&text, &Overrides::default(), Context { direct: true });
    assert_eq!(e.key(), Some("stream[0] (\"main\").bs"));
    assert!(
        e.to_string()
            .contains("1000 bytes is not a multiple of 512"),
        "{e}"
    );
}

#[test]
fn fleet_qd_zero() {
    let e = fail(&format!("{MIN}[fleet]\nqd = 0\n"));
    assert_eq!(e.key(), Some("fleet.qd"));
    assert_eq!(
        e.to_string(),
        "test.toml: fleet.qd: 0 is out of range 1..=4096: must be at least 1"
    );
}

#[test]
fn working_set_out_of_range() {
    for v in ["0", "120", "-5"] {
        let e = fail(&stream(&format!("working_set_pct = {v}")));
        assert_eq!(e.key(), Some("stream[0] (\"main\").working_set_pct"), "{v}");
        assert!(e.to_string().contains("out of range (0, 100]"), "{e}");
    }
}

#[test]
fn working_set_must_hold_a_block() {
    let text = format!(
        "{}[fleet]\ndisk_size = \"1m\"\n",
        stream("working_set_pct = 0.1")
    );
    let text = text.replace("\"4k\"", "\"64k\"");
    let e = fail(&text);
    assert_eq!(e.key(), Some("stream[0] (\"main\").working_set_pct"));
    assert!(e.to_string().contains("less than one block"), "{e}");
}

#[test]
fn bs_larger_than_disk() {
    let text = format!(
        "{}[fleet]\ndisk_size = \"1m\"\n",
        MIN.replace("\"4k\"", "\"2m\"")
    );
    let e = fail(&text);
    assert_eq!(e.key(), Some("stream[0] (\"main\").bs"));
    assert!(e.to_string().contains("larger than fleet.disk_size"), "{e}");
}

#[test]
fn bs_past_the_largest_allowed() {
    let text = format!(
        "{}[fleet]\ndisk_size = \"1g\"\n",
        MIN.replace("\"4k\"", "\"4k:1,128m:1\"")
    );
    let e = fail(&text);
    assert_eq!(e.key(), Some("stream[0] (\"main\").bs"));
    assert!(
        e.to_string()
            .contains("larger than the largest allowed, 64m"),
        "{e}"
    );
    assert!(ok(&text.replace("128m", "64m")).streams[0].bs.max() == MAX_BLOCK_SIZE);
}

#[test]
fn intervals_past_the_most_a_run_may_keep() {
    let ov = |warmup: &str, duration: &str, interval: &str| Overrides {
        warmup: Some(parse_duration(warmup).unwrap()),
        duration: Some(parse_duration(duration).unwrap()),
        interval: Some(parse_duration(interval).unwrap()),
        ..Overrides::default()
    };
    // 1,000,000 intervals in all: the most.
    let ok_ov = ov("100s", "99900s", "100ms");
    assert!(resolve(&raw(MIN), &ok_ov, &Context::default()).is_ok());
    // A last piece shorter than the interval is an interval too.
    let e = fail_with(MIN, &ov("100s", "99900.05s", "100ms"), Context::default());
    assert_eq!(e.key(), Some("timing.interval"));
    let e = e.to_string();
    assert!(
        e.starts_with(
            "test.toml: --interval (timing.interval): 100ms cuts the warm-up (100s) and --duration ("
        ) && e.ends_with("into 1000001 intervals, more than 1000000: lengthen it"),
        "{e}"
    );
}

#[test]
fn streams_past_the_most_a_run_may_have() {
    let one = "[[stream]]\nbs = \"4k\"\nread_pct = 1\nrandom_pct = 1\n";
    let text = |n: usize| format!("name = \"t\"\n{}", one.repeat(n));
    assert_eq!(ok(&text(MAX_STREAMS)).streams.len(), MAX_STREAMS);
    let e = fail(&text(MAX_STREAMS + 1));
    assert_eq!(e.key(), Some("stream"));
    assert!(
        e.to_string()
            .contains("1025 [[stream]] tables, more than the 1024"),
        "{e}"
    );
}

#[test]
fn malformed_weight_lists_name_the_key() {
    for list in ["512:x,4k:60", "4k:60,", ":5"] {
        let e = fail(&MIN.replace("\"4k\"", &format!("\"{list}\"")));
        assert_eq!(e.key(), Some("stream[0] (\"main\").bs"), "{list}");
        assert!(e.to_string().contains("stream[0] (\"main\").bs: "), "{e}");
    }
}

#[test]
fn duration_typo_in_toml() {
    let e = fail(&format!("{MIN}[timing]\nduration = \"10x\"\n"));
    assert_eq!(e.key(), Some("timing.duration"));
    assert!(
        e.to_string()
            .starts_with("test.toml: timing.duration: '10x'"),
        "{e}"
    );
    // An override replaces the bad value, so it is not an error then.
    let ov = Overrides {
        duration: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    let p = resolve(
        &raw(&format!("{MIN}[timing]\nduration = \"10x\"\n")),
        &ov,
        &Context::default(),
    );
    assert_eq!(p.unwrap().timing.duration, Duration::from_secs(5));
}

#[test]
fn a_negative_size_or_duration_in_toml_names_its_key_and_says_negative() {
    for (extra, key, value) in [
        ("[fleet]\ndisk_size = \"-5g\"", "fleet.disk_size", "-5g"),
        ("[timing]\nwarmup = \"-5s\"", "timing.warmup", "-5s"),
    ] {
        let e = fail(&format!("{MIN}{extra}\n"));
        assert_eq!(e.key(), Some(key), "{extra}: {e}");
        assert!(
            e.to_string()
                .contains(&format!("{key}: '{value}' is negative")),
            "{e}"
        );
    }
}

#[test]
fn other_fleet_and_timing_errors() {
    let cases = [
        ("[fleet]\nworkers = 0", "fleet.workers"),
        ("[fleet]\ndisks_per_worker = 2000", "fleet.disks_per_worker"),
        ("[fleet]\nthreads_per_disk = 0", "fleet.threads_per_disk"),
        ("[fleet]\nio_threads = 0", "fleet.io_threads"),
        ("[fleet]\ncpus = \"3-1\"", "fleet.cpus"),
        ("[fleet]\ncpus = \"one\"", "fleet.cpus"),
        ("[fleet]\ndisk_size = \"512k\"", "fleet.disk_size"),
        ("[fleet]\ndisk_size = \"1000000000\"", "fleet.disk_size"),
        ("[fleet]\ndisk_size = \"lots\"", "fleet.disk_size"),
        ("[timing]\nprepare = \"fill\"", "timing.prepare"),
        ("[timing]\narrival = \"burst\"", "timing.arrival"),
        ("[timing]\nduration = \"0s\"", "timing.duration"),
        ("[timing]\ninterval = \"10ms\"", "timing.interval"),
        (
            "[timing]\nduration = \"10s\"\ninterval = \"20s\"",
            "timing.interval",
        ),
        ("[timing]\nwarmup = \"soon\"", "timing.warmup"),
        ("[timing]\nrate_iops = -1.0", "timing.rate_iops"),
    ];
    for (extra, key) in cases {
        let e = fail(&format!("{MIN}{extra}\n"));
        assert_eq!(e.key(), Some(key), "{extra}: {e}");
        assert!(e.to_string().contains(&format!("{key}: ")), "{e}");
    }
}

#[test]
fn structural_errors() {
    let e = fail("[[stream]]\nbs = \"4k\"\nread_pct = 1\nrandom_pct = 1\n");
    assert_eq!(e.key(), Some("name"));
    let e = fail("name = \"t\"\n");
    assert_eq!(e.key(), Some("stream"));
    let e = fail("name = \"t\"\n[[stream]]\nread_pct = 1\nrandom_pct = 1\n");
    assert_eq!(e.key(), Some("stream[0].bs"));
    assert!(e.to_string().contains("required"), "{e}");
    let e = fail("name = \"t\"\n[[stream]]\nbs = \"4k\"\nrandom_pct = 1\n");
    assert_eq!(e.key(), Some("stream[0].read_pct"));
    let e = fail(&format!(
        "{MIN}[[stream]]\nname = \"main\"\nbs = \"4k\"\nread_pct = 1\nrandom_pct = 1\n"
    ));
    assert_eq!(e.key(), Some("stream[1].name"));
    assert!(e.to_string().contains("already"), "{e}");
}

#[test]
fn global_rate_needs_a_closed_loop_stream() {
    let text = format!("{}[timing]\nrate_iops = 100.0\n", stream("rate_iops = 5.0"));
    let e = fail(&text);
    assert_eq!(e.key(), Some("timing.rate_iops"));
    let ov = Overrides {
        rate: Some(10.0),
        ..Default::default()
    };
    let e = fail_with(&stream("rate_iops = 5.0"), &ov, Context::default());
    assert!(e.to_string().contains("--rate (timing.rate_iops)"), "{e}");
    let p = resolve(&raw(MIN), &ov, &Context::default()).unwrap();
    assert_eq!(p.timing.rate_iops, Some(10.0));
}

// ---- overrides ----

const TWO: &str = "name = \"t\"\n[fleet]\ndisks_per_worker = 6\nqd = 8\n\
[[stream]]\nname = \"data\"\nbs = \"8k\"\nread_pct = 70\nrandom_pct = 100\ndisks = \"0-3\"\n\
[[stream]]\nname = \"log\"\nbs = \"32k\"\nread_pct = 0\nrandom_pct = 0\nrate_iops = 100.0\nqd = 1\ndisks = \"4-5\"\n";

#[test]
fn overrides_apply() {
    let ov = Overrides {
        workers: Some(3),
        disk_size: Some(Bytes(64 << 20)),
        threads: Some(2),
        qd: Some(16),
        bs: Some(bs("4k:1,64k:1")),
        read_pct: Some(100.0),
        random_pct: Some(50.0),
        working_set: Some(10.0),
        duration: Some(Duration::from_secs(5)),
        warmup: Some(Duration::from_secs(1)),
        interval: Some(Duration::from_millis(500)),
        rate: Some(1000.0),
        prepare: Some(Prepare::Zero),
        ..Default::default()
    };
    let p = resolve(&raw(TWO), &ov, &Context { direct: true }).unwrap();
    assert_eq!(p.fleet.workers, 3);
    assert_eq!(p.fleet.disk_size, Bytes(64 << 20));
    assert_eq!(p.fleet.threads_per_disk, 2);
    assert_eq!(p.fleet.qd, 16);
    assert_eq!(p.timing.duration, Duration::from_secs(5));
    assert_eq!(p.timing.warmup, Duration::from_secs(1));
    assert_eq!(p.timing.interval, Duration::from_millis(500));
    assert_eq!(p.timing.rate_iops, Some(1000.0));
    assert_eq!(p.timing.prepare, Prepare::Zero);
    for s in &p.streams {
        assert_eq!(s.bs, bs("4k:1,64k:1"));
        assert_eq!(
            (s.read_pct, s.random_pct, s.working_set_pct),
            (100.0, 50.0, 10.0)
        );
    }
    // --qd also replaces a rated stream's own qd.
    assert_eq!(p.streams[1].qd, Some(16));
    assert_eq!(p.streams[0].disks, vec![0, 1, 2, 3]);
    assert_eq!(p.streams[1].disks, vec![4, 5]);
}

#[test]
fn disks_override_clamps_lists() {
    let ov = Overrides {
        disks: Some(5),
        ..Default::default()
    };
    let p = resolve(&raw(TWO), &ov, &Context::default()).unwrap();
    assert_eq!(p.fleet.disks_per_worker, 5);
    assert_eq!(p.streams[0].disks, vec![0, 1, 2, 3]);
    assert_eq!(p.streams[1].disks, vec![4]);

    let ov = Overrides {
        disks: Some(4),
        ..Default::default()
    };
    let e = fail_with(TWO, &ov, Context::default());
    assert_eq!(e.key(), Some("stream[1] (\"log\").disks"));
    assert_eq!(e.flag(), Some("--disks"));
    assert!(
        e.to_string()
            .contains("--disks (stream[1] (\"log\").disks)"),
        "{e}"
    );

    // "all" follows the new count.
    let ov = Overrides {
        disks: Some(3),
        ..Default::default()
    };
    let p = resolve(&raw(MIN), &ov, &Context::default()).unwrap();
    assert_eq!(p.streams[0].disks, vec![0, 1, 2]);
}

#[test]
fn override_errors_name_the_flag() {
    let d = Context::default();
    let cases: Vec<(Overrides, &str)> = vec![
        (
            Overrides {
                read_pct: Some(150.0),
                ..Default::default()
            },
            "--read-pct (stream[0] (\"main\").read_pct): 150 is out of range 0..=100: must be at most 100",
        ),
        (
            Overrides {
                random_pct: Some(-1.0),
                ..Default::default()
            },
            "--random-pct (stream[0] (\"main\").random_pct)",
        ),
        (
            Overrides {
                working_set: Some(0.0),
                ..Default::default()
            },
            "--working-set (stream[0] (\"main\").working_set_pct)",
        ),
        (
            Overrides {
                workers: Some(0),
                ..Default::default()
            },
            "--workers (fleet.workers)",
        ),
        (
            Overrides {
                disks: Some(0),
                ..Default::default()
            },
            "--disks (fleet.disks_per_worker)",
        ),
        (
            Overrides {
                disk_size: Some(Bytes(4096)),
                ..Default::default()
            },
            "--disk-size (fleet.disk_size)",
        ),
        (
            Overrides {
                threads: Some(1000),
                ..Default::default()
            },
            "--threads (fleet.threads_per_disk)",
        ),
        (
            Overrides {
                qd: Some(0),
                ..Default::default()
            },
            "--qd (fleet.qd)",
        ),
        (
            Overrides {
                io_threads: Some(5000),
                ..Default::default()
            },
            "--io-threads (fleet.io_threads)",
        ),
        (
            Overrides {
                cpus: Some("0-x".into()),
                ..Default::default()
            },
            "--cpus (fleet.cpus)",
        ),
        (
            Overrides {
                bs: Some(BlockSizes::fixed(Bytes(0))),
                ..Default::default()
            },
            "--bs (stream[0] (\"main\").bs)",
        ),
        (
            Overrides {
                duration: Some(Duration::ZERO),
                ..Default::default()
            },
            "--duration (timing.duration)",
        ),
        (
            Overrides {
                interval: Some(Duration::from_millis(1)),
                ..Default::default()
            },
            "--interval (timing.interval)",
        ),
        (
            Overrides {
                rate: Some(0.0),
                ..Default::default()
            },
            "--rate (timing.rate_iops)",
        ),
    ];
    for (ov, expect) in cases {
        let e = fail_with(MIN, &ov, d);
        assert!(e.to_string().contains(expect), "{ov:?}: {e}");
        assert!(e.flag().is_some(), "{e}");
    }
    // --bs with direct I/O.
    let ov = Overrides {
        bs: Some(BlockSizes::fixed(Bytes(1000))),
        ..Default::default()
    };
    let e = fail_with(MIN, &ov, Context { direct: true });
    assert!(
        e.to_string().contains("--bs (stream[0] (\"main\").bs)"),
        "{e}"
    );
    // A too-short --duration names --duration in the interval error.
    let ov = Overrides {
        duration: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    let e = fail_with(MIN, &ov, d);
    assert_eq!(e.key(), Some("timing.interval"));
    assert!(e.to_string().contains("longer than --duration"), "{e}");
    // A small --disk-size is named when the working set no longer holds a block.
    let ov = Overrides {
        disk_size: Some(Bytes(1 << 20)),
        ..Default::default()
    };
    let e = fail_with(&stream("working_set_pct = 0.1"), &ov, d);
    assert!(e.to_string().contains("of --disk-size"), "{e}");
    // A --qd override of a rated stream's qd is range-checked under the flag.
    let ov = Overrides {
        qd: Some(5000),
        ..Default::default()
    };
    let e = fail_with(&stream("rate_iops = 5.0"), &ov, d);
    assert_eq!(e.flag(), Some("--qd"));
}

#[test]
fn plan_serializes() {
    let p = ok(TWO);
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["timing"]["duration"], 60.0);
    assert_eq!(json["streams"][1]["rate_iops"], 100.0);
    assert_eq!(p.configured_outstanding(), 4 * 8 + 2);
}

#[test]
fn io_threads_and_cpus_from_profile_or_flags() {
    let p = ok(&format!(
        "{MIN}[fleet]\nio_threads = 3\ncpus = \"2-3,0,3\"\n"
    ));
    assert_eq!(p.fleet.io_threads, Some(3));
    assert_eq!(p.fleet.cpus, Some(vec![0, 2, 3]));
    let ov = Overrides {
        io_threads: Some(1),
        cpus: Some("1".into()),
        ..Default::default()
    };
    let p = resolve(
        &raw(&format!("{MIN}[fleet]\nio_threads = 3\ncpus = \"2-3\"\n")),
        &ov,
        &Context::default(),
    )
    .unwrap();
    assert_eq!((p.fleet.io_threads, p.fleet.cpus), (Some(1), Some(vec![1])));
}

#[test]
fn write_through_is_off_by_default_and_set_by_the_key_or_the_flag() {
    assert!(!ok(MIN).data.write_through);
    let p = ok(&format!("{MIN}[data]\nwrite_through = true\n"));
    assert!(p.data.write_through);
    // On its own in [data], and printed back by the dry-run profile.
    let text = crate::plan_toml(&p);
    assert!(text.contains("write_through = true"), "{text}");
    assert!(!crate::plan_toml(&ok(MIN)).contains("write_through"));
    let ov = Overrides {
        write_through: true,
        ..Default::default()
    };
    assert!(
        resolve(&raw(MIN), &ov, &Context::default())
            .unwrap()
            .data
            .write_through
    );
    // A recorded plan from before the key reads as off.
    let mut v = serde_json::to_value(ok(MIN).data).unwrap();
    assert!(v.get("write_through").is_none(), "{v}");
    v.as_object_mut().unwrap().remove("write_through");
    let back: DataPlan = serde_json::from_value(v).unwrap();
    assert!(!back.write_through);
}

#[test]
fn data_table_defaults_values_and_flags() {
    let p = ok(MIN);
    assert_eq!(p.data, DataPlan::default());
    assert_eq!(
        (p.data.pattern, p.data.dedupe_ratio, p.data.dedupe_unit),
        (DataPattern::Random, 1.0, Bytes(4096))
    );
    let p = ok(&format!(
        "{MIN}[data]\ndedupe_ratio = 3\ndedupe_unit = \"8k\"\ncompress_ratio = 2.5\n"
    ));
    assert_eq!(p.data.dedupe_ratio, 3.0);
    assert_eq!(p.data.dedupe_unit, Bytes(8192));
    assert_eq!(p.data.compress_ratio, 2.5);
    assert_eq!(
        ok(&format!("{MIN}[data]\npattern = \"zero\"\n"))
            .data
            .pattern,
        DataPattern::Zero
    );
    // Flags replace the table's values.
    let ov = Overrides {
        dedupe_ratio: Some(4.0),
        dedupe_unit: Some(Bytes(16384)),
        compress_ratio: Some(1.5),
        ..Default::default()
    };
    let p = resolve(
        &raw(&format!("{MIN}[data]\ndedupe_ratio = 3\n")),
        &ov,
        &Context::default(),
    )
    .unwrap();
    assert_eq!(
        (
            p.data.dedupe_ratio,
            p.data.dedupe_unit,
            p.data.compress_ratio
        ),
        (4.0, Bytes(16384), 1.5)
    );
    // The dry-run profile round-trips the table.
    let text = crate::plan_toml(&p);
    assert!(text.contains("[data]"), "{text}");
    assert_eq!(ok(&text).data, p.data);
}

#[test]
fn data_table_errors_name_the_key() {
    let cases = [
        (
            "dedupe_ratio = 0",
            "data.dedupe_ratio",
            "must be at least 1",
        ),
        (
            "dedupe_ratio = 0.9",
            "data.dedupe_ratio",
            "must be at least 1",
        ),
        (
            "compress_ratio = 0.5",
            "data.compress_ratio",
            "must be at least 1",
        ),
        (
            "dedupe_unit = \"1000\"",
            "data.dedupe_unit",
            "not a multiple of 512",
        ),
        (
            "dedupe_unit = 0",
            "data.dedupe_unit",
            "not a multiple of 512",
        ),
        ("dedupe_unit = \"2m\"", "data.dedupe_unit", "between 512"),
        ("dedupe_unit = \"big\"", "data.dedupe_unit", ""),
        (
            "pattern = \"ones\"",
            "data.pattern",
            "not one of random, zero",
        ),
        (
            "pattern = \"zero\"\ncompress_ratio = 2",
            "data.compress_ratio",
            "data.pattern is zero",
        ),
    ];
    for (extra, key, says) in cases {
        let e = fail(&format!("{MIN}[data]\n{extra}\n"));
        assert_eq!(e.key(), Some(key), "{extra}: {e}");
        assert!(e.to_string().contains(says), "{extra}: {e}");
    }
    let ov = Overrides {
        dedupe_ratio: Some(0.0),
        ..Default::default()
    };
    let e = fail_with(MIN, &ov, Context::default());
    assert!(
        e.to_string().contains("--dedupe-ratio (data.dedupe_ratio)"),
        "{e}"
    );
    let ov = Overrides {
        pattern: Some(DataPattern::Zero),
        ..Default::default()
    };
    let e = fail_with(
        &format!("{MIN}[data]\ndedupe_ratio = 2\n"),
        &ov,
        Context::default(),
    );
    assert!(e.to_string().contains("--pattern is zero"), "{e}");
    let e = parse_toml(&format!("{MIN}[data]\nratio = 2\n"), "t.toml").unwrap_err();
    assert!(e.to_string().contains("ratio"), "{e}");
}
