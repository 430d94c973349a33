//! An Ansible inventory as Ansible resolves it: hosts in Ansible's listing order, the
//! groups each host belongs to, and each host's variables after Ansible's precedence
//! (`all` < parent group < child group < host). Two readers fill it: `ansible-inventory
//! -i FILE --list` when that program is on PATH (INI, YAML, scripts and plugins, read by
//! Ansible itself), and the native INI reader (`ini.rs`) otherwise.
//!
//! This module only runs `ansible-inventory` and reads its JSON; turning variables into
//! hosts to connect to (`ansible_host` → SSH destination, `iofleet_*` → workers and
//! targets) is `mod.rs`'s job, the same for both readers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// One variable of a host: its resolved value and, when the native reader read it, the
/// line of the inventory that set it.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    pub value: Value,
    pub line: Option<usize>,
}

/// A group as `ansible-inventory --list` lists it: its own hosts and its child groups,
/// each in the order they were declared.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub hosts: Vec<String>,
    pub children: Vec<String>,
}

/// A host with the groups that list it directly (sorted by name) and its resolved
/// variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub groups: Vec<String>,
    pub vars: BTreeMap<String, Var>,
}

/// A resolved inventory.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// Groups, `all` first. The native reader also lists empty groups, which
    /// `ansible-inventory` omits.
    pub groups: Vec<Group>,
    /// Hosts in listing order: depth-first from `all`, a group's own hosts before its
    /// children's, each host once, where first met.
    pub hosts: Vec<Host>,
}

impl Inventory {
    /// Build from groups and per-host variables: hosts in listing order, with the
    /// groups that list them.
    pub fn from_groups(
        groups: Vec<Group>,
        mut vars: BTreeMap<String, BTreeMap<String, Var>>,
    ) -> Self {
        let by_name: BTreeMap<&str, &Group> = groups.iter().map(|g| (g.name.as_str(), g)).collect();
        let mut order = Vec::new();
        let mut seen_hosts = HashSet::new();
        let mut seen_groups = HashSet::new();
        fn visit<'a>(
            g: &'a Group,
            by_name: &BTreeMap<&str, &'a Group>,
            order: &mut Vec<String>,
            seen_hosts: &mut HashSet<&'a str>,
            seen_groups: &mut HashSet<&'a str>,
        ) {
            if !seen_groups.insert(g.name.as_str()) {
                return;
            }
            for h in &g.hosts {
                if seen_hosts.insert(h.as_str()) {
                    order.push(h.clone());
                }
            }
            for c in &g.children {
                if let Some(child) = by_name.get(c.as_str()) {
                    visit(child, by_name, order, seen_hosts, seen_groups);
                }
            }
        }
        if let Some(all) = by_name.get("all") {
            visit(all, &by_name, &mut order, &mut seen_hosts, &mut seen_groups);
        }
        // Each host's groups from one pass over the groups' lists: a search of every
        // group's list per host was quadratic (a pattern expands to 100,000 hosts).
        let mut listed_in: HashMap<&str, Vec<String>> = HashMap::new();
        for g in groups.iter().filter(|g| g.name != "all") {
            for h in &g.hosts {
                listed_in
                    .entry(h.as_str())
                    .or_default()
                    .push(g.name.clone());
            }
        }
        let hosts = order
            .into_iter()
            .map(|name| {
                let mut groups = listed_in.remove(name.as_str()).unwrap_or_default();
                groups.sort();
                groups.dedup();
                Host {
                    vars: vars.remove(&name).unwrap_or_default(),
                    name,
                    groups,
                }
            })
            .collect();
        Inventory { groups, hosts }
    }

    /// Read the JSON of `ansible-inventory --list`: groups' `hosts` and `children`, and
    /// `_meta.hostvars`.
    pub fn from_list_json(json: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(json)
            .map_err(|e| format!("ansible-inventory printed no inventory JSON: {e}"))?;
        let obj = v
            .as_object()
            .ok_or("ansible-inventory printed JSON that is not an object")?;
        let names = |g: &Value, key: &str| -> Vec<String> {
            g.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut groups: Vec<Group> = obj
            .iter()
            .filter(|(k, _)| *k != "_meta")
            .map(|(name, g)| Group {
                name: name.clone(),
                hosts: names(g, "hosts"),
                children: names(g, "children"),
            })
            .collect();
        // `all` first, as the native reader lists it.
        groups.sort_by_key(|g| g.name != "all");
        let mut vars = BTreeMap::new();
        if let Some(hv) = v.pointer("/_meta/hostvars").and_then(Value::as_object) {
            for (host, hvars) in hv {
                let map = hvars
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| {
                                (
                                    k.clone(),
                                    Var {
                                        value: v.clone(),
                                        line: None,
                                    },
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                vars.insert(host.clone(), map);
            }
        }
        Ok(Inventory::from_groups(groups, vars))
    }
}

/// What running `ansible-inventory` gave.
pub enum Outcome {
    /// The program is not on PATH.
    Missing,
    /// It ran and failed; its message.
    Failed(String),
    Resolved(Inventory),
}

/// Resolve `path` with `ansible-inventory -i PATH --list`. A source Ansible cannot
/// parse is an error (`ANSIBLE_INVENTORY_UNPARSED_FAILED`), not an empty inventory.
pub fn run_ansible_inventory(path: &Path) -> Outcome {
    let out = Command::new("ansible-inventory")
        .arg("-i")
        .arg(path)
        .arg("--list")
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "True")
        .env("ANSIBLE_NOCOLOR", "True")
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Outcome::Missing,
        Err(e) => return Outcome::Failed(format!("cannot run ansible-inventory: {e}")),
        Ok(o) => o,
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return Outcome::Failed(format!(
            "ansible-inventory -i {} --list failed ({}): {}",
            path.display(),
            out.status,
            lines.join(" ")
        ));
    }
    match Inventory::from_list_json(&String::from_utf8_lossy(&out.stdout)) {
        Ok(inv) => Outcome::Resolved(inv),
        Err(e) => Outcome::Failed(e),
    }
}
