//! `iofleet profiles`: the built-in list, `show` output that runs as a file, and the
//! generated reference kept in sync with docs/profiles.md.

mod common;

use common::*;

#[test]
fn list_names_every_builtin() {
    let o = iofleet().args(["profiles", "list"]).output().unwrap();
    assert!(o.status.success());
    let out = stdout(&o);
    let listed: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    // The exact list of names is the profile crate's test; here the CLI must list them all.
    let mut want = iofleet_profile::builtin_names();
    want.sort_unstable();
    let mut got = listed.clone();
    got.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn show_prints_toml_that_runs_as_a_file() {
    let d = tempfile::tempdir().unwrap();
    for name in ["xray-oltp", "jesd219"] {
        let o = iofleet().args(["profiles", "show", name]).output().unwrap();
        assert!(o.status.success());
        let path = d.path().join(format!("{name}.toml"));
        std::fs::write(&path, &o.stdout).unwrap();
        let r = run_in(
            d.path(),
            &[
                "run",
                path.to_str().unwrap(),
                "--engine",
                "null",
                "--duration",
                "300ms",
                "--interval",
                "100ms",
                "--warmup",
                "0s",
                "--json",
                "--quiet",
            ],
        );
        assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
        let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        assert_eq!(v["run"]["profile"], name);
    }
}

#[test]
fn reference_matches_docs() {
    let o = iofleet().args(["profiles", "reference"]).output().unwrap();
    assert!(o.status.success());
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles.md"
    ))
    .unwrap();
    assert!(
        stdout(&o) == docs,
        "docs/profiles.md is stale: run `cargo run -p iofleet -- profiles reference > docs/profiles.md`"
    );
}

#[test]
fn help_and_version() {
    let o = iofleet().args(["run", "--help"]).output().unwrap();
    assert!(o.status.success());
    let h = stdout(&o);
    for flag in [
        "--workers",
        "--disks",
        "--disk-size",
        "--threads",
        "--qd",
        "--bs",
        "--read-pct",
        "--random-pct",
        "--working-set",
        "--duration",
        "--warmup",
        "--rate",
        "--destroy-data",
        "--direct",
    ] {
        assert!(h.contains(flag), "run --help lacks {flag}");
    }
    let v = iofleet().arg("version").output().unwrap();
    assert!(v.status.success());
    assert!(stdout(&v).contains(env!("CARGO_PKG_VERSION")));
}
