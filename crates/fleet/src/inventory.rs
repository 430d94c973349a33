//! The host inventory: which machines run workers, how to reach them, where their disks
//! live. Read from iofleet's TOML format or from an Ansible INI inventory, then checked,
//! and workers are placed: pinned counts first, the rest spread evenly.
//!
//! TOML:
//! ```toml
//! [ssh]
//! options = ["-F", "/path/to/ssh_config"]   # added to every ssh command
//! [defaults]
//! target = "/var/tmp/iofleet"                # directory, or a list of block devices
//! [[host]]
//! destination = "node1"                      # anything `ssh` accepts (aliases too)
//! name = "node1"                             # shown in results (default: destination)
//! target = ["/dev/nvme1n1"]                  # overrides the default
//! workers = 4                                # pin this host's worker count
//! labels = { rack = "r1", fault_domain = "a" }
//! iofleet_path = "/usr/local/bin/iofleet"    # use this binary; nothing is copied
//! transport = "ssh"                          # or "local": run the agent as a local process
//! ```
//! Ansible INI: `host ansible_host=… ansible_user=… ansible_port=… iofleet_target=…
//! iofleet_workers=…` lines under `[group]` headers (`:vars` and `:children` sections
//! are skipped).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::protocol::TargetArg;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    Ssh,
    Local,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    pub name: String,
    pub destination: String,
    pub target: TargetArg,
    pub workers: Option<u32>,
    pub labels: BTreeMap<String, String>,
    pub iofleet_path: Option<String>,
    pub transport: TransportKind,
    /// Extra arguments for `ssh` (inventory-wide options, then per-host ones).
    pub ssh_options: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInventory {
    #[serde(default)]
    ssh: RawSsh,
    #[serde(default)]
    defaults: RawDefaults,
    #[serde(default)]
    host: Vec<RawHost>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    #[serde(default)]
    options: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    target: Option<RawTarget>,
    workers: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RawTarget {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    destination: String,
    name: Option<String>,
    target: Option<RawTarget>,
    workers: Option<u32>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    iofleet_path: Option<String>,
    transport: Option<TransportKind>,
    #[serde(default)]
    ssh_options: Vec<String>,
}

/// Default target directory on a host when the inventory names none.
pub const DEFAULT_REMOTE_TARGET: &str = "/var/tmp/iofleet-data";

fn target_arg(t: Option<RawTarget>) -> TargetArg {
    match t {
        None => TargetArg::Dir(DEFAULT_REMOTE_TARGET.into()),
        Some(RawTarget::One(s)) if s.starts_with("/dev/") => TargetArg::Devices(vec![s]),
        Some(RawTarget::One(s)) => TargetArg::Dir(s),
        Some(RawTarget::Many(v)) => TargetArg::Devices(v),
    }
}

/// Read an inventory file: TOML when it ends in `.toml`, Ansible INI otherwise.
pub fn load(path: &Path) -> Result<Vec<HostSpec>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--hosts {}: {e}", path.display()))?;
    let hosts = if path.extension().is_some_and(|e| e == "toml") {
        parse_toml(&text)
    } else {
        parse_ansible(&text)
    }
    .map_err(|e| format!("--hosts {}: {e}", path.display()))?;
    check(&hosts).map_err(|e| format!("--hosts {}: {e}", path.display()))?;
    Ok(hosts)
}

pub fn parse_toml(text: &str) -> Result<Vec<HostSpec>, String> {
    let raw: RawInventory = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(raw
        .host
        .into_iter()
        .map(|h| {
            let mut ssh_options = raw.ssh.options.clone();
            ssh_options.extend(h.ssh_options);
            HostSpec {
                name: h.name.unwrap_or_else(|| h.destination.clone()),
                destination: h.destination,
                target: target_arg(h.target.or_else(|| raw.defaults.target.clone())),
                workers: h.workers.or(raw.defaults.workers),
                labels: h.labels,
                iofleet_path: h.iofleet_path,
                transport: h.transport.unwrap_or(TransportKind::Ssh),
                ssh_options,
            }
        })
        .collect())
}

pub fn parse_ansible(text: &str) -> Result<Vec<HostSpec>, String> {
    let mut hosts = Vec::new();
    let mut skip = false;
    let mut group = String::from("ungrouped");
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            let name = line.trim_matches(|c| c == '[' || c == ']');
            skip = name.contains(':');
            group = name.to_string();
            continue;
        }
        if skip {
            continue;
        }
        let mut parts = line.split_whitespace();
        let alias = parts.next().expect("non-empty line has a first word");
        let mut vars = BTreeMap::new();
        for kv in parts {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("line {}: '{kv}' is not key=value", n + 1))?;
            vars.insert(
                k.to_string(),
                v.trim_matches(|c| c == '"' || c == '\'').to_string(),
            );
        }
        let host = vars
            .get("ansible_host")
            .cloned()
            .unwrap_or_else(|| alias.to_string());
        let destination = match vars.get("ansible_user") {
            Some(u) => format!("{u}@{host}"),
            None => host,
        };
        let mut ssh_options = Vec::new();
        if let Some(p) = vars.get("ansible_port") {
            ssh_options.extend(["-p".to_string(), p.clone()]);
        }
        if let Some(k) = vars.get("ansible_ssh_private_key_file") {
            ssh_options.extend(["-i".to_string(), k.clone()]);
        }
        let workers = match vars.get("iofleet_workers") {
            Some(w) => Some(w.parse().map_err(|_| {
                format!("line {}: iofleet_workers={w} is not a whole number", n + 1)
            })?),
            None => None,
        };
        let mut labels = BTreeMap::new();
        labels.insert("group".to_string(), group.clone());
        hosts.push(HostSpec {
            name: alias.to_string(),
            destination,
            target: target_arg(vars.get("iofleet_target").cloned().map(RawTarget::One)),
            workers,
            labels,
            iofleet_path: vars.get("iofleet_path").cloned(),
            transport: TransportKind::Ssh,
            ssh_options,
        });
    }
    Ok(hosts)
}

