//! Stored runs as the commands that read the results store use them: a run loaded by
//! what the user typed (with every figure recomputed from its histograms), a comparison's
//! runs and baseline (never an invalid run), and the `-o FILE` output with a quiet end on
//! a closed pipe.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use iofleet_report::RunData;
use iofleet_store::Store;

use crate::exit::Exit;
use crate::store::record::{store_exit, DbArg};

/// Load a run by what the user typed, with figures recomputed from its histograms.
pub fn load_run(store: &Store, query: &str) -> Result<RunData, Exit> {
    let id = store.resolve(query).map_err(store_exit)?;
    let a = store.analyze(&id).map_err(store_exit)?;
    Ok(RunData {
        id: a.meta.id,
        name: a.meta.name,
        labels: a.meta.labels,
        status: a.meta.status.as_str().to_string(),
        environment: serde_json::to_value(&a.environment).unwrap_or_default(),
        result: a.result,
        read_hist: a.read_hist,
        write_hist: a.write_hist,
        host_hists: a.host_hists,
        group_hists: a.group_hists,
        host_series: a.host_series,
        group_series: a.group_series,
    })
}

/// Open `-o FILE` (or stdout) for writing.
pub fn output(path: &Option<PathBuf>) -> Result<Box<dyn Write>, Exit> {
    Ok(match path {
        Some(p) => {
            Box::new(BufWriter::new(File::create(p).map_err(|e| {
                Exit::input(format!("--output {}: {e}", p.display()))
            })?))
        }
        None => Box::new(BufWriter::new(io::stdout())),
    })
}

/// A closed pipe (`| head`) ends the output quietly, like other Unix tools.
pub fn write_err(e: io::Error) -> Exit {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Exit::failure(format!("writing the output: {e}"))
}

/// The runs of a comparison and the baseline's index among them.
pub fn load_with_baseline(
    db: &DbArg,
    runs: &[String],
    baseline: Option<&str>,
) -> Result<(Vec<RunData>, usize), Exit> {
    load_runs_in(&db.open()?, runs, baseline)
}

/// The runs of a comparison and the baseline's index among them, from an open store
/// (`iofleet serve` opens its own, read-only). A baseline not among `runs` is put first.
pub fn load_runs_in(
    store: &Store,
    runs: &[String],
    baseline: Option<&str>,
) -> Result<(Vec<RunData>, usize), Exit> {
    let mut data = runs
        .iter()
        .map(|q| load_run(store, q))
        .collect::<Result<Vec<_>, _>>()?;
    let index = match baseline {
        None => 0,
        Some(q) => {
            let b = load_run(store, q)?;
            match data.iter().position(|r| r.id == b.id) {
                Some(i) => i,
                None => {
                    data.insert(0, b);
                    0
                }
            }
        }
    };
    Ok((data, index))
}

/// Refuse an invalid run (one below its quorum of hosts) as the baseline of a
/// comparison: exit 2, naming the run and why; `choose` says how to pick another.
pub fn check_baseline(runs: &[RunData], baseline: usize, choose: &str) -> Result<(), Exit> {
    let b = &runs[baseline];
    match b.result.validity.valid {
        true => Ok(()),
        false => Err(Exit::input(format!(
            "run {} ({}) is INVALID, so it cannot be the baseline: {}; {choose}",
            b.id,
            b.name,
            b.result.validity.reasons.join("; ")
        ))),
    }
}
