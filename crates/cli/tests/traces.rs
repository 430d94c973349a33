//! `iofleet profile from-trace` (issue 8, item 7) through the binary: a trace of the
//! built-in `iometer-fileserver` profile, drawn by iofleet's own I/O generator and
//! written as blkparse text, CSV and MSR-Cambridge, is fitted back within 2 percentage
//! points; the fitted profile runs; `--split` writes one profile per window; a malformed
//! line is exit 2 naming the line.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use iofleet_engine::OpKind;
use iofleet_fleet::local::gen::StreamGen;
use iofleet_profile::{Context, Overrides, Plan};
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// One generated I/O: time in ns, device, read, offset, length.
type Io = (u64, u32, bool, u64, u32);

fn resolve(profile: &str) -> Plan {
    let raw = iofleet_profile::load(profile).unwrap();
    iofleet_profile::resolve(&raw, &Overrides::default(), &Context { direct: true }).unwrap()
}

/// `n` I/Os of iometer-fileserver's stream on 2 disks in turn, one every 500 µs.
fn fileserver_trace(n: usize) -> Vec<Io> {
    let plan = resolve("iometer-fileserver");
    let size = plan.fleet.disk_size.0;
    let mut gens: Vec<StreamGen> = (0..2)
        .map(|_| StreamGen::new(&plan.streams[0], size, 0, 1))
        .collect();
    let mut rng = SmallRng::seed_from_u64(8);
    (0..n)
        .map(|i| {
            let dev = (i % 2) as u32;
            let (op, offset, len) = gens[dev as usize].next(&mut rng);
            (i as u64 * 500_000, dev, op == OpKind::Read, offset, len)
        })
        .collect()
}

fn blkparse(ios: &[Io]) -> String {
    let mut s = String::new();
    for (seq, &(t, dev, read, off, len)) in ios.iter().enumerate() {
        let (secs, ns) = (t / 1_000_000_000, t % 1_000_000_000);
        let rw = if read { "R" } else { "WS" };
        let (sector, count) = (off / 512, len / 512);
        writeln!(
            s,
            "  8,{dev:<3} {:>2} {:>8} {secs:>5}.{ns:09} {:>5}  Q {rw:>3} {sector} + {count} [fio]",
            seq % 2,
            seq * 2 + 1,
            4242
        )
        .unwrap();
        // The completion of the same I/O: not counted (queue events are).
        writeln!(
            s,
            "  8,{dev:<3} {:>2} {:>8} {secs:>5}.{:09} {:>5}  C {rw:>3} {sector} + {count} [0]",
            seq % 2,
            seq * 2 + 2,
            ns + 100,
            0
        )
        .unwrap();
    }
    s.push_str("CPU0 (8,0):\n Reads Queued:      16,001,   69,344KiB\t Writes Queued:       3,999,   17,248KiB\n");
    s.push_str("Total (8,0):\n Reads Queued:      16,001,   69,344KiB\n\nThroughput (R/W): 6,934KiB/s / 1,724KiB/s\nEvents (8,0): 40,000 entries\n");
    s
}

fn csv(ios: &[Io]) -> String {
    let mut s = String::from("time,op,offset,length\n");
    for &(t, _, read, off, len) in ios {
        let op = if read { "read" } else { "write" };
        writeln!(
            s,
            "{}.{:09},{op},{off},{len}",
            t / 1_000_000_000,
            t % 1_000_000_000
        )
        .unwrap();
    }
    s
}

fn msr(ios: &[Io]) -> String {
    let mut s = String::new();
    for &(t, dev, read, off, len) in ios {
        let ty = if read { "Read" } else { "Write" };
        writeln!(
            s,
            "{},src1,{dev},{ty},{off},{len},{}",
            128_166_372_000_000_000u64 + t / 100,
            1500
        )
        .unwrap();
    }
    s
}

/// Block-size shares (percent) and read % of a plan, over all its streams by weight.
fn shares(plan: &Plan) -> (BTreeMap<u64, f64>, f64) {
    let total: f64 = plan.streams.iter().map(|s| s.weight.unwrap() as f64).sum();
    let mut bs = BTreeMap::new();
    let mut read = 0.0;
    for s in &plan.streams {
        let w = s.weight.unwrap() as f64 / total;
        read += w * s.read_pct;
        let sum: f64 = s.bs.entries.iter().map(|e| e.1 as f64).sum();
        for &(size, weight) in &s.bs.entries {
            *bs.entry(size.0).or_insert(0.0) += w * weight as f64 / sum * 100.0;
        }
    }
    (bs, read)
}

