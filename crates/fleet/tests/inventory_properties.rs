//! Property tests of the two inventory formats iofleet reads itself (TOML and Ansible
//! INI, through `inventory::parse_text`, the path `--hosts FILE` takes minus the file):
//! text assembled from each grammar's pieces never panics and is either refused naming
//! the flag (and, for INI, a line of the text) or read into distinct hosts whose workers
//! place as pinned; and an inventory generated from structured values, rendered as text,
//! reads back as the hosts it describes. The fuzz targets in `fuzz/` go further in time
//! (bench/README.md); these run in the suite with a modest case count.

use std::path::Path;

use iofleet_fleet::host::TargetArg;
use iofleet_fleet::inventory::{
    parse_text, place, HostSpec, InventoryError, Reach, Role, TextFormat,
};
use proptest::prelude::*;
use proptest::sample::select;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const FILE: &str = "inv";

/// Refused naming `--hosts`, at a line of the text when a line is given; or read into
/// distinct hosts whose pins are kept when workers are placed.
fn check(text: &str, format: TextFormat) {
    match parse_text(Path::new(FILE), text, format) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("--hosts inv"), "{msg}");
            let InventoryError::File { line, .. } = &e else {
                panic!("not a file error: {msg}");
            };
            if let Some(l) = line {
                assert!((1..=text.split('\n').count()).contains(l), "{msg}\n{text}");
            }
        }
        Ok(hosts) => {
            assert!(!hosts.is_empty());
            for (i, h) in hosts.iter().enumerate() {
                assert!(!hosts[..i].iter().any(|o| o.name == h.name), "{hosts:?}");
            }
            let pinned: u64 = hosts.iter().filter_map(|h| h.workers).map(u64::from).sum();
            if let Ok(placed) = place(&hosts, 1000) {
                for (h, (_, n)) in hosts.iter().zip(placed) {
                    if let Some(w) = h.workers {
                        assert_eq!(n, w, "{h:?}");
                    }
                    if h.role == Role::Observer {
                        assert_eq!(n, 0, "{h:?}");
                    }
                }
            } else {
                assert!(pinned > 1000, "placement refused {pinned} pins of 1000");
            }
        }
    }
}

// ---- TOML -----------------------------------------------------------------------------

fn toml_line() -> impl Strategy<Value = String> {
    let keys = vec![
        "destination",
        "name",
        "target",
        "workers",
        "labels",
        "iofleet_path",
        "transport",
        "ssh_options",
        "role",
        "options",
        "colour",
    ];
    let values = vec![
        "\"n1\"",
        "\"n2\"",
        "\"\"",
        "\"/data\"",
        "\"/dev/sdb\"",
        "[\"/d1\", \"/d2\"]",
        "[\"/dev/a\"]",
        "[]",
        "0",
        "1",
        "3",
        "-1",
        "65536",
        "\"local\"",
        "\"ssh\"",
        "\"kubectl\"",
        "\"observer\"",
        "\"workers\"",
        "{ rack = \"r1\" }",
        "[\"-p\", \"22\"]",
        "true",
        "1.5",
    ];
    prop_oneof![
        2 => select(vec!["[[host]]", "[defaults]", "[ssh]", "[host]", "[[host]"])
            .prop_map(str::to_string),
        6 => (select(keys), select(values)).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => select(vec!["", "# c", "= 1", "x ="]).prop_map(str::to_string),
    ]
}

#[derive(Debug, Clone)]
struct GenHost {
    name: Option<String>,
    workers: Option<u32>,
    target: Option<Vec<String>>,
    local: bool,
    observer: bool,
}

fn gen_host() -> impl Strategy<Value = GenHost> {
    (
        proptest::option::of("[a-z][a-z0-9-]{0,8}"),
        proptest::option::of(1u32..=64),
        proptest::option::of(proptest::collection::vec(
            select(vec!["/data/a", "/data/b", "/dev/sdb", "/dev/nvme0n1"]).prop_map(str::to_string),
            1..=3,
        )),
        any::<bool>(),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(name, workers, target, local, observer)| GenHost {
            name,
            workers: workers.filter(|_| !observer),
            target,
            local,
            observer,
        })
}

