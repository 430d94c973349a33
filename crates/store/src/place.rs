//! Where a store lives on disk, apart from what it holds: a new store and the
//! directories iofleet makes for it are private (file 0600, directories 0700) while an
//! existing one keeps its mode and group; whether the filesystem holding it is read-only
//! (a store there is opened read-only, or immutable); the cause of a failure worded with
//! the path (a directory, a full or read-only filesystem, a permission) instead of
//! SQLite's "disk I/O error"; and the private files a run is saved to when its store
//! cannot take it (`spill`). Nothing here reads or writes the database's contents.
//!
//! SQLite creates a store's `-wal` and `-shm` files with the main file's permissions
//! (and, run as root, its owner), so they follow the main file whatever the umask.

use std::fs::{DirBuilder, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;
use rustix::fs::{Access, StatVfsMountFlags};

use crate::StoreError;

/// Mode of a store iofleet creates.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of a directory iofleet creates for a store or for the runs it saves aside.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Below this many free bytes, a write that failed is put down to a full filesystem.
const NEARLY_FULL: u64 = 1 << 20;

/// The path names a store file that can be opened, or the reason it cannot.
pub(crate) fn check_file(path: &Path) -> Result<(), StoreError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(unusable(path, is_directory(path))),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(StoreError::Missing {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(unusable(path, format!("cannot reach it: {e}"))),
    }
}

fn is_directory(path: &Path) -> String {
    format!(
        "it is a directory, and the store is a file in it (e.g. --db {})",
        path.join("results.db").display()
    )
}

fn unusable(path: &Path, why: String) -> StoreError {
    StoreError::Unusable {
        path: path.to_path_buf(),
        why,
    }
}

/// Create the store's directory (0700 for every level iofleet makes; existing ones are
/// left as they are) and the store file itself (0600, `O_EXCL`: never through a link,
/// never over another process's new store) when missing.
pub(crate) fn create_private(path: &Path) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|source| StoreError::CreateDir {
                path: path.to_path_buf(),
                source,
            })?;
    }
    if path.is_dir() {
        return Err(unusable(path, is_directory(path)));
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
    {
        // Another process made it first, or it was there: it keeps its mode and group.
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(explain_io(path, e)),
    }
}

/// The filesystem holding `path` is mounted read-only (a snapshot, an archive share, a
/// read-only bind mount).
pub(crate) fn read_only_fs(path: &Path) -> bool {
    rustix::fs::statvfs(path).is_ok_and(|s| s.f_flag.contains(StatVfsMountFlags::RDONLY))
}

/// This process may write `path`.
pub(crate) fn writable(path: &Path) -> bool {
    rustix::fs::access(path, Access::WRITE_OK).is_ok()
}

/// Bytes free to this process on the filesystem holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// `path` with `suffix` appended to its file name (`results.db-shm`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Bytes as people read them: 0 B, 12 KiB, 3.4 MiB, 27.5 GiB.
fn human(b: u64) -> String {
    match b {
        0..1024 => format!("{b} B"),
        1024..1048576 => format!("{} KiB", b / 1024),
        1048576..1073741824 => format!("{:.1} MiB", b as f64 / 1048576.0),
        _ => format!("{:.1} GiB", b as f64 / 1073741824.0),
    }
}

