//! The fio corpus (`tests/fio_corpus/`, sources in its README): job files written the
//! way public job files are, each planned (`--dry-run`) and run for 1 s on files (the
//! `auto` engine) under a temporary `--target`. None may panic, at least 80% must run, and every
//! refusal exits 2 naming the option and the file and line it was written on. The counts
//! are printed (docs/fio.md quotes them).

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio_corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    files
}

/// How one file fared: its name, the plan's and the run's outputs.
struct Outcome {
    name: String,
    plan: std::process::Output,
    run: Option<std::process::Output>,
}

fn iofleet_on(file: &Path, work: &Path, extra: &[&str]) -> std::process::Output {
    let target = work.join("data");
    std::fs::create_dir_all(&target).unwrap();
    let db = work.join("r.db");
    let mut args = vec![
        "run".to_string(),
        "--fio".into(),
        file.to_str().unwrap().into(),
        "--engine".into(),
        "auto".into(),
        "--target".into(),
        target.to_str().unwrap().into(),
        "--warmup".into(),
        "0s".into(),
        "--duration".into(),
        "1s".into(),
        "--db".into(),
        db.to_str().unwrap().into(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    iofleet()
        .current_dir(work)
        .env("FIO_CORPUS_SIZE", "8m")
        .args(&args)
        .output()
        .expect("iofleet runs")
}

fn try_file(file: &Path) -> Outcome {
    let work = tempfile::tempdir().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let plan = iofleet_on(file, work.path(), &["--dry-run"]);
    let run = (plan.status.code() == Some(0)).then(|| iofleet_on(file, work.path(), &[]));
    Outcome { name, plan, run }
}

/// `FILE:LINE: OPTION:` in a refusal, for the file itself or one it includes.
fn names_option_and_line(err: &str, file: &str) -> bool {
    err.lines().any(|l| {
        let l = l.trim();
        let Some(rest) = l
            .split_once(".fio:")
            .or_else(|| l.split_once(".inc:"))
            .map(|x| x.1)
        else {
            return false;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let after = &rest[digits.len()..];
        l.contains(file.trim_end_matches(".fio"))
            && !digits.is_empty()
            && after
                .strip_prefix(": ")
                .and_then(|a| a.split_once(": "))
                .is_some_and(|(opt, _)| {
                    !opt.is_empty() && opt.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
    })
}

#[test]
fn the_corpus_plans_and_runs_and_every_refusal_names_option_and_line() {
    let files = corpus();
    assert!(files.len() >= 30, "{} job files", files.len());
    // Two at a time: the machine is shared and each run lasts about a second.
    let outcomes: Vec<Outcome> = files
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|s| {
                let handles: Vec<_> = pair.iter().map(|f| s.spawn(move || try_file(f))).collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    for o in &outcomes {
        for out in std::iter::once(&o.plan).chain(o.run.as_ref()) {
            let err = stderr(out);
            assert!(
                !err.contains("panicked") && out.status.code() != Some(101),
                "{} panicked: {err}",
                o.name
            );
        }
        match &o.run {
            Some(run) => {
                assert_eq!(
                    run.status.code(),
                    Some(0),
                    "{} planned but did not run: {}",
                    o.name,
                    stderr(run)
                );
                ran.push(o.name.clone());
            }
            None => {
                let err = stderr(&o.plan);
                assert_eq!(o.plan.status.code(), Some(2), "{}: {err}", o.name);
                assert!(
                    names_option_and_line(&err, &o.name),
                    "{}'s refusal names no option and line: {err}",
                    o.name
                );
                let why = err
                    .lines()
                    .find(|l| names_option_and_line(l, &o.name))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                refused.push(format!("{} ({why})", o.name));
            }
        }
    }
    println!(
        "fio corpus: {} files, {} run, {} refused",
        outcomes.len(),
        ran.len(),
        refused.len()
    );
    for r in &refused {
        println!("  refused: {r}");
    }
    assert!(
        ran.len() * 10 >= outcomes.len() * 8,
        "only {} of {} ran; refused: {refused:#?}",
        ran.len(),
        outcomes.len()
    );
}

#[test]
fn a_refusal_without_a_line_is_not_taken_for_one() {
    assert!(names_option_and_line(
        "  /x/34-holes.fio:3: rw: the ':64k' offset modifier",
        "34-holes.fio"
    ));
    assert!(!names_option_and_line(
        "error: 34-holes.fio: no such file",
        "34-holes.fio"
    ));
    assert!(!names_option_and_line(
        "  /x/other.fio:3: rw: x",
        "34-holes.fio"
    ));
    assert!(!names_option_and_line(
        "  /x/34-holes.fio:3: 'bs 4k' is not an option",
        "34-holes.fio"
    ));
}
