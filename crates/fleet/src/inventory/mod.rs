//! The host inventory: which machines run workers, how to reach them, where their disks
//! live. Read from iofleet's TOML format or from an Ansible inventory, then checked,
//! and workers are placed: pinned counts first, the rest spread evenly.
//!
//! TOML (files ending in `.toml`):
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
//! role = "workers"                           # or "observer": runs no I/O, reports what
//!                                            # the host spends (its target: what to watch)
//! observe = ["ceph-osd", "cgroup:/system.slice/longhorn.service"]  # an observer's
//!                                            # storage processes or cgroups
//! scrape = "http://127.0.0.1:9283/metrics"   # an observer's storage exporter, with
//! metrics = ["iops:ceph_osd_op_w"]           # its metrics or preset = "ceph"
//! ```
//! Any other file is an Ansible inventory, resolved into hosts and variables by
//! `ansible-inventory` when it is on PATH, else by the native INI reader (`ini.rs`;
//! `IOFLEET_INVENTORY_READER` chooses). Both readers give an `ansible::Inventory`, and
//! one function here turns it into hosts: `ansible_host`, `ansible_user`,
//! `ansible_port`, `ansible_ssh_private_key_file` → SSH destination and options;
//! `iofleet_workers`, `iofleet_target`, `iofleet_path`, `iofleet_transport`,
//! `iofleet_role`, `iofleet_observe`, `iofleet_scrape`, `iofleet_metrics`, `iofleet_preset` → the TOML keys of the same names. Any other `iofleet_*` variable is an error.
//!
//! In every format, a worker pin is bounded as `fleet.workers` is (the option table's
//! range), one by one and in sum, and a host's name or address may not be empty or hold
//! a control character: both are refused here, naming the key, before anything is sized
//! by them or printed with them.

pub mod ansible;
mod error;
pub mod ini;
mod literal;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use self::ansible::{Host, Inventory, Outcome};
pub use self::error::{InventoryError, READER_ENV};
pub use crate::host::{HostSpec, PodAddress, Reach, Role, TargetArg};

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
    /// Read wide, so that any whole number reaches the bound check (`pin`).
    workers: Option<i64>,
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
    workers: Option<i64>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    iofleet_path: Option<String>,
    transport: Option<Transport>,
    #[serde(default)]
    ssh_options: Vec<String>,
    #[serde(default)]
    role: Role,
    #[serde(default)]
    observe: Vec<String>,
    scrape: Option<String>,
    metrics: Option<Vec<String>>,
    preset: Option<String>,
}

/// The ways an inventory may name to reach a host (`transport`, `iofleet_transport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Transport {
    #[default]
    Ssh,
    Local,
}

impl Transport {
    /// The way to reach a host, with the ssh options the inventory gives it (a host
    /// run locally takes none).
    fn reach(self, ssh_options: Vec<String>) -> Reach {
        match self {
            Transport::Ssh => Reach::Ssh {
                options: ssh_options,
            },
            Transport::Local => Reach::Local,
        }
    }
}

/// Default target directory on a host when the inventory names none.
pub const DEFAULT_REMOTE_TARGET: &str = "/var/tmp/iofleet-data";

fn target_arg(t: Option<RawTarget>, role: Role) -> TargetArg {
    match t {
        None if role == Role::Observer => TargetArg::Devices(Vec::new()),
        None => TargetArg::Dir(DEFAULT_REMOTE_TARGET.into()),
        Some(RawTarget::One(s)) if s.starts_with("/dev/") => TargetArg::Devices(vec![s]),
        Some(RawTarget::One(s)) => TargetArg::Dir(s),
        // A list of directories (none under /dev/) spreads the disks over them; any other
        // list is devices, checked as such on the host.
        Some(RawTarget::Many(v)) if v.len() > 1 && v.iter().all(|p| !p.starts_with("/dev/")) => {
            TargetArg::Dirs(v)
        }
        Some(RawTarget::Many(v)) => TargetArg::Devices(v),
    }
}

/// How an Ansible inventory is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `ansible-inventory` when it is on PATH, else the native INI reader.
    Auto,
    /// The native INI reader, even when `ansible-inventory` is on PATH.
    Native,
    /// `ansible-inventory` only; an error when it is not on PATH.
    AnsibleInventory,
}

impl Reader {
    /// From `IOFLEET_INVENTORY_READER`: unset or `auto`, `native`, `ansible-inventory`.
    pub fn from_env() -> Result<Self, InventoryError> {
        match std::env::var(READER_ENV) {
            Err(_) => Ok(Reader::Auto),
            Ok(v) => match v.as_str() {
                "" | "auto" => Ok(Reader::Auto),
                "native" => Ok(Reader::Native),
                "ansible-inventory" => Ok(Reader::AnsibleInventory),
                _ => Err(InventoryError::Reader(v)),
            },
        }
    }
}

/// The `iofleet_*` variables an Ansible inventory may set; any other is an error.
pub const IOFLEET_VARS: [&str; 9] = [
    "iofleet_workers",
    "iofleet_target",
    "iofleet_path",
    "iofleet_transport",
    "iofleet_role",
    "iofleet_observe",
    "iofleet_scrape",
    "iofleet_metrics",
    "iofleet_preset",
];