fn check(hosts: &[HostSpec]) -> Result<(), String> {
    if hosts.is_empty() {
        return Err("no hosts listed (add [[host]] entries)".into());
    }
    let mut names = std::collections::BTreeSet::new();
    for h in hosts {
        if !names.insert(&h.name) {
            return Err(format!("host name '{}' appears twice", h.name));
        }
        if h.workers == Some(0) {
            return Err(format!("host '{}': workers must be at least 1", h.name));
        }
    }
    Ok(())
}

/// Place `total` workers: pinned hosts get their count; the rest is spread evenly over
/// the others (earlier hosts take the remainder). Returns (first global worker, count)
/// per host; hosts that get no worker keep a count of 0.
pub fn place(hosts: &[HostSpec], total: u32) -> Result<Vec<(u32, u32)>, String> {
    let pinned: u32 = hosts.iter().filter_map(|h| h.workers).sum();
    let free: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].workers.is_none())
        .collect();
    let rest = if free.is_empty() {
        0
    } else {
        total.checked_sub(pinned).ok_or_else(|| {
            format!("the inventory pins {pinned} workers but the run has only {total} (--workers)")
        })?
    };
    let mut counts: Vec<u32> = hosts.iter().map(|h| h.workers.unwrap_or(0)).collect();
    for (k, &i) in free.iter().enumerate() {
        let n = free.len() as u32;
        counts[i] = rest / n + u32::from((k as u32) < rest % n);
    }
    let mut base = 0;
    Ok(counts
        .into_iter()
        .map(|c| {
            let b = base;
            base += c;
            (b, c)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_inventory_with_defaults_and_overrides() {
        let hosts = parse_toml(
            r#"
            [ssh]
            options = ["-F", "cfg"]
            [defaults]
            target = "/data/iofleet"
            [[host]]
            destination = "node1"
            labels = { rack = "r1" }
            [[host]]
            destination = "root@10.0.0.2"
            name = "node2"
            target = ["/dev/nvme1n1", "/dev/nvme2n1"]
            workers = 3
            ssh_options = ["-p", "2222"]
            "#,
        )
        .unwrap();
        assert_eq!(hosts[0].name, "node1");
        assert_eq!(hosts[0].target, TargetArg::Dir("/data/iofleet".into()));
        assert_eq!(hosts[0].labels["rack"], "r1");
        assert_eq!(hosts[1].name, "node2");
        assert_eq!(hosts[1].workers, Some(3));
        assert_eq!(hosts[1].ssh_options, ["-F", "cfg", "-p", "2222"]);
        assert!(matches!(hosts[1].target, TargetArg::Devices(ref v) if v.len() == 2));
        assert!(parse_toml("[[host]]\ndestination = \"a\"\ncolour = 1\n")
            .unwrap_err()
            .contains("colour"));
    }

    #[test]
    fn ansible_inventory() {
        let hosts = parse_ansible(
            "# comment\n[storage]\nn1 ansible_host=10.0.0.1 ansible_user=root ansible_port=2222 iofleet_workers=2\nn2\n[storage:vars]\nfoo=bar\n",
        )
        .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].destination, "root@10.0.0.1");
        assert_eq!(hosts[0].ssh_options, ["-p", "2222"]);
        assert_eq!(hosts[0].workers, Some(2));
        assert_eq!(hosts[1].destination, "n2");
        assert_eq!(hosts[1].labels["group"], "storage");
        assert!(parse_ansible("[g]\nn1 oops\n")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn placement_spreads_and_pins() {
        let h = |w: Option<u32>| HostSpec {
            name: format!("{w:?}{}", rand::random::<u32>()),
            destination: "x".into(),
            target: TargetArg::Dir("d".into()),
            workers: w,
            labels: BTreeMap::new(),
            iofleet_path: None,
            transport: TransportKind::Ssh,
            ssh_options: vec![],
        };
        let hosts = vec![h(None), h(Some(4)), h(None), h(None)];
        let p = place(&hosts, 11).unwrap();
        assert_eq!(p, vec![(0, 3), (3, 4), (7, 2), (9, 2)]);
        assert!(place(&hosts, 3).unwrap_err().contains("pins 4"));
        let pinned = vec![h(Some(2)), h(Some(5))];
        assert_eq!(place(&pinned, 99).unwrap(), vec![(0, 2), (2, 5)]);
    }
}
