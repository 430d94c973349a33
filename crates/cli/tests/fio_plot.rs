//! fio-plot (PyPI `fio-plot`, installed by test.sh), a real reader of fio's JSON, draws
//! its charts from iofleet's `fio-json` of a one-host run and of a three-host fleet run
//! (fio's client shape): each chart must be drawn without error into a non-empty PNG, and
//! the values fio-plot plots (its own record set, read back through its Python modules)
//! must be iofleet's figures: IOPS and mean latency per direction, per host and "All
//! clients" for the fleet.
//! fio-plot reads every `.json` file of the directory it is given whose `rw`, `iodepth`
//! and `numjobs` match its `-r`, `-d` and `-n`, so each run's document goes into a
//! directory of its own. A document without latency ranges (an unsaved run) is refused by
//! fio-plot's latency histogram, which shows the charts really read the document.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

const SIM: &str = "sim:servers=4,service=200us,dist=exp";

/// `iofleet run` of a 70/30 random 8k mix on the simulated engine, QD 4, 2 disks of one
/// thread per worker, with `extra` flags, writing `--output-format fio-json` to
/// `dir/NAME/run.json`: the document's directory.
fn fio_json_run(dir: &Path, name: &str, workers: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "run",
        "--engine",
        SIM,
        "--workers",
        workers,
        "--disks",
        "2",
        "--threads",
        "1",
        "--qd",
        "4",
        "--bs",
        "8k",
        "--read-pct",
        "70",
        "--random-pct",
        "100",
        "--warmup",
        "0s",
        "--duration",
        "2s",
        "--quiet",
        "--output-format",
        "fio-json",
    ];
    args.extend_from_slice(extra);
    let o = run_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert!(doc["fio version"].is_string());
    let out = dir.join(name);
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("run.json"), &o.stdout).unwrap();
    out
}

/// `fio-plot -i INPUT -T TITLE CHART… -r randrw -f read -d 4 -n NUMJOBS -o PNG`, run in
/// `dir` with matplotlib's cache there too.
fn fio_plot(dir: &Path, input: &Path, chart: &[&str], numjobs: &str, png: &Path) -> Output {
    Command::new("fio-plot")
        .current_dir(dir)
        .env("MPLCONFIGDIR", dir.join("mpl"))
        .arg("-i")
        .arg(input)
        .args(["-T", "iofleet"])
        .args(chart)
        .args(["-r", "randrw", "-f", "read", "-d", "4", "-n", numjobs, "-o"])
        .arg(png)
        .output()
        .expect("fio-plot runs")
}

/// Draw `chart` and check a non-empty PNG came out.
fn draws(dir: &Path, input: &Path, chart: &[&str], numjobs: &str) {
    let png = dir.join(format!(
        "{}-{}.png",
        input.file_name().unwrap().to_string_lossy(),
        chart[0].trim_start_matches('-')
    ));
    let o = fio_plot(dir, input, chart, numjobs, &png);
    assert!(
        o.status.success(),
        "fio-plot {chart:?} on {}: {}{}",
        input.display(),
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(
        bytes.len() > 1000,
        "{}: {} bytes",
        png.display(),
        bytes.len()
    );
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is a PNG",
        png.display()
    );
}

