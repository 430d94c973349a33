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
//! when its store failed, `results import`). A new store is private (0600, `place`); a
//! store on a read-only filesystem is opened read-only, or immutable, so reading
//! commands work on a snapshot or an archive. This crate knows nothing of engines, the
//! fleet or output formats; `docs/store.md` describes the schema.

#![forbid(unsafe_code)]

mod env;
mod place;
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
pub use write::{NewRun, Relayed};

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
    /// The place cannot hold or give the store: a directory, a full or read-only
    /// filesystem, a permission (`place::cause`).
    #[error("--db {path}: {why}")]
    Unusable { path: PathBuf, why: String },
    /// A write failed for a cause outside the database: a full or read-only
    /// filesystem, a permission.
    #[error("--db {path}: {why}")]
    WriteFailed { path: PathBuf, why: String },
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
    #[error("{path}: schema version {found}, this iofleet reads {supported}, and the store is on a read-only filesystem where it cannot be upgraded: copy it to a writable place and open it there once (`iofleet results list --db COPY`), or use the iofleet that wrote it")]
    OtherVersionReadOnly {
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
    /// Opened immutable beside a `-wal` file it cannot read (`Store::read_note`).
    wal_unread: bool,
}

/// How `Store::open_read_only` opens the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadMode {
    /// SQLite's read-only mode: the `-shm` file is used (or created) as by any reader.
    ReadOnly,
    /// No locks and no `-shm` (a read-only filesystem, where nothing can write it).
    Immutable,
}

/// A failed write to the store file at `path`, with its cause when the cause is the
/// place.
pub(crate) fn explain_write_at(path: &Path, e: StoreError) -> StoreError {
    match explain(path, e) {
        StoreError::Unusable { path, why } => StoreError::WriteFailed { path, why },
        e => e,
    }
}

/// The path of a store in memory (`Store::open_memory`).
const MEMORY: &str = ":memory:";