/// An observer's exporter (`scrape` with `metrics` or `preset`), checked: only an
/// observer scrapes, the address is http://, the metrics are names (at most
/// `scrape::MOST_SCRAPED`), a preset is one iofleet knows. The error is `(key, what)`,
/// the key as the TOML names it.
fn scrape_spec(
    role: Role,
    url: Option<String>,
    metrics: Option<Vec<String>>,
    preset: Option<String>,
) -> Result<Option<crate::scrape::ScrapeSpec>, (&'static str, String)> {
    use crate::scrape;
    let Some(url) = url else {
        if metrics.is_some() {
            return Err((
                "metrics",
                "name the exporter to scrape too (scrape = \"http://127.0.0.1:PORT/metrics\")"
                    .into(),
            ));
        }
        if preset.is_some() {
            return Err((
                "preset",
                "name the exporter to scrape too (scrape = \"http://127.0.0.1:PORT/metrics\")"
                    .into(),
            ));
        }
        return Ok(None);
    };
    if role != Role::Observer {
        return Err(("scrape", "only an observer host scrapes an exporter (add role = \"observer\", iofleet_role=observer)".into()));
    }
    scrape::parse_url(&url).map_err(|m| ("scrape", m))?;
    let metrics = match (metrics, preset) {
        (Some(_), Some(_)) => return Err(("preset", "give metrics or a preset, not both".into())),
        (Some(m), None) => m,
        (None, Some(p)) => scrape::preset(&p).ok_or_else(|| {
            (
                "preset",
                format!("{p:?} is not a preset (the presets: {})", scrape::PRESETS),
            )
        })?,
        (None, None) => {
            return Err((
                "metrics",
                format!(
                "name the metrics to read (metrics = [\"iops:NAME\", \"NAME\"]) or a preset ({})",
                scrape::PRESETS
            ),
            ))
        }
    };
    if metrics.is_empty() || metrics.len() > scrape::MOST_SCRAPED {
        return Err((
            "metrics",
            format!(
                "{} metrics; give 1 to {}",
                metrics.len(),
                scrape::MOST_SCRAPED
            ),
        ));
    }
    for m in &metrics {
        scrape::parse_metric(m).map_err(|e| ("metrics", e))?;
    }
    Ok(Some(scrape::ScrapeSpec { url, metrics }))
}

/// The most `observe` entries a host may have.
pub const MOST_OBSERVED: usize = 64;

/// An observer's `observe` entries, checked: only an observer watches, each entry is a
/// process name, `cmdline:TEXT` or `cgroup:/PATH`, and there are at most
/// `MOST_OBSERVED`. The error completes "host 'NAME': KEY".
fn observe_entries(role: Role, entries: Vec<String>) -> Result<Vec<String>, String> {
    if entries.is_empty() {
        return Ok(entries);
    }
    if role != Role::Observer {
        return Err("only an observer host watches storage software (add role = \"observer\", iofleet_role=observer)".into());
    }
    if entries.len() > MOST_OBSERVED {
        return Err(format!(
            "{} entries, more than the {MOST_OBSERVED} a host may watch",
            entries.len()
        ));
    }
    for e in &entries {
        crate::storage::parse_entry(e)?;
    }
    Ok(entries)
}

/// Read an inventory file: TOML when it ends in `.toml`, otherwise an Ansible
/// inventory, read as `IOFLEET_INVENTORY_READER` says (`Reader::Auto` when unset).
pub fn load(path: &Path) -> Result<Vec<HostSpec>, InventoryError> {
    load_with(path, Reader::from_env()?)
}

/// `load` with the reader given.
pub fn load_with(path: &Path, reader: Reader) -> Result<Vec<HostSpec>, InventoryError> {
    load_from(path, reader, &|p| std::fs::read_to_string(p))
}

/// Whether TOML `text` describes a Kubernetes fleet (a `[kubernetes]` table), not hosts.
pub fn describes_kubernetes(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("kubernetes"))
}

/// `load_with`, the file's text read by `read` (once: a command that reads each input
/// file once hands its own reader). An Ansible inventory is also read by
/// ansible-inventory itself, as Ansible reads it (its directory's group_vars too).
pub fn load_from(
    path: &Path,
    reader: Reader,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Vec<HostSpec>, InventoryError> {
    let fail = |line: Option<usize>, message: String| InventoryError::File {
        file: path.to_path_buf(),
        line,
        message,
    };
    std::fs::metadata(path).map_err(|e| fail(None, e.to_string()))?;
    let hosts = if path.extension().is_some_and(|e| e == "toml") {
        let text = read(path).map_err(|e| fail(None, e.to_string()))?;
        if describes_kubernetes(&text) {
            return Err(fail(
                None,
                "describes a Kubernetes fleet ([kubernetes]): only `iofleet run` and `iofleet kube clean` take it (docs/kubernetes.md)".into(),
            ));
        }
        parse_toml(&text).map_err(|e| fail(None, e))?
    } else {
        // A directory has no text: ansible-inventory reads it itself. The text serves the
        // native reader and names the line of a bad variable.
        let text = read(path).ok();
        let inv = match reader {
            Reader::Native => native(path, text.as_deref())?,
            Reader::Auto | Reader::AnsibleInventory => match ansible::run_ansible_inventory(path) {
                Outcome::Resolved(inv) => inv,
                Outcome::Missing if reader == Reader::Auto => native(path, text.as_deref())?,
                Outcome::Missing => {
                    return Err(fail(
                        None,
                        format!("{READER_ENV}=ansible-inventory, but ansible-inventory is not on PATH (Debian: apt-get install ansible-core)"),
                    ))
                }
                Outcome::Failed(message) => {
                    // Ansible's message may not name the line; the native reader can.
                    if let (Some(text), false) = (&text, is_yaml(path)) {
                        if let Err(e) = ini::parse(text) {
                            return Err(fail(
                                Some(e.line),
                                format!("{} (ansible-inventory refuses it too)", e.message),
                            ));
                        }
                    }
                    return Err(fail(None, message));
                }
            },
        };
        resolve_hosts(path, &inv, text.as_deref())?
    };
    check(&hosts).map_err(|e| fail(None, e))?;
    Ok(hosts)
}

/// The inventory formats iofleet reads itself, for text that comes from no file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// iofleet's TOML format.
    Toml,
    /// An Ansible INI inventory, read by the native reader.
    Ini,
}

