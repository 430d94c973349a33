//! Helpers for the results-store tests (store.rs, compare.rs, report.rs): short null-engine
//! runs recorded into a temporary database, shared by the tests of one binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;

pub fn iofleet() -> Command {
    let mut c = Command::cargo_bin("iofleet").expect("binary is built");
    // Never touch the developer's own results store.
    c.env(
        "XDG_DATA_HOME",
        std::env::temp_dir().join("iofleet-tests-xdg-unused"),
    );
    c
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run `iofleet ARGS --db DB`, returning the output.
pub fn with_db(db: &Path, args: &[&str]) -> Output {
    iofleet()
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("iofleet runs")
}

/// A short, light null-engine run at a fixed rate (so IOPS are predictable and the CPU
/// stays free for parallel tests), recorded into `db`; returns the live JSON result.
pub fn record_run(db: &Path, rate: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "run",
        "easy-run-4k70r",
        "--engine",
        "null",
        "--workers",
        "3",
        "--disks",
        "2",
        "--threads",
        "1",
        "--qd",
        "4",
        "--rate",
        rate,
        "--duration",
        "1s",
        "--warmup",
        "250ms",
        "--interval",
        "250ms",
        "--json",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = with_db(db, &args);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", err(&o));
    serde_json::from_slice(&o.stdout).expect("run prints JSON")
}

/// Two runs with different labels: baseline at 20,000 IOPS, candidate at 10,000.
pub struct TwoRuns {
    _dir: tempfile::TempDir,
    pub db: PathBuf,
    pub base: Value,
    pub cand: Value,
    pub base_id: String,
    pub cand_id: String,
}

pub fn two_runs() -> &'static TwoRuns {
    static RUNS: OnceLock<TwoRuns> = OnceLock::new();
    RUNS.get_or_init(|| {
        // A static is never dropped: keep its directory under target/, not /tmp.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("results.db");
        let base = record_run(
            &db,
            "20000",
            &[
                "--label",
                "policy=raid1",
                "--label",
                "dedupe=off",
                "--name",
                "mirror",
            ],
        );
        let cand = record_run(
            &db,
            "10000",
            &[
                "--label",
                "policy=raid5",
                "--label",
                "dedupe=off",
                "--name",
                "erasure",
            ],
        );
        let list = with_db(&db, &["results", "list", "--json"]);
        assert_eq!(list.status.code(), Some(0), "{}", err(&list));
        let list: Value = serde_json::from_slice(&list.stdout).unwrap();
        let id = |name: &str| {
            list.as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("run {name} listed"))["id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        TwoRuns {
            base_id: id("mirror"),
            cand_id: id("erasure"),
            _dir: dir,
            db,
            base,
            cand,
        }
    })
}

pub fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result.schema.json"
    ))
    .expect("schema file");
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).expect("valid schema")
}

pub fn assert_schema_valid(v: &Value) {
    let errors: Vec<String> = schema()
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
}
