//! CLI conventions: shell completions and man pages generated from the one clap
//! definition.

mod common;

use common::*;

#[test]
fn completions_for_bash_zsh_and_fish() {
    let d = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let o = run_in(d.path(), &["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        assert!(script.len() > 200, "{shell}: {script}");
        assert!(script.contains("run"), "{shell}: no `run` in the script");
        assert!(
            script.contains("dry-run"),
            "{shell}: no --dry-run in the script"
        );
    }
    // The bash script is valid bash.
    let script = d.path().join("iofleet.bash");
    std::fs::write(&script, run_in(d.path(), &["completions", "bash"]).stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // An unknown shell is a clap error naming the choices, exit 2.
    let o = run_in(d.path(), &["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bash"), "{}", stderr(&o));
}

#[test]
fn man_pages_for_iofleet_and_its_subcommands() {
    let d = tempfile::tempdir().unwrap();
    let o = run_in(d.path(), &["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH iofleet 1"), "{page}");
    assert!(page.contains("run"), "{page}");

    let o = run_in(d.path(), &["man", "run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH iofleet-run 1"), "{page}");
    assert!(page.contains("dry\\-run"), "{page}");

    let o = run_in(d.path(), &["man", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("man nope"), "{}", stderr(&o));
    assert!(stderr(&o).contains("run"), "{}", stderr(&o));
}