/// Hosts from inventory `text`, read and checked as [`load_with`] reads a file of that
/// format with the native reader; `file` only names the source in errors. Nothing is
/// read from disk and nothing is run (the fuzz targets in `fuzz/` read inventories so).
pub fn parse_text(
    file: &Path,
    text: &str,
    format: TextFormat,
) -> Result<Vec<HostSpec>, InventoryError> {
    let fail = |line: Option<usize>, message: String| InventoryError::File {
        file: file.to_path_buf(),
        line,
        message,
    };
    let hosts = match format {
        TextFormat::Toml => parse_toml(text).map_err(|e| fail(None, e))?,
        TextFormat::Ini => {
            let inv = ini::parse(text).map_err(|e| fail(Some(e.line), e.message))?;
            resolve_hosts(file, &inv, Some(text))?
        }
    };
    check(&hosts).map_err(|e| fail(None, e))?;
    Ok(hosts)
}

fn is_yaml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "yml" || e == "yaml" || e == "json")
}

/// The native INI reader, with what it cannot do refused rather than ignored.
fn native(path: &Path, text: Option<&str>) -> Result<Inventory, InventoryError> {
    let fail = |line: Option<usize>, message: String| InventoryError::File {
        file: path.to_path_buf(),
        line,
        message,
    };
    if is_yaml(path) {
        return Err(fail(
            None,
            "YAML and JSON inventories are read through ansible-inventory, which is not on PATH \
             or not chosen (Debian: apt-get install ansible-core; unset IOFLEET_INVENTORY_READER)"
                .into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    for d in ["group_vars", "host_vars"] {
        if dir.join(d).is_dir() {
            return Err(fail(
                None,
                format!(
                    "{d}/ beside the inventory is read only through ansible-inventory, which is \
                     not on PATH or not chosen; the native INI reader would ignore it"
                ),
            ));
        }
    }
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = std::fs::read_to_string(path).map_err(|e| fail(None, e.to_string()))?;
            &owned
        }
    };
    ini::parse(text).map_err(|e| fail(Some(e.line), e.message))
}

/// The first line of `text` that sets `key` (`key=`, `key =` or `key:`), for messages
/// about variables that ansible-inventory resolved.
fn find_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.match_indices(key).any(|(i, _)| {
                let before_ok = l[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                before_ok && l[i + key.len()..].trim_start().starts_with(['=', ':'])
            })
        })
        .map(|i| i + 1)
}

/// A value as the user wrote it: text without JSON quotes.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Hosts to connect to, from an Ansible inventory resolved by either reader; `text` is
/// the file's text, to name the line of a bad variable `ansible-inventory` resolved.
pub fn resolve_hosts(
    file: &Path,
    inv: &Inventory,
    text: Option<&str>,
) -> Result<Vec<HostSpec>, InventoryError> {
    host_specs(inv, text).map_err(|(line, message)| InventoryError::File {
        file: file.to_path_buf(),
        line,
        message,
    })
}

fn host_specs(inv: &Inventory, text: Option<&str>) -> Result<Vec<HostSpec>, VarError> {
    inv.hosts.iter().map(|h| host_spec(h, text)).collect()
}

/// Why a host's variable is refused: the line that sets it (when known) and a message.
type VarError = (Option<usize>, String);

