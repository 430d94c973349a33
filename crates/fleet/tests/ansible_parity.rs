//! The native INI reader against Ansible itself: for each inventory, the hosts, their
//! groups, the groups' children and every host's resolved variables must equal what
//! `ansible-inventory -i FILE --list` prints, and both readers must give the same hosts
//! to connect to. A YAML inventory (which only ansible-inventory reads) must give the
//! same hosts as its INI twin.
//!
//! Needs `ansible-inventory` (Debian: `ansible-core`, installed by `.ci/run`): without
//! it these tests fail under CI and are skipped (and listed) elsewhere.

#[path = "../../../tests-support/need.rs"]
mod need;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use iofleet_fleet::inventory::ansible::Inventory;
use iofleet_fleet::inventory::{ini, load_with, resolve_hosts, Reach, Reader};
use serde_json::{json, Value};

/// Write `text` as `name` in a fresh directory (no group_vars/ beside it).
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `ansible-inventory -i PATH --list`, as JSON.
fn ansible_list(path: &Path) -> Value {
    let out = Command::new("ansible-inventory")
        .arg("-i")
        .arg(path)
        .arg("--list")
        .env("ANSIBLE_INVENTORY_UNPARSED_FAILED", "True")
        .output()
        .unwrap_or_else(|e| {
            panic!("ansible-inventory could not run ({e}): install ansible-core (see .ci/run)")
        });
    assert!(
        out.status.success(),
        "ansible-inventory -i {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ansible-inventory prints JSON")
}

fn native_vars(inv: &Inventory) -> BTreeMap<String, Value> {
    inv.hosts
        .iter()
        .map(|h| {
            let vars: serde_json::Map<String, Value> = h
                .vars
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect();
            (h.name.clone(), Value::Object(vars))
        })
        .collect()
}

type HostView = (String, Vec<String>, BTreeMap<String, Value>);

/// Hosts in order with their groups and variable values (lines left out).
fn hosts_of(inv: &Inventory) -> Vec<HostView> {
    inv.hosts
        .iter()
        .map(|h| {
            let vars = h
                .vars
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect();
            (h.name.clone(), h.groups.clone(), vars)
        })
        .collect()
}

/// The native reader's view of `text` equals Ansible's; returns Ansible's JSON.
fn parity(text: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "hosts.ini", text);
    let list = ansible_list(&path);
    let native = ini::parse(text).unwrap_or_else(|e| panic!("native reader: {e:?}"));

    // Every host's resolved variables, from `_meta.hostvars` (hosts without variables
    // are left out there).
    let hostvars = list["_meta"]["hostvars"].as_object().unwrap();
    let mine = native_vars(&native);
    for (host, vars) in &mine {
        let theirs = hostvars.get(host).cloned().unwrap_or(json!({}));
        assert_eq!(vars, &theirs, "variables of host {host}");
    }
    for host in hostvars.keys() {
        assert!(
            mine.contains_key(host),
            "ansible lists host {host}, native does not"
        );
    }

    // Every group's own hosts and children, in order; empty groups are not listed.
    let groups = list.as_object().unwrap();
    let names = |g: &Value, key: &str| -> Vec<String> {
        g.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let mut listed = 0;
    for g in &native.groups {
        if g.hosts.is_empty() && g.children.is_empty() {
            assert!(
                !groups.contains_key(&g.name),
                "empty group {} listed",
                g.name
            );
            continue;
        }
        listed += 1;
        let theirs = groups
            .get(&g.name)
            .unwrap_or_else(|| panic!("ansible does not list group {}", g.name));
        assert_eq!(g.hosts, names(theirs, "hosts"), "hosts of group {}", g.name);
        assert_eq!(
            g.children,
            names(theirs, "children"),
            "children of group {}",
            g.name
        );
    }
    assert_eq!(listed + 1, groups.len(), "groups: {:?}", groups.keys());

    // The same hosts in the same order with the same groups, and the same hosts to
    // connect to, whichever reader resolved them.
    let from_ansible = Inventory::from_list_json(&list.to_string()).unwrap();
    assert_eq!(hosts_of(&native), hosts_of(&from_ansible));
    assert_eq!(
        resolve_hosts(&path, &from_ansible, Some(text)).unwrap(),
        load_with(&path, Reader::Native).unwrap()
    );
    list
}

