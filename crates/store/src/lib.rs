//! The results store: every run iofleet makes, kept in one SQLite database so runs can be
//! listed, compared and reported long after they ended.
//!
//! A run is written while it happens: `begin_run` when the fleet is released, one
//! transaction per finished interval (`record_interval`, raw per-disk per-stream
//! counters and HDR V2 histograms), and `finish_run` with the final `RunResult`. The
//! database is in WAL mode, so a run killed at any moment leaves every interval committed
//! so far readable, and the run is shown as incomplete. Figures are never read back from
//! stored percentiles: `Store::analyze` re-merges the stored histograms with the same
//! `+=` the controller uses (`recompute`). Every write is one immediate transaction,
//! retried while other processes hold the store (`Store::write`), so runs sharing a store
//! are all recorded; `transfer` moves whole runs between stores (a run kept in memory
//! when its store failed, `results import`). This crate knows nothing of engines, the
//! fleet or output formats; `docs/store.md` describes the schema.

#![forbid(unsafe_code)]

mod env;
mod read;
mod recompute;
mod schema;
mod transfer;
mod write;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

pub use env::{environment, Environment};
pub use read::{ListFilter, RunListing, RunMeta, RunStatus};
pub use recompute::Analysis;
pub use schema::{LATEST_VERSION, MIGRATIONS};
pub use transfer::Imported;

/// How long one write waits, all retries together, while other processes write the
/// same store (each attempt also waits up to `BUSY_TIMEOUT` inside SQLite).
pub const WRITE_DEADLINE: Duration = Duration::from_secs(120);
/// SQLite's own wait for a lock, per attempt.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
pub use write::NewRun;

/// Everything that can go wrong with the results store. Messages name the flag that
/// selects the database (`--db`) or the run argument the user typed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("--db {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("--db {path}: cannot create its directory: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--db {path}: no results store there yet (runs are saved by `iofleet run`; pass --db to choose another file)")]
    Missing { path: PathBuf },
    #[error("--db {path}: schema version {found} is newer than this iofleet understands (up to {supported}); use a newer iofleet")]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error(
        "cannot find the results store: neither XDG_DATA_HOME nor HOME is set (pass --db PATH)"
    )]
    NoDefaultPath,
    #[error("run '{query}' not found (see `iofleet results list`)")]
    NotFound { query: String },
    #[error("run '{query}' is ambiguous: it matches {}; type more characters", .matches.join(", "))]
    Ambiguous { query: String, matches: Vec<String> },
    #[error("run 'latest': the results store is empty")]
    Empty,
    #[error("run {id} is still being recorded by process {pid}; stop that run first")]
    StillRunning { id: String, pid: i64 },
    #[error("run {id}: stored data is damaged: {detail}")]
    Corrupt { id: String, detail: String },
    #[error("a counter does not fit the store: {0}")]
    Overflow(String),
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{path}: not an iofleet results store ({detail})")]
    NotAStore { path: PathBuf, detail: String },
    #[error("{path}: schema version {found}, this iofleet writes {supported}; open it once with `iofleet results list --db {path}` to upgrade it (or use the iofleet that wrote it)")]
    OtherVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("run {id} is already in the store with other contents (status {status}); delete it there first (`iofleet results delete {id}`) to import this copy")]
    Conflict { id: String, status: String },
}

/// The database path used when `--db` is not given: `$XDG_DATA_HOME/iofleet/results.db`,
/// else `~/.local/share/iofleet/results.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let xdg = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = match xdg {
        Some(p) => p,
        None => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .ok_or(StoreError::NoDefaultPath)?;
            home.join(".local").join("share")
        }
    };
    Ok(base.join("iofleet").join("results.db"))
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open the database at `path`, creating it (and its directory) when missing, and
    /// bring its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        Self::open_inner(path)
    }

    /// Open an existing database (for reading commands): a missing file is an error
    /// rather than a new empty store.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        Self::open_inner(path)
    }

    /// Open an existing database for reading only (`iofleet serve`): SQLite's read-only
    /// mode and `query_only`, so nothing this connection does can write, and no
    /// migration. A store of another schema version is refused with the command that
    /// upgrades it; a running run's recorder is never blocked (WAL readers do not lock).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.pragma_update(None, "query_only", true)
            .map_err(open_err)?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        let found = store.schema_version().map_err(|e| StoreError::NotAStore {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        if found > LATEST_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                supported: LATEST_VERSION,
            });
        }
        if found != LATEST_VERSION {
            return Err(StoreError::OtherVersion {
                path: path.to_path_buf(),
                found,
                supported: LATEST_VERSION,
            });
        }
        Ok(store)
    }

    /// Open (and create or migrate) the store, retrying while other processes hold it
    /// (several runs creating one new store at once), up to `WRITE_DEADLINE`.
    fn open_inner(path: &Path) -> Result<Store, StoreError> {
        let start = Instant::now();
        let mut attempt = 0;
        loop {
            match Self::open_once(path) {
                Err(e) if is_busy(&e) && start.elapsed() < WRITE_DEADLINE => {
                    backoff(attempt);
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    fn open_once(path: &Path) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // WAL: readers never block the recording run, and a killed writer loses at most
        // the transaction it had open. NORMAL sync is durable against process crashes.
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        schema::migrate(&mut conn, path)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// A private store in memory with the same schema: where a run keeps recording when
    /// its store cannot be written (`transfer` saves it to a file at the end).
    pub fn open_memory() -> Result<Store, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let path = PathBuf::from(":memory:");
        schema::migrate(&mut conn, &path)?;
        Ok(Store { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` in one IMMEDIATE transaction, committed when it returns `Ok`. IMMEDIATE
    /// takes the write lock at the start, waiting for it (SQLite's busy timeout), so a
    /// transaction never fails half-way upgrading a read lock, as a deferred one can
    /// when another process wrote meanwhile; a lock still held after the timeout is
    /// retried with growing pauses until `WRITE_DEADLINE`.
    pub(crate) fn write<T>(
        &mut self,
        mut f: impl FnMut(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let start = Instant::now();
        let mut attempt = 0;
        loop {
            let outcome = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(StoreError::from)
                .and_then(|tx| {
                    let v = f(&tx)?;
                    tx.commit()?;
                    Ok(v)
                });
            match outcome {
                Err(e) if is_busy(&e) && start.elapsed() < WRITE_DEADLINE => {
                    backoff(attempt);
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }
}

/// The store was locked by another connection (SQLITE_BUSY or SQLITE_LOCKED, any
/// extended code): worth waiting for, unlike every other error.
pub fn is_busy(e: &StoreError) -> bool {
    let sql = match e {
        StoreError::Sql(s) | StoreError::Open { source: s, .. } => s,
        _ => return false,
    };
    matches!(
        sql.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Pause before retry `attempt`: 5 ms doubling to 320 ms, with jitter so processes that
/// collided do not collide again.
fn backoff(attempt: u32) {
    let base = 5u64 << attempt.min(6);
    let jitter = rand::random::<u64>() % (base / 2 + 1);
    std::thread::sleep(Duration::from_millis(base + jitter));
}
