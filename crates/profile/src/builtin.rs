//! The built-in profiles: TOML files under the top-level `profiles/` directory, embedded
//! in the binary at compile time.
//!
//! Each file restates published parameters (HCIBench, VM Fleet, Nutanix X-Ray, Iometer,
//! JEDEC, vendor reports) with attribution in its `description`, and scales the fleet
//! down to at most 2 GiB of disk. This module only lists and returns the text; parsing and
//! validation are the same as for user files.

/// (name, TOML text), in the order `profiles list` shows them.
static BUILTINS: &[(&str, &str)] = &[
    (
        "easy-run-4k70r",
        include_str!("../../../profiles/easy-run-4k70r.toml"),
    ),
    (
        "easy-run-4k100r",
        include_str!("../../../profiles/easy-run-4k100r.toml"),
    ),
    (
        "easy-run-8k50r",
        include_str!("../../../profiles/easy-run-8k50r.toml"),
    ),
    (
        "easy-run-256k0r",
        include_str!("../../../profiles/easy-run-256k0r.toml"),
    ),
    (
        "vxrail-4k7030",
        include_str!("../../../profiles/vxrail-4k7030.toml"),
    ),
    (
        "vsan-2m-read",
        include_str!("../../../profiles/vsan-2m-read.toml"),
    ),
    (
        "vsan-7030",
        include_str!("../../../profiles/vsan-7030.toml"),
    ),
    (
        "diskspd-4k-read",
        include_str!("../../../profiles/diskspd-4k-read.toml"),
    ),
    (
        "vmfleet-general",
        include_str!("../../../profiles/vmfleet-general.toml"),
    ),
    (
        "vmfleet-peak",
        include_str!("../../../profiles/vmfleet-peak.toml"),
    ),
    (
        "vmfleet-vdi",
        include_str!("../../../profiles/vmfleet-vdi.toml"),
    ),
    (
        "vmfleet-sql",
        include_str!("../../../profiles/vmfleet-sql.toml"),
    ),
    (
        "xray-vdi-task",
        include_str!("../../../profiles/xray-vdi-task.toml"),
    ),
    (
        "xray-vdi-knowledge",
        include_str!("../../../profiles/xray-vdi-knowledge.toml"),
    ),
    (
        "xray-vdi-power",
        include_str!("../../../profiles/xray-vdi-power.toml"),
    ),
    (
        "xray-oltp",
        include_str!("../../../profiles/xray-oltp.toml"),
    ),
    (
        "four-corners-randread",
        include_str!("../../../profiles/four-corners-randread.toml"),
    ),
    (
        "four-corners-randwrite",
        include_str!("../../../profiles/four-corners-randwrite.toml"),
    ),
    (
        "four-corners-seqread",
        include_str!("../../../profiles/four-corners-seqread.toml"),
    ),
    (
        "four-corners-seqwrite",
        include_str!("../../../profiles/four-corners-seqwrite.toml"),
    ),
    (
        "iometer-fileserver",
        include_str!("../../../profiles/iometer-fileserver.toml"),
    ),
    (
        "iometer-webserver",
        include_str!("../../../profiles/iometer-webserver.toml"),
    ),
    (
        "iometer-database",
        include_str!("../../../profiles/iometer-database.toml"),
    ),
    ("jesd219", include_str!("../../../profiles/jesd219.toml")),
    ("vdi-boot", include_str!("../../../profiles/vdi-boot.toml")),
    (
        "vdi-monday-login",
        include_str!("../../../profiles/vdi-monday-login.toml"),
    ),
    (
        "vdi-tuesday-login",
        include_str!("../../../profiles/vdi-tuesday-login.toml"),
    ),
    (
        "citrix-pvs-boot",
        include_str!("../../../profiles/citrix-pvs-boot.toml"),
    ),
    (
        "citrix-pvs-login",
        include_str!("../../../profiles/citrix-pvs-login.toml"),
    ),
    (
        "citrix-pvs-steady",
        include_str!("../../../profiles/citrix-pvs-steady.toml"),
    ),
];

/// Names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.0).collect()
}

/// The TOML text of built-in `name` (for `profiles show`).
pub fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|b| b.0 == name).map(|b| b.1)
}