fn host_spec(h: &Host, text: Option<&str>) -> Result<HostSpec, VarError> {
    let vars = HostVars { h, text };
    // The native reader refused a bad name at its line; ansible-inventory's names are
    // checked here.
    host_name(&h.name).map_err(|m| (None, format!("the inventory's host name {m}")))?;
    vars.check_names()?;
    let host = match vars.text_of("ansible_host")? {
        Some(a) => {
            host_name(&a).map_err(|m| vars.bad("ansible_host", m))?;
            a
        }
        None => h.name.clone(),
    };
    let destination = match vars.text_of("ansible_user")? {
        Some(u) => {
            host_name(&u).map_err(|m| vars.bad("ansible_user", m))?;
            format!("{u}@{host}")
        }
        None => host,
    };
    let mut ssh_options = Vec::new();
    if let Some(p) = vars.whole("ansible_port", 1, 65535)? {
        ssh_options.extend(["-p".to_string(), p.to_string()]);
    }
    if let Some(k) = vars.text_of("ansible_ssh_private_key_file")? {
        ssh_options.extend(["-i".to_string(), k]);
    }
    let target = vars.target()?;
    let reach = vars.transport()?.reach(ssh_options);
    // A host's pin is at most a fleet's workers, the bound of fleet.workers.
    let workers = vars
        .whole("iofleet_workers", 1, most_workers())?
        .map(|w| w as u32);
    let role = vars.role()?;
    let observe =
        observe_entries(role, vars.observe()?).map_err(|m| vars.bad("iofleet_observe", m))?;
    let scrape = scrape_spec(
        role,
        vars.text_of("iofleet_scrape")?,
        vars.list_of("iofleet_metrics")?,
        vars.text_of("iofleet_preset")?,
    )
    .map_err(|(k, m)| vars.bad(&format!("iofleet_{k}"), m))?;
    Ok(HostSpec {
        scrape,
        name: h.name.clone(),
        destination,
        target: target_arg(target, role),
        role,
        observe,
        workers,
        labels: BTreeMap::from([("group".to_string(), h.groups.join(","))]),
        iofleet_path: vars.text_of("iofleet_path")?,
        reach,
    })
}

/// One inventory host's variables, read and checked; `text` is the inventory's text,
/// to find the line of a variable the reader did not place.
struct HostVars<'h> {
    h: &'h Host,
    text: Option<&'h str>,
}

impl HostVars<'_> {
    /// The error for variable `k`, on its line when known.
    fn bad(&self, k: &str, what: String) -> VarError {
        let line = self
            .h
            .vars
            .get(k)
            .and_then(|v| v.line)
            .or_else(|| self.text.and_then(|t| find_line(t, k)));
        (line, format!("host '{}': {k}: {what}", self.h.name))
    }

    /// Refuse an unknown `iofleet_*` variable, Ansible's old connection names, and a
    /// template in any variable iofleet reads.
    fn check_names(&self) -> Result<(), VarError> {
        let h = self.h;
        if let Some(k) = h
            .vars
            .keys()
            .find(|k| k.starts_with("iofleet_") && !IOFLEET_VARS.contains(&k.as_str()))
        {
            return Err(self.bad(
                k,
                format!(
                    "unknown variable (iofleet reads {})",
                    IOFLEET_VARS.join(", ")
                ),
            ));
        }
        // Ansible's old names for the connection variables: reading them wrongly would
        // connect to another host, so they are refused rather than ignored.
        for (old, new) in [
            ("ansible_ssh_host", "ansible_host"),
            ("ansible_ssh_port", "ansible_port"),
            ("ansible_ssh_user", "ansible_user"),
        ] {
            if h.vars.contains_key(old) {
                return Err(self.bad(old, format!("not read by iofleet; write {new}")));
            }
        }
        // Ansible expands `{{ … }}` only when it runs a task; iofleet would pass it on as
        // written, so a variable it reads must not hold a template.
        let read = [
            "ansible_host",
            "ansible_user",
            "ansible_port",
            "ansible_ssh_private_key_file",
        ];
        for k in read.iter().chain(IOFLEET_VARS.iter()) {
            if h.vars
                .get(*k)
                .is_some_and(|v| v.value.to_string().contains("{{"))
            {
                return Err(self.bad(
                    k,
                    "holds a Jinja template ({{ … }}), which iofleet does not expand: write the value"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// Variable `k`'s value, unless unset or null.
    fn get(&self, k: &str) -> Option<&Value> {
        self.h
            .vars
            .get(k)
            .map(|v| &v.value)
            .filter(|v| !v.is_null())
    }

    /// Variable `k` as text (a number reads as its digits).
    fn text_of(&self, k: &str) -> Result<Option<String>, VarError> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(v) => Err(self.bad(k, format!("{} is not text", show(v)))),
        }
    }

    /// Variable `k` as a whole number in `min..=max` (a number, or text holding one).
    fn whole(&self, k: &str, min: u64, max: u64) -> Result<Option<u64>, VarError> {
        let n = match self.get(k) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(_) => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(self.bad(
                k,
                format!(
                    "{} is not a whole number in {min}..={max}",
                    show(self.get(k).expect("set"))
                ),
            )),
        }
    }

    /// `iofleet_target`: a path, or a non-empty list of device paths.
    fn target(&self) -> Result<Option<RawTarget>, VarError> {
        Ok(match self.get("iofleet_target") {
            None => None,
            Some(Value::String(s)) => Some(RawTarget::One(s.clone())),
            Some(Value::Array(a)) if !a.is_empty() && a.iter().all(Value::is_string) => {
                Some(RawTarget::Many(
                    a.iter()
                        .filter_map(|d| d.as_str().map(String::from))
                        .collect(),
                ))
            }
            Some(v) => {
                return Err(self.bad(
                    "iofleet_target",
                    format!("{} is neither a path nor a list of device paths", show(v)),
                ))
            }
        })
    }

    /// `iofleet_role`: workers (the default) or observer.
    fn role(&self) -> Result<Role, VarError> {
        Ok(match self.text_of("iofleet_role")?.as_deref() {
            None | Some("workers") => Role::Workers,
            Some("observer") => Role::Observer,
            Some(t) => {
                return Err(self.bad("iofleet_role", format!("'{t}' is not workers or observer")))
            }
        })
    }

    /// `iofleet_observe`: a list of entries, or one entry as text.
    fn observe(&self) -> Result<Vec<String>, VarError> {
        Ok(self.list_of("iofleet_observe")?.unwrap_or_default())
    }

    /// A variable holding a list of texts, or one text.
    fn list_of(&self, k: &str) -> Result<Option<Vec<String>>, VarError> {
        Ok(Some(match self.get(k) {
            None => return Ok(None),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(|e| e.as_str().map(String::from))
                .collect(),
            Some(v) => {
                return Err(self.bad(
                    k,
                    format!("{} is neither an entry nor a list of entries", show(v)),
                ))
            }
        }))
    }

    /// `iofleet_transport`: ssh (the default) or local.
    fn transport(&self) -> Result<Transport, VarError> {
        Ok(match self.text_of("iofleet_transport")?.as_deref() {
            None | Some("ssh") => Transport::Ssh,
            Some("local") => Transport::Local,
            Some(t) => {
                return Err(self.bad("iofleet_transport", format!("'{t}' is not ssh or local")))
            }
        })
    }
}

pub fn parse_toml(text: &str) -> Result<Vec<HostSpec>, String> {
    let raw: RawInventory = toml::from_str(text).map_err(|e| e.to_string())?;
    let default_pin = raw
        .defaults
        .workers
        .map(|w| pin(w).map_err(|m| format!("defaults.workers = {m}")))
        .transpose()?;
    raw.host
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            host_name(&h.destination)
                .map_err(|m| format!("host[{i}].destination: the host's address {m}"))?;
            if let Some(n) = &h.name {
                host_name(n).map_err(|m| format!("host[{i}].name: the host's name {m}"))?;
            }
            let name = h.name.unwrap_or_else(|| h.destination.clone());
            let own_pin = h
                .workers
                .map(|w| pin(w).map_err(|m| format!("host '{name}': workers = {m}")))
                .transpose()?;
            let mut ssh_options = raw.ssh.options.clone();
            ssh_options.extend(h.ssh_options);
            // An observer runs no workers: the default pin is not its.
            let observer = h.role == Role::Observer;
            let observe = observe_entries(h.role, h.observe)
                .map_err(|m| format!("host '{name}': observe: {m}"))?;
            let scrape = scrape_spec(h.role, h.scrape, h.metrics, h.preset)
                .map_err(|(k, m)| format!("host '{name}': {k}: {m}"))?;
            Ok(HostSpec {
                scrape,
                observe,
                name,
                destination: h.destination,
                target: target_arg(
                    if observer {
                        h.target
                    } else {
                        h.target.or_else(|| raw.defaults.target.clone())
                    },
                    h.role,
                ),
                workers: if observer {
                    own_pin
                } else {
                    own_pin.or(default_pin)
                },
                role: h.role,
                labels: h.labels,
                iofleet_path: h.iofleet_path,
                reach: h.transport.unwrap_or_default().reach(ssh_options),
            })
        })
        .collect()
}