/// SQLite failed to read the file, as opposed to reading it and finding no database
/// (or a damaged one) there.
fn read_failure(s: &rusqlite::Error) -> bool {
    !matches!(
        s.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

/// `e` with its cause said when the cause is the place (`place::cause`).
fn explain(path: &Path, e: StoreError) -> StoreError {
    let why = match &e {
        StoreError::Sql(s) | StoreError::Open { source: s, .. } => place::cause(path, s),
        _ => None,
    };
    match why {
        Some(why) => StoreError::Unusable {
            path: path.to_path_buf(),
            why,
        },
        None => e,
    }
}

impl Store {
    /// Open the database at `path`, creating it (and its directory) when missing, and
    /// bring its schema up to date. A new store is created private (0600, and 0700 for
    /// each directory made for it); an existing one keeps its mode and group (`place`).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        place::create_private(path)?;
        Self::open_inner(path).map_err(|e| explain(path, e))
    }

    /// Open an existing database (for reading commands): a missing file is an error
    /// rather than a new empty store. A store this user cannot write, or on a
    /// read-only filesystem, is opened read-only (`open_read_only`): it reads as any
    /// other, and a write says why it cannot be made.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        place::check_file(path)?;
        if !place::writable(path) || place::read_only_fs(path) {
            return Self::open_read_only(path);
        }
        match Self::open_inner(path) {
            Ok(s) => Ok(s),
            Err(e) => {
                let sql = match &e {
                    StoreError::Sql(s) | StoreError::Open { source: s, .. } => {
                        s.sqlite_error_code()
                    }
                    _ => None,
                };
                // The store may be read where it cannot be written (its directory).
                if matches!(sql, Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)) {
                    if let Ok(s) = Self::open_read_only(path) {
                        return Ok(s);
                    }
                }
                Err(explain(path, e))
            }
        }
    }

    /// Open an existing database for reading only (`iofleet serve`, and reading commands
    /// on a store they cannot write): SQLite's read-only mode and `query_only`, so
    /// nothing this connection does can write, and no migration. On a read-only
    /// filesystem, where SQLite cannot make the `-shm` file a reader of a WAL store
    /// needs, the store is opened immutable (no locks, no `-shm`: sound there, since
    /// nothing can write it; a `-wal` file left beside it is then not read, and
    /// `read_note` says so). A store of another schema version is refused with the command
    /// that upgrades it; a running run's recorder is never blocked (WAL readers do not
    /// lock).
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        place::check_file(path)?;
        match Self::open_reading(path, ReadMode::ReadOnly) {
            Err(e) if Self::unreadable(&e) && place::read_only_fs(path) => {
                Self::open_reading(path, ReadMode::Immutable).map_err(|_| e)
            }
            r => r,
        }
        .map_err(|e| explain(path, e))
    }

    /// `e` is SQLite failing to read the file (not a verdict on what it holds).
    fn unreadable(e: &StoreError) -> bool {
        match e {
            StoreError::Sql(s) | StoreError::Open { source: s, .. } => read_failure(s),
            _ => false,
        }
    }

    fn open_reading(path: &Path, mode: ReadMode) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match mode {
            ReadMode::ReadOnly => Connection::open_with_flags(path, flags),
            ReadMode::Immutable => Connection::open_with_flags(
                place::immutable_uri(path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            ),
        }
        .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.pragma_update(None, "query_only", true)
            .map_err(open_err)?;
        let wal = place::with_suffix(path, "-wal");
        let store = Store {
            conn,
            path: path.to_path_buf(),
            wal_unread: mode == ReadMode::Immutable
                && std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0),
        };
        let found = store.schema_version().map_err(|e| match e {
            StoreError::Sql(s) if !read_failure(&s) => StoreError::NotAStore {
                path: path.to_path_buf(),
                detail: s.to_string(),
            },
            StoreError::Sql(s) => open_err(s),
            e => e,
        })?;
        if found > LATEST_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                supported: LATEST_VERSION,
            });
        }
        if found != LATEST_VERSION && place::read_only_fs(path) {
            return Err(StoreError::OtherVersionReadOnly {
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

    /// What a reader should know about how the store was opened: on a read-only
    /// filesystem, beside a `-wal` file it could not read (the writes it holds are not
    /// seen). None otherwise.
    pub fn read_note(&self) -> Option<String> {
        self.wal_unread.then(|| {
            format!(
                "{0} is on a read-only filesystem without its {0}-shm file, so its {0}-wal file cannot be read: runs or intervals committed only there are not shown (copy the three files to a writable place to read them all)",
                self.path.display()
            )
        })
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
            wal_unread: false,
        })
    }

    /// A private store in memory with the same schema: where a run keeps recording when
    /// its store cannot be written (`transfer` saves it to a file at the end).
    pub fn open_memory() -> Result<Store, StoreError> {
        let mut conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let path = PathBuf::from(MEMORY);
        schema::migrate(&mut conn, &path)?;
        Ok(Store {
            conn,
            path,
            wal_unread: false,
        })
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
                Err(e) => return Err(self.explain_write(e)),
                r => return r,
            }
        }
    }

    /// A failed write with its cause said when the cause is the place: a full or
    /// read-only filesystem, a store this user may not write.
    fn explain_write(&self, e: StoreError) -> StoreError {
        if self.path == Path::new(MEMORY) {
            // Memory does not fill a filesystem; a file attached to it is explained by
            // the caller that knows it (`push_run`).
            return e;
        }
        explain_write_at(&self.path, e)
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }
}

impl StoreError {
    /// The message without the `--db PATH: ` it starts with when the cause is the place,
    /// for a report that names the store itself.
    pub fn cause(&self) -> String {
        match self {
            StoreError::Unusable { why, .. } | StoreError::WriteFailed { why, .. } => why.clone(),
            e => e.to_string(),
        }
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
