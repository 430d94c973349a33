//! Ansible inventories through the CLI: a bad inventory is refused with exit 2 and a
//! message naming the file and line before any host is contacted, with either reader;
//! a good one runs its hosts as Ansible lists them (ranges expanded, a host in two
//! groups once). Host names that are empty or hold a control character are refused in
//! every format (INI, YAML, TOML), naming the key. Hosts use the `local` transport: no
//! sshd. (Worker pins past their bound: tests/bounds.rs.)

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

const READERS: [&str; 2] = ["auto", "native"];

fn run_with(dir: &Path, reader: &str, args: &[&str]) -> std::process::Output {
    iofleet()
        .current_dir(dir)
        .env("IOFLEET_INVENTORY_READER", reader)
        .args(args)
        .output()
        .expect("iofleet runs")
}

/// `run … --hosts FILE` must exit 2 with every needle in stderr, with each reader.
fn expect_refused(inventory: &str, needles: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("hosts.ini");
    std::fs::write(&inv, inventory).unwrap();
    let inv = inv.to_string_lossy().into_owned();
    for reader in READERS {
        let o = run_with(
            d.path(),
            reader,
            &[
                "run",
                "vsan-7030",
                "--engine",
                "null",
                "--hosts",
                &inv,
                "--no-save",
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "reader {reader}: {err}");
        assert!(!err.contains("panicked"), "reader {reader}: {err}");
        for n in needles.iter().chain([&inv.as_str()]) {
            assert!(
                err.contains(n),
                "reader {reader}: stderr lacks {n:?}:\n{err}"
            );
        }
        // Refused before any connection: nothing of the run was attempted.
        assert!(!err.contains("ssh"), "reader {reader}: {err}");
    }
}

#[test]
fn unclosed_section_header_names_file_and_line() {
    expect_refused("[nodes]\nn1\n[nodes\nn2\n", &["line 3", "[nodes"]);
}

#[test]
fn misspelt_iofleet_variable_names_file_line_and_variable() {
    expect_refused(
        "[nodes]\nn1\nn2 iofleet_wrkers=3\n",
        &[
            "line 3",
            "iofleet_wrkers",
            "unknown variable",
            "iofleet_workers",
        ],
    );
    expect_refused(
        "[nodes]\nn1\n[nodes:vars]\niofleet_workers=0\n",
        &["line 4", "iofleet_workers"],
    );
}

#[test]
fn empty_and_control_character_host_names_are_refused_in_ini() {
    // ansible-inventory refuses an empty name itself; the native reader names the line.
    expect_refused(
        "[g]\n'' ansible_user=root\n",
        &["line 2", "the host name \"\" is empty"],
    );
    // ansible-inventory accepts a bell in a name: iofleet does not.
    expect_refused(
        "[g]\n'n\x07x' iofleet_transport=local\n",
        &["host name \"n\\u{7}x\" contains a control character (\\u{7})"],
    );
    expect_refused(
        "[g]\nn1 ansible_host=''\n",
        &["line 2", "host 'n1': ansible_host: \"\" is empty"],
    );
}

#[test]
fn a_newline_in_a_yaml_or_toml_host_name_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let refused = |file: &str, text: &str, reader: &str, needle: &str| {
        let inv = d.path().join(file);
        std::fs::write(&inv, text).unwrap();
        let inv = inv.to_string_lossy().into_owned();
        let args = [
            "run",
            "vsan-7030",
            "--engine",
            "null",
            "--hosts",
            &inv,
            "--no-save",
        ];
        let o = run_with(d.path(), reader, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(needle), "{file}: {err}");
    };
    refused(
        "hosts.toml",
        "[[host]]\ndestination = \"\"\n",
        "auto",
        "host[0].destination: the host's address \"\" is empty",
    );
    refused(
        "names.toml",
        "[[host]]\ndestination = \"h1\"\nname = \"web\\nnode\"\n",
        "auto",
        "host[0].name: the host's name \"web\\nnode\" contains a control character (\\n)",
    );
    if need::need(
        "a_newline_in_a_yaml_or_toml_host_name_is_refused",
        &["ansible-inventory"],
    ) {
        refused(
            "hosts.yml",
            "all:\n  hosts:\n    \"web\\nnode\":\n      iofleet_transport: local\n",
            "ansible-inventory",
            "the inventory's host name \"web\\nnode\" contains a control character (\\n)",
        );
    }
}

#[test]
fn reader_choice_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("hosts.ini");
    std::fs::write(&inv, "n1\n").unwrap();
    let inv = inv.to_string_lossy().into_owned();
    let args = [
        "run",
        "vsan-7030",
        "--engine",
        "null",
        "--hosts",
        &inv,
        "--no-save",
    ];
    let o = run_with(d.path(), "ansible", &args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("IOFLEET_INVENTORY_READER=ansible"),
        "{}",
        stderr(&o)
    );
    // Forced to ansible-inventory where there is none: refused, not read natively.
    let o = iofleet()
        .current_dir(d.path())
        .env("IOFLEET_INVENTORY_READER", "ansible-inventory")
        .env("PATH", d.path())
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not on PATH"), "{}", stderr(&o));
}

#[test]
fn ranges_expand_and_a_host_in_two_groups_runs_once() {
    let d = tempfile::tempdir().unwrap();
    let inv = d.path().join("hosts.ini");
    std::fs::write(
        &inv,
        "[storage]\nnode[1:2]\n[fast]\nnode2 iofleet_workers=2\nspare[a:a]\n\
         [all:vars]\niofleet_transport=local\niofleet_target=data\n",
    )
    .unwrap();
    let inv = inv.to_string_lossy().into_owned();
    for reader in READERS {
        let o = run_with(
            d.path(),
            reader,
            &[
                "run",
                "vsan-7030",
                "--hosts",
                &inv,
                "--engine",
                "null",
                "--workers",
                "4",
                "--disks",
                "1",
                "--disk-size",
                "1m",
                "--warmup",
                "0s",
                "--duration",
                "1s",
                "--interval",
                "500ms",
                "--no-save",
                "--quiet",
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "reader {reader}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let hosts: Vec<(&str, u64)> = v["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["host"].as_str().unwrap(), h["workers"].as_u64().unwrap()))
            .collect();
        // Listing order: storage's hosts, then fast's new one; node2 pins 2 workers.
        assert_eq!(
            hosts,
            [("node1", 1), ("node2", 2), ("sparea", 1)],
            "reader {reader}"
        );
    }
}
