//! Versioned schema migrations. The database's `PRAGMA user_version` is the number of
//! steps of `MIGRATIONS` already applied; opening a store applies the missing ones in
//! order, each in its own transaction together with the version bump, so a store is
//! never left half-migrated. Steps are only ever appended: an applied step is never
//! edited, because databases in the field already carry it.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Schema steps; step `i` takes a database from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, labels, intervals and per-worker per-stream samples.
    "
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        profile     TEXT NOT NULL,
        engine      TEXT NOT NULL,
        started_at  TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted')),
        info        TEXT NOT NULL,
        environment TEXT NOT NULL,
        result      TEXT
    );
    CREATE TABLE labels (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE intervals (
        run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx        INTEGER NOT NULL,
        t_s        REAL NOT NULL,
        duration_s REAL NOT NULL,
        warmup     INTEGER NOT NULL,
        ios        INTEGER NOT NULL,
        bytes      INTEGER NOT NULL,
        errors     INTEGER NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE samples (
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx                 INTEGER NOT NULL,
        worker              INTEGER NOT NULL,
        stream              INTEGER NOT NULL,
        read_ios            INTEGER NOT NULL,
        read_bytes          INTEGER NOT NULL,
        read_errors         INTEGER NOT NULL,
        read_lat_sum_ns     BLOB NOT NULL,
        read_lat_sq_sum_ns2 BLOB NOT NULL,
        read_hist           BLOB,
        write_ios           INTEGER NOT NULL,
        write_bytes         INTEGER NOT NULL,
        write_errors        INTEGER NOT NULL,
        write_lat_sum_ns    BLOB NOT NULL,
        write_lat_sq_sum_ns2 BLOB NOT NULL,
        write_hist          BLOB,
        PRIMARY KEY (run_id, idx, worker, stream)
    );
    ",
    // 2: where each worker ran, hosts lost per interval (fleets across hosts), which
    // process records a run (to tell a live recording from one whose process died),
    // and a label lookup index.
    "
    CREATE TABLE run_workers (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        worker INTEGER NOT NULL,
        host   TEXT NOT NULL,
        PRIMARY KEY (run_id, worker)
    );
    ALTER TABLE intervals ADD COLUMN hosts_lost INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN recorder_host TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN recorder_pid INTEGER;
    ALTER TABLE runs ADD COLUMN recorder_start_ticks INTEGER;
    CREATE INDEX labels_by_key_value ON labels(key, value);
    ",
    // 3: what each host spent per interval (CPU, memory, network, devices), as raw
    // amounts (`HostUsage` JSON), for the report's per-host figures over time.
    "
    CREATE TABLE host_usage (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx    INTEGER NOT NULL,
        host   TEXT NOT NULL,
        usage  TEXT NOT NULL,
        PRIMARY KEY (run_id, idx, host)
    );
    ",
    // 4: samples per (worker, disk) instead of per worker, for per-disk figures; a
    // worker's sample is the sum of its disks'. Runs recorded before keep theirs in
    // `samples` (no per-disk figures).
    "
    CREATE TABLE disk_samples (
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx                 INTEGER NOT NULL,
        worker              INTEGER NOT NULL,
        disk                INTEGER NOT NULL,
        stream              INTEGER NOT NULL,
        read_ios            INTEGER NOT NULL,
        read_bytes          INTEGER NOT NULL,
        read_errors         INTEGER NOT NULL,
        read_lat_sum_ns     BLOB NOT NULL,
        read_lat_sq_sum_ns2 BLOB NOT NULL,
        read_hist           BLOB,
        write_ios           INTEGER NOT NULL,
        write_bytes         INTEGER NOT NULL,
        write_errors        INTEGER NOT NULL,
        write_lat_sum_ns    BLOB NOT NULL,
        write_lat_sq_sum_ns2 BLOB NOT NULL,
        write_hist          BLOB,
        PRIMARY KEY (run_id, idx, worker, disk, stream)
    );
    ",
    // 5: a relayed run (`--relay-fanout`). The workers below relays have no per-disk
    // samples per interval: per interval and group (index in the run's groups) the
    // relays' merged sample, and per interval and host below a relay its brief
    // (`HostBrief` JSON); at the end, the relays' per-(worker, disk) totals over the
    // measured intervals (`batch`: the n-th relay to send them), and per group what
    // relays lost before sending their totals had measured.
    "
    CREATE TABLE relayed_samples (
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx                 INTEGER NOT NULL,
        grp                 INTEGER NOT NULL,
        stream              INTEGER NOT NULL,
        read_ios            INTEGER NOT NULL,
        read_bytes          INTEGER NOT NULL,
        read_errors         INTEGER NOT NULL,
        read_lat_sum_ns     BLOB NOT NULL,
        read_lat_sq_sum_ns2 BLOB NOT NULL,
        read_hist           BLOB,
        write_ios           INTEGER NOT NULL,
        write_bytes         INTEGER NOT NULL,
        write_errors        INTEGER NOT NULL,
        write_lat_sum_ns    BLOB NOT NULL,
        write_lat_sq_sum_ns2 BLOB NOT NULL,
        write_hist          BLOB,
        PRIMARY KEY (run_id, idx, grp, stream)
    );
    CREATE TABLE relayed_hosts (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx    INTEGER NOT NULL,
        host   TEXT NOT NULL,
        brief  TEXT NOT NULL,
        PRIMARY KEY (run_id, idx, host)
    );
    CREATE TABLE relay_totals (
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        batch               INTEGER NOT NULL,
        worker              INTEGER NOT NULL,
        disk                INTEGER NOT NULL,
        stream              INTEGER NOT NULL,
        read_ios            INTEGER NOT NULL,
        read_bytes          INTEGER NOT NULL,
        read_errors         INTEGER NOT NULL,
        read_lat_sum_ns     BLOB NOT NULL,
        read_lat_sq_sum_ns2 BLOB NOT NULL,
        read_hist           BLOB,
        write_ios           INTEGER NOT NULL,
        write_bytes         INTEGER NOT NULL,
        write_errors        INTEGER NOT NULL,
        write_lat_sum_ns    BLOB NOT NULL,
        write_lat_sq_sum_ns2 BLOB NOT NULL,
        write_hist          BLOB,
        PRIMARY KEY (run_id, batch, worker, disk, stream)
    );
    CREATE TABLE unsent_groups (
        run_id              TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        grp                 INTEGER NOT NULL,
        stream              INTEGER NOT NULL,
        read_ios            INTEGER NOT NULL,
        read_bytes          INTEGER NOT NULL,
        read_errors         INTEGER NOT NULL,
        read_lat_sum_ns     BLOB NOT NULL,
        read_lat_sq_sum_ns2 BLOB NOT NULL,
        read_hist           BLOB,
        write_ios           INTEGER NOT NULL,
        write_bytes         INTEGER NOT NULL,
        write_errors        INTEGER NOT NULL,
        write_lat_sum_ns    BLOB NOT NULL,
        write_lat_sq_sum_ns2 BLOB NOT NULL,
        write_hist          BLOB,
        PRIMARY KEY (run_id, grp, stream)
    );
    ",
];

/// The schema version this build writes.
pub const LATEST_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    loop {
        // IMMEDIATE: two processes opening a new store at once migrate one after the
        // other; the second sees the first one's version and has nothing left to do.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found > LATEST_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
                supported: LATEST_VERSION,
            });
        }
        if found == LATEST_VERSION {
            return Ok(());
        }
        tx.execute_batch(MIGRATIONS[found as usize])?;
        tx.pragma_update(None, "user_version", found + 1)?;
        tx.commit()?;
    }
}