/// The most workers a host may be pinned to, and the most all pins may add up to: a
/// fleet's (`fleet.workers`' range in the option table, as for `--workers`).
pub fn most_workers() -> u64 {
    *iofleet_profile::options::int_range("fleet.workers").end()
}

/// A worker pin as written (`workers`, `defaults.workers`), checked against the bound
/// before anything is sized by it. Zero is refused later (`check`), with the host's name.
fn pin(w: i64) -> Result<u32, String> {
    let most = most_workers();
    match u64::try_from(w) {
        Ok(n) if n <= most => Ok(n as u32),
        _ => Err(format!(
            "{w} is out of range 1..={most}: a host runs at most a fleet's workers (fleet.workers, --workers)"
        )),
    }
}

/// A host name or address as an inventory gives it: refused when empty or when it holds
/// a control character (a newline would split every line that names the host). The
/// error completes "the host's name …", showing the name escaped.
pub fn host_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("{name:?} is empty"));
    }
    match name.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "{:?} contains a control character ({})",
            name,
            c.escape_debug()
        )),
        None => Ok(()),
    }
}

fn check(hosts: &[HostSpec]) -> Result<(), String> {
    if hosts.is_empty() {
        return Err(
            "no hosts listed (add [[host]] entries, or hosts under [group] headers)".into(),
        );
    }
    let mut names = std::collections::BTreeSet::new();
    let mut pinned = 0u64;
    for h in hosts {
        if !names.insert(&h.name) {
            return Err(format!("host name '{}' appears twice", h.name));
        }
        pinned += h.workers.map_or(0, u64::from);
        if h.workers == Some(0) {
            return Err(format!("host '{}': workers must be at least 1", h.name));
        }
        if h.role == Role::Observer && h.workers.is_some() {
            return Err(format!(
                "host '{}': role = \"observer\" runs no workers; remove its workers pin",
                h.name
            ));
        }
    }
    if hosts.iter().all(|h| h.role == Role::Observer) {
        return Err("every host is an observer: at least one host must run workers".into());
    }
    check_pins_sum(pinned)
}