/// What went wrong with the store at `path`, said with its cause when the cause is the
/// place (a full or read-only filesystem, a directory, a permission), or None when
/// SQLite's own message is as good as it gets.
pub(crate) fn cause(path: &Path, e: &rusqlite::Error) -> Option<String> {
    let code = e.sqlite_error_code()?;
    if path.is_dir() {
        return Some(is_directory(path));
    }
    let dir = dir_of(path);
    let full = || {
        free_bytes(&dir).map(|f| {
            format!(
                "the filesystem holding it is full ({} free): free some space there, or pass --db with a store elsewhere",
                human(f)
            )
        })
    };
    match code {
        ErrorCode::DiskFull => full(),
        ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::SystemIoFailure
            if read_only_fs(&dir) =>
        {
            Some("the filesystem holding it is read-only: it can be listed, shown, exported, compared, reported and served, but not written (runs, import, delete need a store on a writable filesystem)".into())
        }
        ErrorCode::SystemIoFailure if free_bytes(&dir).is_some_and(|f| f < NEARLY_FULL) => full(),
        // A reader of a WAL store needs its -shm file, made beside it when missing.
        ErrorCode::ReadOnly | ErrorCode::CannotOpen
            if !writable(&dir) && !with_suffix(path, "-shm").exists() =>
        {
            Some(format!(
                "SQLite keeps two files beside the store ({0}-wal, {0}-shm) and cannot create them: {1} is not writable by this user (see docs/store.md on sharing a store)",
                path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                dir.display()
            ))
        }
        ErrorCode::ReadOnly if path.exists() && !writable(path) => Some(format!(
            "{} is not writable by this user (its mode is {:o}): ask its owner, or see docs/store.md on sharing a store",
            path.display(),
            std::fs::metadata(path).map_or(0, |m| m.mode() & 0o7777)
        )),
        ErrorCode::CannotOpen if path.exists() && std::fs::File::open(path).is_err() => {
            Some(format!(
                "cannot read it: {}",
                std::fs::File::open(path).err().map_or_else(String::new, |e| e.to_string())
            ))
        }
        _ => None,
    }
}

/// A failure to create or open the store file itself, with its cause.
fn explain_io(path: &Path, e: std::io::Error) -> StoreError {
    let why = match e.raw_os_error() {
        Some(c) if c == rustix::io::Errno::NOSPC.raw_os_error() => format!(
            "the filesystem holding it is full ({} free): free some space there, or pass --db with a store elsewhere",
            human(free_bytes(&dir_of(path)).unwrap_or(0))
        ),
        Some(c) if c == rustix::io::Errno::ROFS.raw_os_error() => {
            "there is no store there yet, and the filesystem is read-only".into()
        }
        _ => format!("cannot create it: {e}"),
    };
    unusable(path, why)
}

/// `path` as an SQLite URI that opens it immutable: read without locks or the `-shm`
/// file, which a read-only filesystem cannot hold (sound only where nothing can write it).
pub(crate) fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// A directory that only this user can enter: made here (0700), or found here and
/// already so (a real directory, not a link, owned by this user, no access for others).
fn private_dir(dir: &Path) -> Result<bool, String> {
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => return Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let me = rustix::process::geteuid().as_raw();
    if !m.file_type().is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
        return Err(format!(
            "{}: exists and is not a private directory of this user (a directory, mode 0700 or stricter, not a link)",
            dir.display()
        ));
    }
    Ok(false)
}

/// A new empty file only this user can read (0600), made with `O_EXCL` so a file or link
/// already at `path` is never followed or reused.
pub(crate) fn private_file(path: &Path) -> Result<(), std::io::Error> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
        .map(drop)
}

/// Where a run kept in memory is saved when its store (`store`) cannot take it, in
/// order: a private directory `STORE.unsaved` beside the store, the same in the working
/// directory, then a new private directory of random name in the temporary directory
/// (never a name known beforehand there).
pub(crate) fn spill_dirs(store: &Path) -> Vec<PathBuf> {
    let name = format!(
        "{}.unsaved",
        store
            .file_name()
            .map_or("results.db".into(), |n| n.to_string_lossy())
    );
    let mut dirs = vec![dir_of(store).join(&name)];
    if let Ok(cwd) = std::env::current_dir() {
        let here = cwd.join(&name);
        if !dirs.contains(&here) {
            dirs.push(here);
        }
    }
    dirs.push(std::env::temp_dir().join(format!("iofleet-unsaved-{:016x}", rand::random::<u64>())));
    dirs
}