fn fit(dir: &Path, name: &str, text: &str, format: &str) -> Plan {
    let trace = dir.join(name);
    std::fs::write(&trace, text).unwrap();
    let out = dir.join(format!("{name}.toml"));
    let o = run_in(
        dir,
        &[
            "profile",
            "from-trace",
            trace.to_str().unwrap(),
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
    resolve(out.to_str().unwrap())
}

#[test]
fn a_fileserver_trace_fits_back_in_every_format() {
    let d = tempfile::tempdir().unwrap();
    let ios = fileserver_trace(20_000);
    let (want_bs, want_read) = shares(&resolve("iometer-fileserver"));
    for (format, text) in [
        ("blkparse", blkparse(&ios)),
        ("csv", csv(&ios)),
        ("msr", msr(&ios)),
    ] {
        let plan = fit(d.path(), &format!("trace.{format}"), &text, format);
        let (bs, read) = shares(&plan);
        assert!((read - want_read).abs() <= 2.0, "{format}: read {read}");
        assert_eq!(
            bs.keys().collect::<Vec<_>>(),
            want_bs.keys().collect::<Vec<_>>(),
            "{format}: sizes"
        );
        for (size, want) in &want_bs {
            let got = bs[size];
            assert!(
                (got - want).abs() <= 2.0,
                "{format}: {size} bytes {got}% vs {want}%"
            );
        }
        for s in &plan.streams {
            assert!(
                s.random_pct >= 99.0,
                "{format}: {} {}",
                s.name,
                s.random_pct
            );
            assert_eq!(s.align.0, 512, "{format}");
            assert_eq!(
                s.locality,
                iofleet_profile::Locality::Uniform,
                "{format}: uniform offsets give no hot bands"
            );
        }
        // One I/O every 500 µs.
        let rate = plan.timing.rate_iops.unwrap();
        assert!((rate - 2000.0).abs() < 1.0, "{format}: {rate}");
    }
}

#[test]
fn hot_bands_fit_back() {
    // JESD219: 50% of the I/O on the first 5% of the range, 30% on the next 15%.
    let plan = resolve("jesd219");
    let size = plan.fleet.disk_size.0;
    let mut g = StreamGen::new(&plan.streams[0], size, 0, 1);
    let mut rng = SmallRng::seed_from_u64(219);
    let ios: Vec<Io> = (0..40_000)
        .map(|i| {
            let (op, offset, len) = g.next(&mut rng);
            (i as u64 * 1_000_000, 0, op == OpKind::Read, offset, len)
        })
        .collect();
    let d = tempfile::tempdir().unwrap();
    let fitted = fit(d.path(), "jesd.csv", &csv(&ios), "csv");
    let (_, read) = shares(&fitted);
    assert!((read - 40.0).abs() <= 2.0, "{read}");
    for s in &fitted.streams {
        let iofleet_profile::Locality::HotBands { bands } = &s.locality else {
            panic!("{}: {:?}", s.name, s.locality);
        };
        assert_eq!(bands.len(), 2, "{bands:?}");
        assert_eq!((bands[0].range_pct, bands[1].range_pct), (5.0, 15.0));
        assert!(
            (bands[0].io_pct - 50.0).abs() <= 2.0,
            "{}: {bands:?}",
            s.name
        );
        assert!(
            (bands[1].io_pct - 30.0).abs() <= 2.0,
            "{}: {bands:?}",
            s.name
        );
        assert_eq!(s.align.0, 4096, "JESD219 is 4K aligned");
    }
}

#[test]
fn the_fitted_profile_runs() {
    let d = tempfile::tempdir().unwrap();
    let ios = fileserver_trace(2_000);
    fit(d.path(), "t.csv", &csv(&ios), "csv");
    let out = d.path().join("t.csv.toml");
    let j = run_json(
        d.path(),
        &[
            out.to_str().unwrap(),
            "--engine",
            "null",
            "--duration",
            "1s",
            "--no-save",
        ],
    );
    assert!(j["summary"]["all"]["ios"].as_u64().unwrap() > 0, "{j}");
    // Both directions ran as streams of their own.
    let names: Vec<&str> = j["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "write"]);
}

#[test]
fn split_writes_one_profile_per_window() {
    let d = tempfile::tempdir().unwrap();
    // 3,000 I/Os over 1.5 s; the last 1,000 (the third window) are all reads.
    let mut ios = fileserver_trace(3_000);
    for io in ios.iter_mut().skip(2_000) {
        io.2 = true;
    }
    let trace = d.path().join("t.csv");
    std::fs::write(&trace, csv(&ios)).unwrap();
    let out = d.path().join("phase.toml");
    let o = run_in(
        d.path(),
        &[
            "profiles",
            "from-trace",
            trace.to_str().unwrap(),
            "--format",
            "csv",
            "--split",
            "500ms",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!out.exists(), "windows are written as phase-wN.toml");
    for w in 1..=3 {
        let p = resolve(d.path().join(format!("phase-w{w}.toml")).to_str().unwrap());
        assert_eq!(p.name, format!("phase-w{w}"));
        let (_, read) = shares(&p);
        if w == 3 {
            assert_eq!(read, 100.0, "the last window has reads only");
            assert_eq!(p.streams.len(), 1);
        } else {
            assert!((read - 80.0).abs() < 5.0, "window {w}: {read}");
        }
    }
    // --split without --output, and a zero window, are input errors naming the flag.
    for args in [
        vec!["--split", "1s"],
        vec!["--split", "0s", "-o", out.to_str().unwrap()],
    ] {
        let mut all = vec![
            "profile",
            "from-trace",
            trace.to_str().unwrap(),
            "--format",
            "csv",
        ];
        all.extend(args);
        let o = run_in(d.path(), &all);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--split") || stderr(&o).contains("--output"));
    }
}

#[test]
fn a_malformed_line_is_exit_2_naming_the_line() {
    let d = tempfile::tempdir().unwrap();
    let ios = fileserver_trace(10);
    let cases = [
        (
            "blkparse",
            blkparse(&ios),
            "  8,0    0       99     0.1   4242  Q   R 17 8 [fio]",
        ),
        (
            "blkparse",
            blkparse(&ios),
            "  8,0    0       99     zero   4242  Q   R 17 + 8 [fio]",
        ),
        ("csv", csv(&ios), "0.1,read,4096"),
        ("csv", csv(&ios), "0.1,trim,4096,512"),
        ("csv", csv(&ios), "0.1,read,-4096,512"),
        (
            "msr",
            msr(&ios),
            "128166372000000000,src1,0,Read,4096,4k,10",
        ),
        (
            "msr",
            msr(&ios),
            "128166372000000000,src1,0,Flush,4096,512,10",
        ),
    ];
    for (format, good, bad) in cases {
        // The bad line goes in as line 4.
        let mut lines: Vec<&str> = good.lines().collect();
        lines.insert(3, bad);
        let trace = d.path().join("bad.trace");
        std::fs::write(&trace, lines.join("\n")).unwrap();
        let o = run_in(
            d.path(),
            &[
                "profile",
                "from-trace",
                trace.to_str().unwrap(),
                "--format",
                format,
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("bad.trace line 4: "), "{bad}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // No read or write at all, and a missing file: exit 2 naming the file.
    let empty = d.path().join("empty.csv");
    std::fs::write(&empty, "time,op,offset,length\n").unwrap();
    let o = run_in(
        d.path(),
        &[
            "profile",
            "from-trace",
            empty.to_str().unwrap(),
            "--format",
            "csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("empty.csv"), "{}", stderr(&o));
    let o = run_in(
        d.path(),
        &["profile", "from-trace", "nope.csv", "--format", "csv"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.csv"), "{}", stderr(&o));
    // A directory opens but does not read; an output that cannot be written.
    let o = run_in(
        d.path(),
        &[
            "profile",
            "from-trace",
            d.path().to_str().unwrap(),
            "--format",
            "csv",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read trace"), "{}", stderr(&o));
    let good = d.path().join("good.csv");
    std::fs::write(&good, csv(&ios)).unwrap();
    let o = run_in(
        d.path(),
        &[
            "profile",
            "from-trace",
            good.to_str().unwrap(),
            "--format",
            "csv",
            "-o",
            d.path().join("no/such/dir/p.toml").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--output"), "{}", stderr(&o));
}