fn hosts_in(list: &Value, group: &str) -> Vec<String> {
    list[group]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn numeric_ranges_with_and_without_leading_zeros_and_strides() {
    if !need::need(
        "numeric_ranges_with_and_without_leading_zeros_and_strides",
        &["ansible-inventory"],
    ) {
        return;
    }
    let list = parity(
        "[web]\nweb[1:3].example.com\nweb[9:11]\n[db]\ndb[01:04]\ndb-[008:010]\n[odd]\nn[1:9:3]\nz[01:10:4]-x[1:2]\n",
    );
    assert_eq!(
        hosts_in(&list, "db"),
        ["db01", "db02", "db03", "db04", "db-008", "db-009", "db-010"]
    );
    assert_eq!(hosts_in(&list, "web")[3..], ["web9", "web10", "web11"]);
}

#[test]
fn letter_ranges() {
    if !need::need("letter_ranges", &["ansible-inventory"]) {
        return;
    }
    let list = parity("[racks]\nrack[a:c]\nx[y:B]-n[1:2]\nsolo[q:q]\n");
    assert_eq!(hosts_in(&list, "racks")[..3], ["racka", "rackb", "rackc"]);
    assert!(hosts_in(&list, "racks").contains(&"xA-n2".to_string()));
}

#[test]
fn children_of_children_declared_before_and_after() {
    if !need::need(
        "children_of_children_declared_before_and_after",
        &["ansible-inventory"],
    ) {
        return;
    }
    parity(
        "[dc:children]\nrow1\nrow2\n\
         [row1:children]\nrackA\n\
         [rackA]\nn1\nn2 v=host\n\
         [row2]\nn3\n\
         [dc:vars]\nv=dc\nw=dc\nd=dc\n\
         [row1:vars]\nv=row1\nw=row1\n\
         [rackA:vars]\nv=rackA\n\
         [all:vars]\nv=all\na=all\n\
         [row2:children]\nrackB\n[rackB]\nn4\n",
    );
}

#[test]
fn group_vars_and_all_vars_with_typed_values() {
    if !need::need(
        "group_vars_and_all_vars_with_typed_values",
        &["ansible-inventory"],
    ) {
        return;
    }
    parity(
        "[all:vars]\niofleet_target=/var/tmp/iofleet\nn = 8   # a number\nq='8'\nflag=True\nlist=['/dev/a', '/dev/b']\nd={'rack': 'r1'}\ntext=hello world\nf=1.5\nneg=-3\npath=/srv # kept\n\
         [nodes]\nn1\nn2 iofleet_workers=4\n[nodes:vars]\niofleet_workers=2\nq=\"override\"\n",
    );
}

#[test]
fn a_host_in_two_groups_is_one_host_with_vars_merged_by_depth_and_name() {
    if !need::need(
        "a_host_in_two_groups_is_one_host_with_vars_merged_by_depth_and_name",
        &["ansible-inventory"],
    ) {
        return;
    }
    let list = parity(
        "[beta]\nshared b_only=1\nother\n[alpha]\nshared a_only=1 inline=alpha\n\
         [alpha:vars]\nsame=alpha\nonly_alpha=1\n[beta:vars]\nsame=beta\n\
         [parent:children]\nalpha\n[parent:vars]\nsame=parent\ndeep=parent\n\
         [zeta]\nshared inline=zeta\n[zeta:vars]\nsame=zeta\n",
    );
    // beta and zeta are at depth 1 and alpha at depth 2 (below parent): alpha wins.
    assert_eq!(list["_meta"]["hostvars"]["shared"]["same"], "alpha");
    assert_eq!(list["_meta"]["hostvars"]["shared"]["inline"], "zeta");
}

#[test]
fn ansible_host_port_user_and_key() {
    if !need::need("ansible_host_port_user_and_key", &["ansible-inventory"]) {
        return;
    }
    parity(
        "[storage]\nnode1 ansible_host=10.0.0.11 ansible_user=root ansible_port=2222\n\
         node2:2200 ansible_ssh_private_key_file=~/.ssh/bench\n\
         node3:2201 ansible_port=2300\n\
         node4 ansible_host=fe80::1\n\
         [fe80::1]:2022\nfe80::2\n10.0.0.[1:2]:23\n10.0.1.1\n\
         [storage:vars]\nansible_user=bench\nansible_port=22\n",
    );
}

#[test]
fn ungrouped_hosts_priorities_comments_and_quoting() {
    if !need::need(
        "ungrouped_hosts_priorities_comments_and_quoting",
        &["ansible-inventory"],
    ) {
        return;
    }
    parity(
        "# a comment\n; another\nloose1 iofleet_workers=3\nlater\n\n\
         [g1]\nlater x=\"two words\" y='\"quoted\"' z=a\\ b # trailing comment\n\
         [g1:vars]\nansible_group_priority=10\np=g1\n\
         [g2:hosts]\nlater\n[g2:vars]\np=g2\n",
    );
}

#[test]
fn groups_named_before_they_are_declared() {
    if !need::need(
        "groups_named_before_they_are_declared",
        &["ansible-inventory"],
    ) {
        return;
    }
    parity(
        "[late:vars]\nv=late\n[top:children]\nlate\nmid\nodd#name # comment\n[odd#name]\no1\n[mid:children]\nlate\n\
         [mid]\nm1\n[late]\nl1\nl2 v=own\n",
    );
}

#[test]
fn yaml_inventory_through_ansible_inventory_matches_its_ini_twin() {
    if !need::need(
        "yaml_inventory_through_ansible_inventory_matches_its_ini_twin",
        &["ansible-inventory"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ini = write(
        &dir,
        "twin.ini",
        "[storage]\nnode[01:02] ansible_user=root\nnode03:2200 iofleet_workers=2\n\
         [fast]\nnode01 iofleet_target=\"['/dev/nvme1n1', '/dev/nvme2n1']\"\n\
         [storage:vars]\niofleet_target=/var/tmp/iofleet\n[all:vars]\niofleet_path=/opt/iofleet\n",
    );
    let yaml = write(
        &dir,
        "twin.yml",
        "all:\n  vars:\n    iofleet_path: /opt/iofleet\n  children:\n    storage:\n      hosts:\n\
         \x20       node01: {ansible_user: root}\n        node02: {ansible_user: root}\n\
         \x20       node03: {ansible_port: 2200, iofleet_workers: 2}\n\
         \x20     vars:\n        iofleet_target: /var/tmp/iofleet\n\
         \x20   fast:\n      hosts:\n        node01:\n          iofleet_target: [/dev/nvme1n1, /dev/nvme2n1]\n",
    );
    let native = load_with(&ini, Reader::Native).unwrap();
    let via_ansible = load_with(&yaml, Reader::AnsibleInventory).unwrap();
    assert_eq!(via_ansible, native);
    assert_eq!(native.len(), 3);
    assert_eq!(native[0].destination, "root@node01");
    assert_eq!(native[0].labels["group"], "fast,storage");
    assert_eq!(
        native[2].reach,
        Reach::Ssh {
            options: vec!["-p".into(), "2200".into()]
        }
    );
}
