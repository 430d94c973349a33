//! Saving runs to the results store: the `--db/--no-save/--name/--label` flags of
//! `iofleet run`, the `--db` flag of the reading commands, and `StoreRecorder`, an
//! `Observer` that writes each interval to the store as the controller hands it over
//! (in a run with relays, with what they sent of it, and their totals at the end).
//!
//! A store that other runs are writing is waited for (the store's writes retry while it
//! is locked). A store that truly fails in the middle of a run (disk full, read-only,
//! damaged) never stops the benchmark and never loses it: the recorder says so once,
//! copies what it had committed into a private store in memory and records on there; at
//! the end it tries the store once more and, failing that, writes the run to a private
//! file of its own (`Store::save_aside`: a 0700 directory beside the store, else in the
//! working directory, else a new one in the temp directory) and names the file and the
//! `iofleet results import` command that puts it back. A store that cannot be opened
//! before the run is an input error when `--db` was given, and a warning (the run goes
//! on unsaved) for the default location.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use iofleet_fleet::{IntervalSnapshot, Observer};
use iofleet_stats::result::{RunInfo, RunResult, StoredRun};
use iofleet_stats::Sample;
use iofleet_store::{environment, NewRun, Relayed, Store, StoreError};

use crate::exit::Exit;

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
    /// Open the existing store (a missing file is an input error naming --db); one on a
    /// read-only filesystem is opened read-only, with a note when part of it cannot be
    /// read there.
    pub fn open(&self) -> Result<Store, Exit> {
        let path = match &self.db {
            Some(p) => p.clone(),
            None => iofleet_store::default_path().map_err(Exit::input)?,
        };
        let store = Store::open_existing(&path).map_err(store_exit)?;
        if let Some(note) = store.read_note() {
            eprintln!("note: {note}");
        }
        Ok(store)
    }

    /// Open the store, creating it when missing (for commands that add runs).
    pub fn open_or_create(&self) -> Result<Store, Exit> {
        let path = match &self.db {
            Some(p) => p.clone(),
            None => iofleet_store::default_path().map_err(Exit::input)?,
        };
        Store::open(&path).map_err(store_exit)
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
    /// Where the run goes on once `store` failed: a private store in memory.
    spill: Option<Store>,
    name: Option<String>,
    labels: BTreeMap<String, String>,
    id: Option<String>,
    /// The run as it started, to begin it again in memory if its first rows cannot be
    /// read back from the failed store.
    info: Option<RunInfo>,
    /// Nothing more can be recorded anywhere (not even in memory).
    broken: bool,
    quiet: bool,
    hosts_recorded: bool,
    /// The run's first global worker number (relays name workers by it).
    worker_base: u32,
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
            spill: None,
            name: a.name.clone(),
            labels,
            id: None,
            info: None,
            broken: false,
            quiet,
            hosts_recorded: false,
            worker_base: 0,
        }))
    }

    /// The store being written: the real one, or memory once it failed.
    fn active(&mut self) -> &mut Store {
        self.spill.as_mut().unwrap_or(&mut self.store)
    }

    /// The store failed with `e`: go on in memory, with what was committed so far.
    /// Returns false when even that is impossible (the run is then not recorded).
    fn fail(&mut self, e: StoreError) -> bool {
        if self.broken {
            return false;
        }
        let path = self.store.path().display().to_string();
        if self.spill.is_some() {
            eprintln!(
                "warning: results store {path}: {}; the run goes on but is no longer recorded",
                e.cause()
            );
            self.broken = true;
            return false;
        }
        let mut mem = match Store::open_memory() {
            Ok(m) => m,
            Err(m) => {
                eprintln!(
                    "warning: results store {path}: {} (and no store in memory: {m}); the run goes on but is no longer recorded",
                    e.cause()
                );
                self.broken = true;
                return false;
            }
        };
        let lost = match (&self.id, &self.info) {
            (Some(id), Some(info)) => match mem.pull_run(self.store.path(), id) {
                Ok(()) => None,
                Err(p) => {
                    // Begin it again under its id: the intervals from here on and the
                    // final result are kept; the earlier intervals are not.
                    let env = environment(&info.iofleet_version, &info.target);
                    let new = NewRun {
                        name: self.name.as_deref(),
                        labels: &self.labels,
                        info,
                        environment: &env,
                    };
                    let again = mem.begin_run_as(&new, Some(id)).err();
                    Some(format!(
                        " (its intervals so far could not be read back: {p}{})",
                        again.map_or(String::new(), |a| format!("; {a}"))
                    ))
                }
            },
            _ => None,
        };
        eprintln!(
            "warning: results store {path}: {}; the run goes on, kept in memory{}, and is saved at its end",
            e.cause(),
            lost.unwrap_or_default()
        );
        self.spill = Some(mem);
        true
    }

    /// Record what the run hears at its end (relays' totals, unsent groups) with
    /// `write`: on the store, or in memory once it failed.
    fn record_end(&mut self, mut write: impl FnMut(&mut Store, &str) -> Result<(), StoreError>) {
        if self.broken {
            return;
        }
        let Some(id) = self.id.clone() else { return };
        while let Err(e) = write(self.active(), &id) {
            if !self.fail(e) {
                return;
            }
        }
    }

    fn begin(&mut self, info: &RunInfo) {
        let env = environment(&info.iofleet_version, &info.target);
        let (name, labels) = (self.name.clone(), self.labels.clone());
        loop {
            let new = NewRun {
                name: name.as_deref(),
                labels: &labels,
                info,
                environment: &env,
            };
            match self.active().begin_run(&new) {
                Ok(id) => {
                    self.id = Some(id);
                    return;
                }
                Err(e) => {
                    if !self.fail(e) {
                        return;
                    }
                }
            }
        }
    }

    /// Store the final result (or, when the run failed, mark it interrupted) and tell
    /// the user the run's id; returns the run's identity in the store when it was saved.
    pub fn finish(mut self, result: Option<&RunResult>) -> Option<StoredRun> {
        if self.broken {
            return None;
        }
        let id = loop {
            let outcome = match (self.id.clone(), result) {
                (Some(id), Some(r)) => self.active().finish_run(&id, r).map(|_| id),
                (Some(id), None) => self.active().abandon_run(&id).map(|_| id),
                (None, Some(r)) => {
                    // Ended before the fleet was released (e.g. Ctrl-C while preparing).
                    let env = environment(&r.run.iofleet_version, &r.run.target);
                    let (name, labels) = (self.name.clone(), self.labels.clone());
                    let new = NewRun {
                        name: name.as_deref(),
                        labels: &labels,
                        info: &r.run,
                        environment: &env,
                    };
                    let id = self.active().record_finished(&new, r);
                    if let Ok(id) = &id {
                        self.id = Some(id.clone());
                    }
                    id
                }
                (None, None) => return None,
            };
            match outcome {
                Ok(id) => break id,
                Err(e) => {
                    if !self.fail(e) {
                        return None;
                    }
                }
            }
        };
        if let Some(mem) = self.spill.take() {
            return self.save_spill(mem, &id);
        }
        if !self.quiet {
            eprintln!(
                "saved as run {id} in {} (iofleet results show {id})",
                self.store.path().display()
            );
        }
        self.stored(&id)
    }

    fn stored(&mut self, id: &str) -> Option<StoredRun> {
        match self.active().meta(id) {
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

    /// The run was kept in memory: back into the store if it can take it now, else into
    /// a private file of its own, named with the command that restores it.
    fn save_spill(&mut self, mut mem: Store, id: &str) -> Option<StoredRun> {
        let path = self.store.path().to_path_buf();
        let err = match mem.push_run(&path, id) {
            Ok(()) => {
                eprintln!(
                    "saved as run {id} in {} after all (iofleet results show {id})",
                    path.display()
                );
                return self.stored(id);
            }
            Err(e) => e.cause(),
        };
        match mem.save_aside(&path, id) {
            Ok(file) => {
                eprintln!(
                    "warning: results store {}: {err}; run {id} was saved to {} instead: \
                     restore it with `iofleet results import {} --db {}`",
                    path.display(),
                    file.display(),
                    file.display(),
                    path.display()
                );
                let m = mem.meta(id).ok()?;
                Some(StoredRun {
                    id: m.id,
                    name: m.name,
                    labels: m.labels,
                    status: m.status.as_str().to_string(),
                })
            }
            Err(tried) => {
                eprintln!(
                    "warning: results store {}: {err}; run {id} could not be saved anywhere ({}); its result is only what was printed",
                    path.display(),
                    tried.join("; ")
                );
                None
            }
        }
    }
}

impl Observer for StoreRecorder {
    fn started(&mut self, info: &RunInfo) {
        if !self.broken && self.id.is_none() {
            self.info = Some(info.clone());
            self.begin(info);
        }
    }

    fn interval(&mut self, snap: &IntervalSnapshot<'_>) {
        if self.broken {
            return;
        }
        let Some(id) = self.id.clone() else { return };
        self.worker_base = snap.layout.worker_base;
        loop {
            let mut outcome = Ok(());
            if !self.hosts_recorded {
                outcome = self
                    .active()
                    .set_worker_hosts(&id, snap.hosts, snap.worker_host);
            }
            let outcome = outcome.and_then(|_| {
                let relayed = Relayed {
                    groups: &snap.relayed.groups,
                    hosts: &snap.relayed.hosts,
                    host_names: snap.hosts,
                };
                self.active()
                    .record_relayed_interval(&id, snap.row, snap.disks, &relayed)?;
                self.active()
                    .record_usage(&id, snap.row.index, snap.hosts, snap.usage)
            });
            match outcome {
                Ok(()) => {
                    self.hosts_recorded = true;
                    return;
                }
                // Recorded in memory from here on, this interval included (a failed
                // transaction left nothing of it in the store).
                Err(e) => {
                    if !self.fail(e) {
                        return;
                    }
                    self.hosts_recorded = false;
                }
            }
        }
    }

    fn relay_totals(&mut self, totals: &[(u32, u32, Sample)]) {
        let base = self.worker_base;
        self.record_end(|store, id| store.record_relay_totals(id, base, totals));
    }

    fn unsent_groups(&mut self, groups: &[Sample]) {
        self.record_end(|store, id| store.record_unsent_groups(id, groups));
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