/// The target an inventory's list of paths names.
fn target_of(list: &[String]) -> TargetArg {
    if list.len() > 1 && list.iter().all(|p| !p.starts_with("/dev/")) {
        TargetArg::Dirs(list.to_vec())
    } else {
        TargetArg::Devices(list.to_vec())
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn toml_inventory_text_is_refused_naming_the_flag_or_read_into_distinct_hosts(
        lines in proptest::collection::vec(toml_line(), 0..24),
    ) {
        check(&lines.join("\n"), TextFormat::Toml);
    }

    /// Generated hosts, written as a TOML inventory with defaults, read back as they are.
    #[test]
    fn a_generated_toml_inventory_reads_as_the_hosts_it_describes(
        hosts in proptest::collection::vec(gen_host(), 1..=6),
        default_workers in proptest::option::of(1u32..=8),
    ) {
        prop_assume!(!hosts.iter().all(|h| h.observer));
        let mut text = "[ssh]\noptions = [\"-F\", \"cfg\"]\n[defaults]\ntarget = \"/var/tmp/x\"\n"
            .to_string();
        if let Some(w) = default_workers {
            text.push_str(&format!("workers = {w}\n"));
        }
        for (i, h) in hosts.iter().enumerate() {
            text.push_str(&format!("[[host]]\ndestination = \"root@10.0.0.{i}\"\n"));
            if let Some(n) = &h.name {
                // Unique: a name of its own, suffixed with the host's index.
                text.push_str(&format!("name = \"{n}-{i}\"\n"));
            }
            if let Some(w) = h.workers {
                text.push_str(&format!("workers = {w}\n"));
            }
            if let Some(t) = &h.target {
                text.push_str(&format!("target = {t:?}\n"));
            }
            if h.local {
                text.push_str("transport = \"local\"\n");
            }
            if h.observer {
                text.push_str("role = \"observer\"\n");
            }
        }
        let read = parse_text(Path::new(FILE), &text, TextFormat::Toml)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        prop_assert_eq!(read.len(), hosts.len());
        for (i, (r, h)) in read.iter().zip(&hosts).enumerate() {
            let destination = format!("root@10.0.0.{i}");
            let name = h.name.as_ref().map_or(destination.clone(), |n| format!("{n}-{i}"));
            let target = match (&h.target, h.observer) {
                (Some(t), _) => target_of(t),
                (None, true) => TargetArg::Devices(vec![]),
                (None, false) => TargetArg::Dir("/var/tmp/x".into()),
            };
            let workers = if h.observer { None } else { h.workers.or(default_workers) };
            let want = HostSpec {
                name,
                destination,
                target,
                workers,
                labels: Default::default(),
                iofleet_path: None,
                reach: if h.local {
                    Reach::Local
                } else {
                    Reach::Ssh {
                        options: vec!["-F".into(), "cfg".into()],
                    }
                },
                role: if h.observer { Role::Observer } else { Role::Workers },
                observe: Vec::new(),
                scrape: None,
            };
            prop_assert_eq!(r, &want);
        }
    }
}

// ---- Ansible INI ----------------------------------------------------------------------

fn ini_line() -> impl Strategy<Value = String> {
    let vars = vec![
        "iofleet_workers=2",
        "iofleet_workers=0",
        "iofleet_workers=99999999999",
        "iofleet_target=/data",
        "iofleet_target=\"['/dev/a', '/dev/b']\"",
        "iofleet_transport=local",
        "iofleet_transport=kubectl",
        "iofleet_role=observer",
        "iofleet_wrkers=1",
        "ansible_host=10.0.0.1",
        "ansible_user=root",
        "ansible_port=2222",
        "ansible_port=70000",
        "ansible_ssh_host=x",
        "ansible_host=\"{{ x }}\"",
        "ansible_group_priority=3",
        "x=[1, (2, 3)]",
        "y='a''b'",
        "z=\"un",
        "v={'k': None}",
    ];
    let hosts = vec![
        "n1",
        "n2",
        "n[1:3]",
        "n[01:10:3]",
        "n[a:c]",
        "n[3:1]",
        "n[1:]",
        "h:2222",
        "h:x",
        "[",
        "'q u'",
        "n1 # c",
    ];
    prop_oneof![
        2 => select(vec![
            "[g]", "[g:vars]", "[g:children]", "[all:vars]", "[h]", "[g", "[:vars]", "[g:x]",
        ])
        .prop_map(str::to_string),
        4 => (select(hosts), proptest::collection::vec(select(vars.clone()), 0..3))
            .prop_map(|(h, v)| format!("{h} {}", v.join(" "))),
        2 => select(vars).prop_map(str::to_string),
        1 => select(vec!["", "; c", "# c", "g", "=1"]).prop_map(str::to_string),
    ]
}

#[derive(Debug, Clone)]
struct GenIniHost {
    user: Option<&'static str>,
    port: Option<u16>,
    workers: Option<u32>,
    local: bool,
}

fn gen_ini_host() -> impl Strategy<Value = GenIniHost> {
    (
        proptest::option::of(select(vec!["root", "bench", "ops"])),
        proptest::option::of(1u16..=65535),
        proptest::option::of(1u32..=64),
        any::<bool>(),
    )
        .prop_map(|(user, port, workers, local)| GenIniHost {
            user,
            port,
            workers,
            local,
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn ini_inventory_text_is_refused_at_a_line_or_read_into_distinct_hosts(
        lines in proptest::collection::vec(ini_line(), 0..24),
    ) {
        check(&lines.join("\n"), TextFormat::Ini);
    }

    /// Generated hosts in groups, each with its connection variables and pin, and a
    /// group variable for every host: read back as the hosts they describe.
    #[test]
    fn a_generated_ini_inventory_reads_as_the_hosts_it_describes(
        groups in proptest::collection::vec(proptest::collection::vec(gen_ini_host(), 1..=4), 1..=3),
    ) {
        let mut text = String::new();
        for (g, hosts) in groups.iter().enumerate() {
            text.push_str(&format!("[g{g}]\n"));
            for (i, h) in hosts.iter().enumerate() {
                text.push_str(&format!("h{g}x{i} ansible_host=10.{g}.0.{i}"));
                if let Some(u) = h.user {
                    text.push_str(&format!(" ansible_user={u}"));
                }
                if let Some(p) = h.port {
                    text.push_str(&format!(" ansible_port={p}"));
                }
                if let Some(w) = h.workers {
                    text.push_str(&format!(" iofleet_workers={w}"));
                }
                if h.local {
                    text.push_str(" iofleet_transport=local");
                }
                text.push('\n');
            }
            text.push_str(&format!("[g{g}:vars]\niofleet_target=/data/g{g}\n"));
        }
        text.push_str("[all:vars]\niofleet_path=/usr/local/bin/iofleet\n");
        let read = parse_text(Path::new(FILE), &text, TextFormat::Ini)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let want: Vec<HostSpec> = groups
            .iter()
            .enumerate()
            .flat_map(|(g, hosts)| hosts.iter().enumerate().map(move |(i, h)| (g, i, h)))
            .map(|(g, i, h)| HostSpec {
                name: format!("h{g}x{i}"),
                destination: match h.user {
                    Some(u) => format!("{u}@10.{g}.0.{i}"),
                    None => format!("10.{g}.0.{i}"),
                },
                target: TargetArg::Dir(format!("/data/g{g}")),
                workers: h.workers,
                labels: [("group".to_string(), format!("g{g}"))].into(),
                iofleet_path: Some("/usr/local/bin/iofleet".into()),
                reach: if h.local {
                    Reach::Local
                } else {
                    Reach::Ssh {
                        options: h.port.map_or(vec![], |p| vec!["-p".into(), p.to_string()]),
                    }
                },
                role: Role::Workers,
                observe: Vec::new(),
                scrape: None,
            })
            .collect();
        prop_assert_eq!(read, want);
    }
}

/// Each way `parse_text` refuses, named: TOML syntax, an INI line, a host variable at
/// its line, and the whole inventory's check.
#[test]
fn parse_text_refuses_with_the_flag_and_where() {
    let refused = |text: &str, format| {
        parse_text(Path::new(FILE), text, format)
            .unwrap_err()
            .to_string()
    };
    let e = refused("[[host]]\ndestination = 1\n", TextFormat::Toml);
    assert!(
        e.starts_with("--hosts inv: ") && e.contains("line 2"),
        "{e}"
    );
    let e = refused("n1\n[g\n", TextFormat::Ini);
    assert!(e.starts_with("--hosts inv, line 2: "), "{e}");
    let e = refused("n1\nn2 iofleet_workers=two\n", TextFormat::Ini);
    assert!(
        e.starts_with("--hosts inv, line 2: ") && e.contains("iofleet_workers"),
        "{e}"
    );
    let e = refused(
        "[[host]]\ndestination = \"a\"\n[[host]]\ndestination = \"a\"\n",
        TextFormat::Toml,
    );
    assert!(e.contains("host name 'a' appears twice"), "{e}");
    let e = refused("# no host\n", TextFormat::Ini);
    assert!(e.contains("no hosts listed"), "{e}");
}

/// Found by the inventory_ini fuzz target: a pattern of thousands of hosts took 14 s to
/// read (each host's groups were searched for in every group's list, quadratic). Now one
/// pass; the test checks what is read, the fuzz run (bench/README.md) that it is quick.
#[test]
fn a_pattern_of_20000_hosts_reads_every_host_with_its_groups() {
    let text = "[g]\nn[00000:19999]\n[h]\nn00007\n[h:vars]\niofleet_workers=2\n";
    let hosts = parse_text(Path::new(FILE), text, TextFormat::Ini).unwrap();
    assert_eq!(hosts.len(), 20_000);
    assert_eq!(
        (hosts[0].name.as_str(), hosts[19_999].name.as_str()),
        ("n00000", "n19999")
    );
    assert_eq!(hosts[7].labels["group"], "g,h");
    assert_eq!(hosts[7].workers, Some(2));
    assert_eq!(hosts[8].labels["group"], "g");
    assert_eq!(hosts[8].workers, None);
}

/// A ladder of 40 rungs of two groups, each the child of both groups of the rung below
/// (2^40 paths from the top to the hosts): read with each group's depth and ancestry
/// computed once. Before, one recursion per path took 4.5 s for 22 rungs (1.1 KB of
/// text), doubling with each rung.
#[test]
fn a_ladder_of_groups_reads_without_following_every_path() {
    let mut text = String::from("[l0a]\nx1\n[l0b]\nx2\n");
    for i in 0..40 {
        for side in ["a", "b"] {
            text.push_str(&format!("[l{}{side}:children]\nl{i}a\nl{i}b\n", i + 1));
        }
    }
    text.push_str("[l40a:vars]\niofleet_workers=3\n[l0b:vars]\niofleet_workers=1\n");
    let hosts = parse_text(Path::new(FILE), &text, TextFormat::Ini).unwrap();
    assert_eq!(hosts.len(), 2);
    // x1 gets the top group's variable; x2 its own group's, deeper, which wins.
    assert_eq!((hosts[0].workers, hosts[1].workers), (Some(3), Some(1)));
    // A loop anywhere on the ladder is still refused at its line.
    let looped = format!("{text}[l0a:children]\nl40b\n");
    let e = parse_text(Path::new(FILE), &looped, TextFormat::Ini).unwrap_err();
    assert!(e.to_string().contains("makes a loop"), "{e}");
}