/// What fio-plot plots for `chart` (`-N`, `-l`) of the documents in `input`, with
/// `-r randrw -f DIRECTION -d 4 -n NUMJOBS`: its own parsing and record set (the
/// `fio_plot` package's `get_data` and `get_record_set`, which its bar and line charts
/// draw), printed as JSON: `iops_series_raw`, `lat_series_raw` (ns), `hostname_series`.
fn plotted(dir: &Path, input: &Path, chart: &str, direction: &str, numjobs: &str) -> Value {
    const SCRIPT: &str = "import sys, json\n\
        from fio_plot import get_settings\n\
        from fio_plot.fiolib import getdata, shared_chart\n\
        sys.argv = ['fio-plot'] + sys.argv[1:]\n\
        settings = get_settings()[1]\n\
        routing = getdata.get_routing_dict()\n\
        kind = settings['graphtype']\n\
        settings = getdata.configure_default_settings(settings, routing, kind)\n\
        data = routing[kind]['get_data'](settings)\n\
        rs = shared_chart.get_record_set(settings, data, shared_chart.get_dataset_types(data))\n\
        print(json.dumps({k: rs[k] for k in ('iops_series_raw', 'lat_series_raw', 'hostname_series')}))\n";
    let o = Command::new("python3")
        .current_dir(dir)
        .env("MPLCONFIGDIR", dir.join("mpl"))
        .args(["-c", SCRIPT, "-i"])
        .arg(input)
        .args(["-T", "iofleet", chart, "-r", "randrw", "-f", direction])
        .args(["-d", "4", "-n", numjobs, "-o", "unused.png"])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "fio-plot's record set of {}: {}{}",
        input.display(),
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

/// The stored run `name` as `results export` gives it.
fn stored(dir: &Path, db: &str, name: &str) -> Value {
    let o = run_in(dir, &["results", "export", name, "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Check that fio-plot's series for `direction` are `want`: (host or "", IOPS, mean
/// latency µs), in any order.
fn plots(got: &Value, direction: &str, want: &[(String, f64, f64)]) {
    let series = |k: &str| -> Vec<Value> { got[k].as_array().unwrap().clone() };
    let (iops, lat, hosts) = (
        series("iops_series_raw"),
        series("lat_series_raw"),
        series("hostname_series"),
    );
    assert_eq!(iops.len(), want.len(), "{direction}: {got}");
    for (host, want_iops, want_us) in want {
        let i = if host.is_empty() {
            0
        } else {
            hosts
                .iter()
                .position(|h| h == host.as_str())
                .unwrap_or_else(|| panic!("{direction}: no {host} in {got}"))
        };
        assert_eq!(
            iops[i].as_f64(),
            Some(*want_iops),
            "{direction} {host}: {got}"
        );
        let ns = lat[i].as_f64().unwrap();
        assert!(
            (ns - want_us * 1e3).abs() <= 1e-9 * ns,
            "{direction} {host}: {ns} ns plotted, iofleet says {want_us} µs"
        );
    }
}

/// iofleet's (IOPS, mean µs) of `part` in `direction`.
fn figures(part: &Value, direction: &str) -> (f64, f64) {
    (
        part[direction]["iops"].as_f64().unwrap(),
        part[direction]["latency_us"]["mean"].as_f64().unwrap(),
    )
}

#[test]
fn fio_plot_draws_its_charts_from_one_host_and_from_a_fleet() {
    if !need::need(
        "fio_plot_draws_its_charts_from_one_host_and_from_a_fleet",
        &["fio-plot"],
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let db = dir.join("r.db");
    let db = db.to_str().unwrap();

    // One host: 2 workers × 2 disks × 1 thread = 4 jobs of QD 4.
    let one = fio_json_run(dir, "one-host", "2", &["--db", db, "--name", "one-host"]);
    for chart in [&["-l"][..], &["-N"], &["-L", "-t", "iops"], &["-H"]] {
        draws(dir, &one, chart, "4");
    }
    // The bars and lines are the run's IOPS and mean latency, per direction.
    let run = stored(dir, db, "one-host");
    for (chart, direction) in [("-N", "read"), ("-l", "write")] {
        let (iops, us) = figures(&run["summary"], direction);
        assert!(iops > 0.0, "{direction}: {}", run["summary"]);
        let got = plotted(dir, &one, chart, direction, "4");
        plots(&got, direction, &[(String::new(), iops, us)]);
    }

    // Three hosts of one worker each (local transport): fio's client shape, 2 jobs a host.
    let inv = dir.join("local.toml");
    std::fs::write(
        &inv,
        (1..=3)
            .map(|i| format!("[[host]]\ndestination = \"l{i}\"\ntransport = \"local\"\ntarget = \"data{i}\"\n"))
            .collect::<String>(),
    )
    .unwrap();
    let fleet = fio_json_run(
        dir,
        "fleet",
        "3",
        &[
            "--db",
            db,
            "--name",
            "fleet",
            "--hosts",
            inv.to_str().unwrap(),
        ],
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fleet.join("run.json")).unwrap()).unwrap();
    assert_eq!(doc["client_stats"].as_array().map(Vec::len), Some(4));
    for chart in [&["-l"][..], &["-N"], &["-L", "-t", "iops"]] {
        draws(dir, &fleet, chart, "2");
    }
    // A bar per host and one for "All clients": each host's figures and the fleet's.
    let run = stored(dir, db, "fleet");
    for (chart, direction) in [("-N", "read"), ("-l", "write")] {
        let mut want: Vec<(String, f64, f64)> = run["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let (iops, us) = figures(h, direction);
                (h["host"].as_str().unwrap().to_string(), iops, us)
            })
            .collect();
        let (iops, us) = figures(&run["summary"], direction);
        want.push(("All clients".into(), iops, us));
        let got = plotted(dir, &fleet, chart, direction, "2");
        plots(&got, direction, &want);
    }

    // Without the store's histograms the document has no latency ranges, and fio-plot's
    // latency histogram cannot be drawn from it.
    let bare = fio_json_run(dir, "unsaved", "2", &["--no-save"]);
    let png = dir.join("unsaved.png");
    let o = fio_plot(dir, &bare, &["-H"], "4", &png);
    assert!(!o.status.success(), "fio-plot drew without latency ranges");
    assert!(stderr(&o).contains("latency_"), "{}", stderr(&o));
}