/// All pins together are at most a fleet's workers.
fn check_pins_sum(pinned: u64) -> Result<(), String> {
    let most = most_workers();
    if pinned > most {
        return Err(format!(
            "the hosts' workers pins add up to {pinned} workers, more than the {most} a fleet may have (fleet.workers is 1..={most}); pin fewer"
        ));
    }
    Ok(())
}

/// Place `total` workers: pinned hosts get their count; the rest is spread evenly over
/// the other worker hosts (earlier hosts take the remainder). Returns (first global
/// worker, count) per host; observers, and hosts that get no worker, have a count of 0.
pub fn place(hosts: &[HostSpec], total: u32) -> Result<Vec<(u32, u32)>, String> {
    // Summed wide: pins are bounded one by one, not yet in sum.
    let pinned: u64 = hosts.iter().filter_map(|h| h.workers).map(u64::from).sum();
    check_pins_sum(pinned)?;
    let free: Vec<usize> = (0..hosts.len())
        .filter(|&i| hosts[i].workers.is_none() && hosts[i].role == Role::Workers)
        .collect();
    let rest = if free.is_empty() {
        0
    } else {
        (total as u64).checked_sub(pinned).ok_or_else(|| {
            format!("the inventory pins {pinned} workers but the run has only {total} (--workers)")
        })? as u32
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
        assert_eq!(hosts[1].reach, ssh(&["-F", "cfg", "-p", "2222"]));
        assert!(matches!(hosts[1].target, TargetArg::Devices(ref v) if v.len() == 2));
        assert!(parse_toml("[[host]]\ndestination = \"a\"\ncolour = 1\n")
            .unwrap_err()
            .contains("colour"));
    }

    /// Reached over ssh with `options`.
    fn ssh(options: &[&str]) -> Reach {
        Reach::Ssh {
            options: options.iter().map(|o| o.to_string()).collect(),
        }
    }

    fn ini_hosts(text: &str) -> Result<Vec<HostSpec>, (Option<usize>, String)> {
        let inv = ini::parse(text).map_err(|e| (Some(e.line), e.message))?;
        host_specs(&inv, Some(text))
    }

    #[test]
    fn ansible_variables_become_destination_options_and_pins() {
        let hosts = ini_hosts(
            "# comment\n[storage]\nn1 ansible_host=10.0.0.1 ansible_user=root ansible_port=2222 iofleet_workers=2\nn2 ansible_ssh_private_key_file=~/.ssh/k iofleet_target=\"['/dev/a','/dev/b']\"\n[storage:vars]\nfoo=bar\niofleet_path=/usr/local/bin/iofleet\n[local]\nl1 iofleet_transport=local iofleet_target=/data\n",
        )
        .unwrap();
        assert_eq!(hosts.len(), 3);
        assert_eq!(hosts[0].destination, "root@10.0.0.1");
        assert_eq!(hosts[0].reach, ssh(&["-p", "2222"]));
        assert_eq!(hosts[0].workers, Some(2));
        assert_eq!(
            hosts[0].iofleet_path.as_deref(),
            Some("/usr/local/bin/iofleet")
        );
        assert_eq!(hosts[1].destination, "n2");
        assert_eq!(hosts[1].reach, ssh(&["-i", "~/.ssh/k"]));
        assert_eq!(
            hosts[1].target,
            TargetArg::Devices(vec!["/dev/a".into(), "/dev/b".into()])
        );
        assert_eq!(hosts[1].labels["group"], "storage");
        assert_eq!(hosts[1].target, hosts[1].target);
        assert_eq!(hosts[2].reach, Reach::Local);
        assert_eq!(hosts[2].target, TargetArg::Dir("/data".into()));
        assert_eq!(hosts[2].iofleet_path, None);
    }

    #[test]
    fn a_host_in_two_groups_runs_once_labelled_with_both() {
        let hosts =
            ini_hosts("[a]\nn1 iofleet_workers=2\n[b]\nn1\nn2\n[b:vars]\niofleet_workers=3\n")
                .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].name, "n1");
        assert_eq!(hosts[0].labels["group"], "a,b");
        assert_eq!(hosts[0].workers, Some(2));
        assert_eq!(hosts[1].workers, Some(3));
        assert!(check(&hosts).is_ok());
    }

    #[test]
    fn bad_iofleet_and_ansible_values_name_variable_and_line() {
        for (text, line, needle) in [
            (
                "[g]\nn1\nn2 iofleet_wrkers=3\n",
                3,
                "iofleet_wrkers: unknown variable",
            ),
            (
                "[g]\nn1\n[all:vars]\niofleet_wrkers=3\n",
                4,
                "iofleet_wrkers",
            ),
            (
                "n1 iofleet_workers=0\n",
                1,
                "iofleet_workers: 0 is not a whole number",
            ),
            ("n1 iofleet_workers=two\n", 1, "iofleet_workers: two"),
            ("n1 ansible_port=70000\n", 1, "ansible_port: 70000"),
            (
                "n1 iofleet_transport=kubectl\n",
                1,
                "'kubectl' is not ssh or local",
            ),
            ("n1 iofleet_target=\"[1]\"\n", 1, "iofleet_target"),
            ("n1 ansible_user=\"['a']\"\n", 1, "is not text"),
            (
                "[g:vars]\nansible_ssh_host=10.0.0.1\n[g]\nn1\n",
                2,
                "write ansible_host",
            ),
            (
                "n1 ansible_host=\"{{ inventory_hostname }}.lan\"\n",
                1,
                "Jinja template",
            ),
        ] {
            let (l, m) = ini_hosts(text).unwrap_err();
            assert_eq!(l, Some(line), "{text:?}: {m}");
            assert!(m.contains(needle), "{text:?}: {m}");
        }
        // Variables resolved by ansible-inventory carry no line: it is found in the text.
        assert_eq!(
            find_line("[g]\nn1 iofleet_wrkers=3\n", "iofleet_wrkers"),
            Some(2)
        );
        assert_eq!(
            find_line("all:\n  vars:\n    iofleet_wrkers: 3\n", "iofleet_wrkers"),
            Some(3)
        );
        assert_eq!(find_line("x_iofleet_wrkers=3\n", "iofleet_wrkers"), None);
    }

    #[test]
    fn load_names_file_and_line_and_refuses_what_native_cannot_read() {
        let d = tempfile::tempdir().unwrap();
        let ini = d.path().join("hosts");
        std::fs::write(&ini, "[nodes\nn1\n").unwrap();
        let e = load_with(&ini, Reader::Native).unwrap_err().to_string();
        assert!(e.contains(&format!("{}, line 1", ini.display())), "{e}");
        let yaml = d.path().join("hosts.yml");
        std::fs::write(&yaml, "all:\n  hosts:\n    n1:\n").unwrap();
        let e = load_with(&yaml, Reader::Native).unwrap_err().to_string();
        assert!(e.contains("ansible-inventory"), "{e}");
        std::fs::write(&ini, "n1\n").unwrap();
        assert_eq!(load_with(&ini, Reader::Native).unwrap()[0].name, "n1");
        std::fs::create_dir(d.path().join("group_vars")).unwrap();
        let e = load_with(&ini, Reader::Native).unwrap_err().to_string();
        assert!(e.contains("group_vars/"), "{e}");
        let e = load_with(&d.path().join("absent"), Reader::Native)
            .unwrap_err()
            .to_string();
        assert!(e.contains("absent"), "{e}");
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
            reach: ssh(&[]),
            role: Role::Workers,
            observe: Vec::new(),
            scrape: None,
        };
        let hosts = vec![h(None), h(Some(4)), h(None), h(None)];
        let p = place(&hosts, 11).unwrap();
        assert_eq!(p, vec![(0, 3), (3, 4), (7, 2), (9, 2)]);
        assert!(place(&hosts, 3).unwrap_err().contains("pins 4"));
        let pinned = vec![h(Some(2)), h(Some(5))];
        assert_eq!(place(&pinned, 99).unwrap(), vec![(0, 2), (2, 5)]);
        // An observer takes no worker: the others share the fleet.
        let mut observed = vec![h(None), h(None), h(None)];
        observed[1].role = Role::Observer;
        assert_eq!(place(&observed, 5).unwrap(), vec![(0, 3), (3, 0), (3, 2)]);
    }

    #[test]
    fn worker_pins_are_bounded_one_by_one_and_in_sum() {
        let host = |w: &str| format!("[[host]]\ndestination = \"h\"\nworkers = {w}\n");
        for (text, needle) in [
            (
                host("1000000000"),
                "host 'h': workers = 1000000000 is out of range 1..=65536",
            ),
            (
                host("-3"),
                "host 'h': workers = -3 is out of range 1..=65536",
            ),
            (
                format!(
                    "[defaults]\nworkers = 70000\n{}",
                    host("1").replace("workers = 1\n", "")
                ),
                "defaults.workers = 70000 is out of range 1..=65536",
            ),
        ] {
            let e = parse_toml(&text).unwrap_err();
            assert!(
                e.contains(needle) && e.contains("fleet.workers"),
                "{text}: {e}"
            );
        }
        let at_most = parse_toml(&host("65536")).unwrap();
        assert_eq!(at_most[0].workers, Some(65536));
        // Each pin within the bound, their sum past it.
        let two = parse_toml(
            "[defaults]\nworkers = 65536\n[[host]]\ndestination = \"a\"\n[[host]]\ndestination = \"b\"\n",
        )
        .unwrap();
        let e = check(&two).unwrap_err();
        assert!(
            e.contains("pins add up to 131072 workers, more than the 65536"),
            "{e}"
        );
        assert!(place(&two, 10).unwrap_err().contains("131072"));
        let (_, m) = ini_hosts("n1 iofleet_workers=70000\n").unwrap_err();
        assert!(
            m.contains("iofleet_workers: 70000 is not a whole number in 1..=65536"),
            "{m}"
        );
    }

    #[test]
    fn empty_and_control_character_host_names_are_refused_naming_the_key() {
        let toml = |dest: &str, name: &str| format!("[[host]]\ndestination = {dest:?}\n{name}");
        for (text, needle) in [
            (toml("", ""), "host[0].destination: the host's address \"\" is empty"),
            (toml("  ", ""), "host[0].destination: the host's address \"  \" is empty"),
            (
                toml("a\nb", ""),
                "host[0].destination: the host's address \"a\\nb\" contains a control character (\\n)",
            ),
            (
                toml("h", "name = \"\"\n"),
                "host[0].name: the host's name \"\" is empty",
            ),
            (
                toml("h", "name = \"x\\u001b[2J\"\n"),
                "host[0].name: the host's name \"x\\u{1b}[2J\" contains a control character (\\u{1b})",
            ),
        ] {
            let e = parse_toml(&text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        for (text, line, needle) in [
            (
                "[g]\n'' ansible_user=root\n",
                2,
                "the host name \"\" is empty",
            ),
            (
                "[g]\n'n\x07[1:3]'\n",
                2,
                "the host name \"n\\u{7}[1:3]\" contains a control character",
            ),
        ] {
            let (l, m) = ini_hosts(text).unwrap_err();
            assert_eq!(l, Some(line), "{text:?}: {m}");
            assert!(m.contains(needle), "{text:?}: {m}");
        }
        let (l, m) = ini_hosts("[g]\nn1 ansible_host=''\n").unwrap_err();
        assert_eq!(l, Some(2));
        assert!(m.contains("host 'n1': ansible_host: \"\" is empty"), "{m}");
        // What ansible-inventory resolves (YAML can name any host) is checked too.
        let inv = Inventory::from_list_json(
            r#"{"all": {"hosts": ["ok", "bad\nname"]}, "_meta": {"hostvars": {}}}"#,
        )
        .unwrap();
        let (_, m) = host_specs(&inv, None).unwrap_err();
        assert!(
            m.contains("the inventory's host name \"bad\\nname\" contains a control character"),
            "{m}"
        );
    }

    #[test]
    fn a_list_of_directories_spreads_disks_over_them_a_list_under_dev_is_devices() {
        let hosts = parse_toml(
            "[[host]]\ndestination = \"a\"\ntarget = [\"/mnt/ssd1/io\", \"/mnt/ssd2/io\"]\n\
             [[host]]\ndestination = \"b\"\ntarget = [\"/dev/sdb\", \"/dev/sdc\"]\n\
             [[host]]\ndestination = \"c\"\ntarget = [\"/mnt/only\"]\n",
        )
        .unwrap();
        assert_eq!(
            hosts[0].target,
            TargetArg::Dirs(vec!["/mnt/ssd1/io".into(), "/mnt/ssd2/io".into()])
        );
        assert_eq!(
            hosts[1].target,
            TargetArg::Devices(vec!["/dev/sdb".into(), "/dev/sdc".into()])
        );
        // A list of one is read as before: a device list (checked as such on the host).
        assert_eq!(
            hosts[2].target,
            TargetArg::Devices(vec!["/mnt/only".into()])
        );
        let ini = ini_hosts("n1 iofleet_target=\"['/data1', '/data2']\"\n").unwrap();
        assert_eq!(
            ini[0].target,
            TargetArg::Dirs(vec!["/data1".into(), "/data2".into()])
        );
    }

    #[test]
    fn observers_in_toml_and_ini() {
        let hosts = parse_toml(
            "[defaults]\ntarget = \"/data\"\nworkers = 2\n\
             [[host]]\ndestination = \"w1\"\n\
             [[host]]\ndestination = \"s1\"\nrole = \"observer\"\n\
             [[host]]\ndestination = \"s2\"\nrole = \"observer\"\ntarget = [\"/dev/nvme0n1\"]\n",
        )
        .unwrap();
        check(&hosts).unwrap();
        assert_eq!(hosts[0].role, Role::Workers);
        assert_eq!(hosts[0].workers, Some(2));
        // The defaults are the worker hosts': an observer watches every disk unless its
        // own target says what.
        assert_eq!(hosts[1].role, Role::Observer);
        assert_eq!(hosts[1].workers, None);
        assert_eq!(hosts[1].target, TargetArg::Devices(vec![]));
        assert_eq!(
            hosts[2].target,
            TargetArg::Devices(vec!["/dev/nvme0n1".into()])
        );
        let ini = ini_hosts("[w]\nw1\n[s]\ns1 iofleet_role=observer\n").unwrap();
        assert_eq!(ini[1].role, Role::Observer);
        assert_eq!(ini[0].role, Role::Workers);
        let (_, m) = ini_hosts("n1 iofleet_role=storage\n").unwrap_err();
        assert!(
            m.contains("iofleet_role: 'storage' is not workers or observer"),
            "{m}"
        );
        // An observer with a pin, a fleet of observers only, an unknown role.
        let pinned = parse_toml("[[host]]\ndestination = \"w\"\n[[host]]\ndestination = \"s\"\nrole = \"observer\"\nworkers = 1\n").unwrap();
        assert!(check(&pinned)
            .unwrap_err()
            .contains("host 's': role = \"observer\" runs no workers"));
        let only = parse_toml("[[host]]\ndestination = \"s\"\nrole = \"observer\"\n").unwrap();
        assert!(check(&only)
            .unwrap_err()
            .contains("every host is an observer"));
        let e = parse_toml("[[host]]\ndestination = \"s\"\nrole = \"storage\"\n").unwrap_err();
        assert!(e.contains("role") || e.contains("storage"), "{e}");
    }
}
