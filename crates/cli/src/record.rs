//! Saving runs to the results store: the `--db/--no-save/--name/--label` flags of
//! `iofleet run`, the `--db` flag of the reading commands, and `StoreRecorder`, an
//! `Observer` that writes each interval to the store as the controller hands it over.
//!
//! A store that fails in the middle of a run never stops the benchmark: the recorder
//! prints one warning and stops recording, and the run's result is still printed. A
//! store that cannot be opened before the run is an input error when `--db` was given,
//! and a warning (the run goes on unsaved) for the default location.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use iofleet_fleet::{IntervalSnapshot, Observer};
use iofleet_stats::result::{RunInfo, RunResult, StoredRun};
use iofleet_store::{environment, NewRun, Store, StoreError};

use crate::Exit;

const DB_HELP: &str = "Results database [default: $XDG_DATA_HOME/iofleet/results.db, else ~/.local/share/iofleet/results.db]";

#[derive(Args, Debug, Clone)]
pub struct SaveArgs {
    #[arg(long, value_name = "PATH", help = DB_HELP)]
    pub db: Option<PathBuf>,
    /// Do not record this run in the results store.
    #[arg(long, conflicts_with_all = ["db", "name", "labels"])]
    pub no_save: bool,
    /// Name of the run in the results store [default: the profile name].
    #[arg(long)]
    pub name: Option<String>,
    /// Label the stored run, KEY=VALUE; repeat for several (--label policy=raid5 --label dedupe=on).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
}

/// `--db` of the commands that read the store.
#[derive(Args, Debug, Clone)]
pub struct DbArg {
    #[arg(long, value_name = "PATH", help = DB_HELP)]
    pub db: Option<PathBuf>,
}

impl DbArg {
    /// Open the existing store (a missing file is an input error naming --db).
    pub fn open(&self) -> Result<Store, Exit> {
        let path = match &self.db {
            Some(p) => p.clone(),
            None => iofleet_store::default_path().map_err(Exit::input)?,
        };
        Store::open_existing(&path).map_err(store_exit)
    }
}

/// Exit code for a store error: what the user typed (a run, --db) is input (2).
pub fn store_exit(e: StoreError) -> Exit {
    match e {
        StoreError::Sql(_) | StoreError::Json(_) | StoreError::Corrupt { .. } => Exit::failure(e),
        _ => Exit::input(e),
    }
}

/// `--label KEY=VALUE`: key of letters, digits, `_`, `-`, `.`; any value.
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not KEY=VALUE"))?;
    let k = k.trim();
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "label key '{k}' must be letters, digits, '_', '-' or '.'"
        ));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// Labels as a map; a key given twice is an input error.
pub fn label_map(labels: &[(String, String)]) -> Result<BTreeMap<String, String>, Exit> {
    let mut map = BTreeMap::new();
    for (k, v) in labels {
        if map.insert(k.clone(), v.clone()).is_some() {
            return Err(Exit::input(format!("--label {k}: given more than once")));
        }
    }
    Ok(map)
}

/// Writes a run to the store while it happens.
pub struct StoreRecorder {
    store: Store,
    name: Option<String>,
    labels: BTreeMap<String, String>,
    id: Option<String>,
    broken: bool,
    quiet: bool,
    hosts_recorded: bool,
}

impl StoreRecorder {
    /// Open the store for `iofleet run` (None with --no-save).
    pub fn open(a: &SaveArgs, quiet: bool) -> Result<Option<StoreRecorder>, Exit> {
        if a.no_save {
            return Ok(None);
        }
        let labels = label_map(&a.labels)?;
        let opened = match &a.db {
            Some(p) => Store::open(p).map_err(store_exit)?,
            None => match iofleet_store::default_path().and_then(|p| Store::open(&p)) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("warning: this run will not be saved: {e} (pass --db PATH, or --no-save to silence this)");
                    return Ok(None);
                }
            },
        };
        Ok(Some(StoreRecorder {
            store: opened,
            name: a.name.clone(),
            labels,
            id: None,
            broken: false,
            quiet,
            hosts_recorded: false,
        }))
    }

    fn fail(&mut self, e: StoreError) {
        if !self.broken {
            eprintln!(
                "warning: results store {}: {e}; the run goes on but is no longer recorded",
                self.store.path().display()
            );
        }
        self.broken = true;
    }

    fn begin(&mut self, info: &RunInfo) {
        let env = environment(&info.iofleet_version, &info.target);
        let new = NewRun {
            name: self.name.as_deref(),
            labels: &self.labels,
            info,
            environment: &env,
        };
        match self.store.begin_run(&new) {
            Ok(id) => self.id = Some(id),
            Err(e) => self.fail(e),
        }
    }

    /// Store the final result (or, when the run failed, mark it interrupted) and tell
    /// the user the run's id; returns the run's identity in the store when it was saved.
    pub fn finish(mut self, result: Option<&RunResult>) -> Option<StoredRun> {
        if self.broken {
            return None;
        }
        let outcome = match (self.id.clone(), result) {
            (Some(id), Some(r)) => self.store.finish_run(&id, r).map(|_| id),
            (Some(id), None) => self.store.abandon_run(&id).map(|_| id),
            (None, Some(r)) => {
                // Ended before the fleet was released (e.g. Ctrl-C while preparing).
                let env = environment(&r.run.iofleet_version, &r.run.target);
                let new = NewRun {
                    name: self.name.as_deref(),
                    labels: &self.labels,
                    info: &r.run,
                    environment: &env,
                };
                self.store.record_finished(&new, r)
            }
            (None, None) => return None,
        };
        let id = match outcome {
            Ok(id) => id,
            Err(e) => {
                self.fail(e);
                return None;
            }
        };
        if !self.quiet {
            eprintln!(
                "saved as run {id} in {} (iofleet results show {id})",
                self.store.path().display()
            );
        }
        match self.store.meta(&id) {
            Ok(m) => Some(StoredRun {
                id: m.id,
                name: m.name,
                labels: m.labels,
                status: m.status.as_str().to_string(),
            }),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }
}

impl Observer for StoreRecorder {
    fn started(&mut self, info: &RunInfo) {
        if !self.broken && self.id.is_none() {
            self.begin(info);
        }
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        if self.broken {
            return;
        }
        if let Some(id) = self.id.clone() {
            if !self.hosts_recorded {
                self.hosts_recorded = true;
                if let Err(e) = self
                    .store
                    .set_worker_hosts(&id, snap.hosts, snap.worker_host)
                {
                    self.fail(e);
                    return;
                }
            }
            if let Err(e) = self
                .store
                .record_interval(&id, snap.row, snap.disks)
                .and_then(|_| {
                    self.store
                        .record_usage(&id, snap.row.index, snap.hosts, snap.usage)
                })
            {
                self.fail(e);
            }
        }
    }
}

/// Rewrite the stored final result of run `id` (saved with `save`) with `result`, e.g.
/// with a block computed after the run ended. A store that fails here only warns: the
/// result is still printed.
pub fn update_stored_result(save: &SaveArgs, id: &str, result: &RunResult) {
    let path = match &save.db {
        Some(p) => Ok(p.clone()),
        None => iofleet_store::default_path(),
    };
    if let Err(e) = path
        .and_then(|p| Store::open(&p))
        .and_then(|mut s| s.finish_run(id, result))
    {
        eprintln!(
            "warning: results store: run {id} keeps its result without the latest additions: {e}"
        );
    }
}
