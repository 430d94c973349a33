//! Output that cannot attack its reader (issue 35): a run named with a terminal escape
//! sequence and labelled with a bidi override is listed, shown, compared, printed after
//! its run and echoed in an error with every such character made visible, never raw;
//! a CSV export of a run named like a spreadsheet formula keeps it text while its
//! figures stay numbers. (The store's side, private and readable read-only, is in
//! store_sharing.rs; an included fio file never echoed, in fio_jobs.rs.)

mod results_common;

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use results_common::*;

/// `ESC ] 0 ; pwned BEL`: retitles an xterm when printed raw.
const HOSTILE_NAME: &str = "evil\u{1b}]0;pwned\u{7}run";
/// A right-to-left override inside a label value.
const HOSTILE_LABEL: &str = "owner=ab\u{202e}dc";
const FORMULA_NAME: &str = "=HYPERLINK(\"http://example.invalid/x\",\"click\")";

struct Hostile {
    _dir: tempfile::TempDir,
    db: PathBuf,
    /// What `iofleet run` printed for the first run (stdout, stderr).
    run_output: Output,
    ids: [String; 2],
}

/// Two light runs, both named `HOSTILE_NAME` and labelled `HOSTILE_LABEL`, and one
/// named `FORMULA_NAME`.
fn hostile() -> &'static Hostile {
    static RUNS: OnceLock<Hostile> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let db = dir.path().join("results.db");
        let run = |name: &str, label: &str| {
            let o = with_db(
                &db,
                &[
                    "run",
                    "easy-run-4k70r",
                    "--engine",
                    "null",
                    "--workers",
                    "2",
                    "--disks",
                    "1",
                    "--threads",
                    "1",
                    "--qd",
                    "2",
                    "--rate",
                    "2000",
                    "--duration",
                    "300ms",
                    "--warmup",
                    "0s",
                    "--interval",
                    "100ms",
                    "--name",
                    name,
                    "--label",
                    label,
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{}", err(&o));
            o
        };
        let run_output = run(HOSTILE_NAME, HOSTILE_LABEL);
        run(HOSTILE_NAME, HOSTILE_LABEL);
        run(FORMULA_NAME, "k=v");
        let list = with_db(&db, &["results", "list", "--json"]);
        let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
        let ids: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["name"] == HOSTILE_NAME)
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        Hostile {
            _dir: dir,
            db,
            run_output,
            ids: [ids[0].clone(), ids[1].clone()],
        }
    })
}

/// Neither stream carries a control character (but line breaks) or a bidi control,
/// and the hostile name and label are there, escaped.
fn assert_escaped(what: &str, o: &Output, want_name: bool) {
    for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| iofleet_report::text::is_unsafe(c) && c != '\n')
            .collect();
        assert!(raw.is_empty(), "{what}: raw {raw:?} on {stream}:\n{text}");
    }
    if want_name {
        let all = format!("{}{}", out(o), err(o));
        assert!(all.contains("evil\\x1b]0;pwned\\x07run"), "{what}:\n{all}");
    }
}

#[test]
fn hostile_names_and_labels_are_escaped_on_every_terminal_path() {
    let h = hostile();
    assert_escaped("run", &h.run_output, true);
    assert!(out(&h.run_output).contains("owner=ab\\u{202e}dc"));

    let o = with_db(&h.db, &["results", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_escaped("results list", &o, true);
    assert!(out(&o).contains("owner=ab\\u{202e}dc"), "{}", out(&o));

    let o = with_db(&h.db, &["results", "show", &h.ids[0]]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_escaped("results show", &o, true);
    assert!(out(&o).contains("owner=ab\\u{202e}dc"), "{}", out(&o));

    let o = with_db(&h.db, &["compare", &h.ids[0], &h.ids[1]]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_escaped("compare", &o, true);

    // An error that echoes the stored name (the run lacks the label asked for).
    let o = with_db(
        &h.db,
        &[
            "compare",
            &h.ids[0],
            &h.ids[1],
            "--by",
            "test",
            "--configs",
            "ns",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("has no label"), "{}", err(&o));
    assert_escaped("compare error", &o, true);
    // And one that echoes what was typed.
    let o = with_db(&h.db, &["results", "show", HOSTILE_NAME]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_escaped("ambiguous name", &o, true);
    let o = with_db(&h.db, &["results", "show", "x\u{1b}[2J\u{202e}"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_escaped("unknown run", &o, false);
    assert!(err(&o).contains("x\\x1b[2J\\u{202e}"), "{}", err(&o));
}

/// The CSV cells of `line` (RFC 4180 quoting).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

#[test]
fn csv_cells_that_look_like_formulas_stay_text_and_figures_stay_numbers() {
    let h = hostile();
    let o = with_db(
        &h.db,
        &["results", "export", FORMULA_NAME, "--format", "csv"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let mut lines = text.lines();
    let head = csv_cells(lines.next().unwrap());
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let mut rows = 0;
    for line in lines {
        let cells = csv_cells(line);
        assert_eq!(cells.len(), head.len(), "{line}");
        assert_eq!(cells[col("run_name")], format!("'{FORMULA_NAME}"));
        // Every figure is a plain number: nothing prefixed, nothing quoted.
        for name in [
            "ios", "iops", "mbps", "mean_us", "p99_us", "t_s", "read_pct",
        ] {
            let c = &cells[col(name)];
            assert!(
                c.is_empty() || c.parse::<f64>().is_ok(),
                "{name} = {c:?} in {line}"
            );
        }
        rows += 1;
    }
    assert!(rows > 10, "{text}");
    // No cell of the whole export starts as a formula would.
    for line in text.lines() {
        for c in csv_cells(line) {
            let starts_formula =
                c.starts_with(['=', '+', '@']) || c.starts_with('-') && c.parse::<f64>().is_err();
            assert!(!starts_formula, "{c:?} in {line}");
        }
    }
}