/// Save with `save` into the first of `dirs` that takes it: the directory made private
/// or found private (`private_dir`), the file `ID.db` in it made beforehand with
/// `private_file`, then written by `save`. Returns the file, or what each place said.
pub(crate) fn spill(
    dirs: &[PathBuf],
    id: &str,
    save: impl Fn(&Path) -> Result<(), StoreError>,
) -> Result<PathBuf, Vec<String>> {
    let mut tried = Vec::new();
    for dir in dirs {
        match save_in(dir, id, &save) {
            Ok(file) => return Ok(file),
            Err(e) => tried.push(e),
        }
    }
    Err(tried)
}

fn save_in(
    dir: &Path,
    id: &str,
    save: &impl Fn(&Path) -> Result<(), StoreError>,
) -> Result<PathBuf, String> {
    let made = private_dir(dir)?;
    let file = dir.join(format!("{id}.db"));
    let outcome = private_file(&file)
        .map_err(|e| format!("{}: {e}", file.display()))
        .and_then(|()| {
            save(&file).map_err(|e| {
                // A copy cut short (the disk that failed the store) is no copy.
                let _ = std::fs::remove_file(&file);
                format!("{}: {e}", file.display())
            })
        });
    if outcome.is_err() && made {
        let _ = std::fs::remove_dir(dir);
    }
    outcome.map(|()| file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_store_and_its_directories_are_private_an_existing_one_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("a/b/results.db");
        create_private(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&d.path().join("a")), 0o700);
        assert_eq!(mode(&d.path().join("a/b")), 0o700);
        let shared = d.path().join("shared.db");
        std::fs::write(&shared, "").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_private(&shared).unwrap();
        assert_eq!(mode(&shared), 0o640);
        let e = create_private(d.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn spill_files_are_private_and_never_follow_a_link() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("store")).unwrap();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let write =
            |p: &Path| std::fs::write(p, "copy").map_err(|e| StoreError::Overflow(e.to_string()));
        // A link where the directory beside the store would be: not followed.
        std::os::unix::fs::symlink(&elsewhere, d.path().join("store/results.db.unsaved")).unwrap();
        let dirs = spill_dirs(&d.path().join("store/results.db"));
        assert_eq!(dirs[0], d.path().join("store/results.db.unsaved"));
        let dirs = [dirs[0].clone(), d.path().join("second")];
        let file = spill(&dirs, "0123abcd", write).unwrap();
        assert_eq!(file, d.path().join("second/0123abcd.db"));
        assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "copy");

        // In a private directory that exists, a link at the file's name is not
        // followed: O_EXCL refuses it.
        let mine = d.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
        let target = d.path().join("target-of-link");
        std::os::unix::fs::symlink(&target, mine.join("0123abcd.db")).unwrap();
        let e = save_in(&mine, "0123abcd", &write).unwrap_err();
        assert!(e.contains("exists"), "{e}");
        assert!(!target.exists());
        // A directory open to others is not used.
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = save_in(&open, "0123abcd", &write).unwrap_err();
        assert!(e.contains("not a private directory"), "{e}");
        // A failed copy leaves no file, and no directory it made.
        let fail = |_: &Path| Err(StoreError::Overflow("disk full".into()));
        let fresh = d.path().join("fresh");
        save_in(&fresh, "0123abcd", &fail).unwrap_err();
        assert!(!fresh.exists());
    }

    #[test]
    fn spill_places_end_with_a_new_name_in_the_temporary_directory() {
        let store = Path::new("/srv/stores/team.db");
        let a = spill_dirs(store);
        assert_eq!(a[0], Path::new("/srv/stores/team.db.unsaved"));
        assert_eq!(
            a[1],
            std::env::current_dir().unwrap().join("team.db.unsaved")
        );
        let b = spill_dirs(store);
        let (ta, tb) = (a.last().unwrap(), b.last().unwrap());
        assert!(ta.starts_with(std::env::temp_dir()), "{}", ta.display());
        assert_ne!(ta, tb, "a name nobody could place a link at beforehand");
    }

    #[test]
    fn immutable_uris_escape_what_a_uri_would_read() {
        assert_eq!(
            immutable_uri(Path::new("/a b/r?x#1%.db")),
            "file:/a%20b/r%3Fx%231%25.db?immutable=1"
        );
    }
}
