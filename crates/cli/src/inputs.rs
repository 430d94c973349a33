//! The files a command reads — profiles, fio job files and the files they include,
//! inventories and Kubernetes descriptions — are read once per command. The first reader
//! reads the file; every later one (a sweep's steps, a steady state's rounds, a fio job
//! file's phases, the dry run beside the run, the notices after it) gets the same text.
//! So every step of a command measures the same input even when the file changes under
//! it, and a file that can be read only once (a named pipe, a process substitution such
//! as `--hosts <(generate-inventory)`) serves the whole command. A read that failed
//! fails the same way for every later reader. One process is one command, so the texts
//! are kept for the process.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Each path as given, and what reading it gave: its text, or the error's kind and words.
type Texts = BTreeMap<PathBuf, Result<Arc<str>, (io::ErrorKind, String)>>;

fn texts() -> &'static Mutex<Texts> {
    static TEXTS: OnceLock<Mutex<Texts>> = OnceLock::new();
    TEXTS.get_or_init(Default::default)
}

/// The text of `path`, read at the command's first ask.
pub(crate) fn text(path: &Path) -> io::Result<String> {
    let mut all = texts().lock().unwrap_or_else(|p| p.into_inner());
    let got = all
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            std::fs::read_to_string(path)
                .map(Arc::from)
                .map_err(|e| (e.kind(), e.to_string()))
        })
        .clone();
    got.map(|t| t.to_string())
        .map_err(|(kind, words)| io::Error::new(kind, words))
}

/// [`text`] for readers that name their file as a string.
pub(crate) fn text_of(path: &str) -> io::Result<String> {
    text(Path::new(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_once_and_its_first_text_serves_every_reader() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("profile.toml");
        std::fs::write(&p, "first").unwrap();
        assert_eq!(text(&p).unwrap(), "first");
        std::fs::write(&p, "changed").unwrap();
        assert_eq!(text(&p).unwrap(), "first");
        // A failed read fails the same way again, even once the file exists.
        let missing = d.path().join("missing.toml");
        let e = text(&missing).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        std::fs::write(&missing, "late").unwrap();
        assert_eq!(text(&missing).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
