//! A run refused before any I/O leaves nothing behind: a target directory that did not
//! exist is not created when the free-space check refuses the run (exit 2, the message
//! names --disk-size and --target).

mod common;

use common::*;

#[test]
fn a_refused_free_space_check_leaves_no_directory() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(
        d.path(),
        &[
            "run",
            "easy-run-4k70r",
            "--target",
            "new/data",
            "--disk-size",
            "1000t",
            "--duration",
            "1s",
            "--no-save",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("not enough free space in new/data"), "{err}");
    assert!(
        err.contains("--disk-size") && err.contains("--target"),
        "{err}"
    );
    assert!(
        !d.path().join("new").exists(),
        "the refused run left its target directory behind"
    );
}
