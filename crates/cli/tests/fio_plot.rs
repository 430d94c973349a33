//! fio-plot (PyPI `fio-plot`, installed by test.sh), a real reader of fio's JSON, draws
//! its charts from iofleet's `fio-json` of a one-host run and of a three-host fleet run
//! (fio's client shape): each chart must be drawn without error into a non-empty PNG.
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
    let one = fio_json_run(dir, "one-host", "2", &["--db", db]);
    for chart in [&["-l"][..], &["-N"], &["-L", "-t", "iops"], &["-H"]] {
        draws(dir, &one, chart, "4");
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
        &["--db", db, "--hosts", inv.to_str().unwrap()],
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fleet.join("run.json")).unwrap()).unwrap();
    assert_eq!(doc["client_stats"].as_array().map(Vec::len), Some(4));
    for chart in [&["-l"][..], &["-N"], &["-L", "-t", "iops"]] {
        draws(dir, &fleet, chart, "2");
    }

    // Without the store's histograms the document has no latency ranges, and fio-plot's
    // latency histogram cannot be drawn from it.
    let bare = fio_json_run(dir, "unsaved", "2", &["--no-save"]);
    let png = dir.join("unsaved.png");
    let o = fio_plot(dir, &bare, &["-H"], "4", &png);
    assert!(!o.status.success(), "fio-plot drew without latency ranges");
    assert!(stderr(&o).contains("latency_"), "{}", stderr(&o));
}
