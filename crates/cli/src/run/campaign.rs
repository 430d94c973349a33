//! Campaigns: the steps of one `sweep --vary` or `find-max` as one whole that survives a
//! crash (`--resume`). A campaign has an id (8 hex digits, printed when it begins) and a
//! fingerprint of what decides its steps: the profile (its name and the digest of its
//! text, and of every `--group`, `--fio` or `--vdbench` file), the flags as given, and
//! the fleet (`--target`, `--hosts` with the digest of the inventory file or directory,
//! `--listen`/`--expect`, `--min-hosts`); existing paths compared canonical. Flags that
//! only change how the result is shown or kept (`--quiet`, `--json`, `--ui`,
//! `--metrics-listen`, `--db`, …) are not part of it. Every step's
//! stored run carries the id (label `campaign`) and the fingerprint (label
//! `campaign.fp`); the last step of a campaign that ran to its end is labelled
//! `campaign.end`.
//!
//! `--resume=ID` continues that campaign, `--resume` alone the latest unfinished one of
//! the same command and name whose fingerprint is this command's. Either is refused
//! (exit 2, naming each difference) when the fingerprint differs, and while the campaign
//! is still under way (a run of it being recorded, or its latest run's recording process
//! alive). A step is finished when its run is stored
//! complete (or complete with hosts lost); an interrupted or killed step's run stays in
//! the store as it is and the step runs again. The commands use `finished` to take a
//! step's stored result instead of measuring it. This module does not decide which
//! steps a command runs: a sweep's are fixed, a find-max replays its search over the
//! stored results, which decide as the measurements did.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::Args;
use iofleet_stats::result::{RunResult, StoredRun};
use iofleet_store::{ListFilter, RunListing, RunStatus, Store};
use sha2::{Digest, Sha256};

use crate::args::RunArgs;
use crate::exit::Exit;
use crate::store::record::{store_exit, DbArg};

/// `--resume[=ID]`.
#[derive(Args, Debug, Clone, Default)]
pub struct ResumeArg {
    /// Continue a campaign that stopped (a crash, a kill, Ctrl-C) without running its
    /// finished steps again: `--resume=ID` the campaign of that id (printed when it
    /// began, and the label `campaign` of its runs), `--resume` alone the latest
    /// unfinished one of this name with the same profile, flags and fleet. Refused when
    /// the profile, flags or fleet differ (docs/campaigns.md).
    #[arg(
        long,
        value_name = "ID",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "latest"
    )]
    pub resume: Option<String>,
}

/// The label of a step's campaign id.
pub(crate) const ID_LABEL: &str = "campaign";
/// The label of the campaign's fingerprint (JSON).
pub(crate) const FP_LABEL: &str = "campaign.fp";
/// The label of the last step of a campaign that ran to its end.
pub(crate) const END_LABEL: &str = "campaign.end";
/// The labels a campaign sets on every step.
pub(crate) const LABELS: [&str; 3] = [ID_LABEL, FP_LABEL, END_LABEL];

/// What decides a campaign's steps, in three parts, each flag or file to its value.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Fingerprint {
    pub profile: BTreeMap<String, String>,
    pub flags: BTreeMap<String, String>,
    pub fleet: BTreeMap<String, String>,
}

/// Flags that only change how a result is shown or kept, or how long to wait.
const NOT_PART: [&str; 21] = [
    "--resume",
    "--quiet",
    "--json",
    "--ui",
    "--metrics-listen",
    "--allow-host",
    "--token-file",
    "--db",
    "--intervals",
    "--wide",
    "--convention",
    "--join-timeout",
    "--join-file",
    "--advertise",
    "--host-timeout",
    "--output",
    "--output-format",
    "--max-uploads",
    "--cleanup",
    "--dry-run",
    "--no-save",
];
/// Flags that say which fleet runs the steps.
const FLEET: [&str; 7] = [
    "--target",
    "--hosts",
    "--listen",
    "--expect",
    "--min-hosts",
    "--tolerate-host-loss",
    "--diskspd-map",
];
/// Flags (and the positional profile) that name the workload's files.
const PROFILE: [&str; 10] = [
    "PROFILE",
    "--group",
    "--fio",
    "--fio-job",
    "--fio-ignore",
    "--vdbench",
    "--vdbench-step",
    "--diskspd",
    "--iometer",
    "--iometer-spec",
];
/// Flags whose values are paths: an existing one is taken as its canonical path, so the
/// same file named from another directory is the same fleet or workload.
const PATHS: [&str; 7] = [
    "PROFILE",
    "--fio",
    "--vdbench",
    "--iometer",
    "--hosts",
    "--target",
    "--diskspd-map",
];
/// The most bytes of a directory (an inventory's `group_vars/`, `host_vars/`) digested.
const DIR_DIGEST_MAX: u64 = 64 << 20;

/// The first 16 hex digits of the SHA-256 of `bytes`.
fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digest of the file a profile, group or inventory names: the file's text, every
/// file under a directory (an Ansible inventory directory; by relative path, in order),
/// a built-in profile's text, or none.
fn text_digest(name: &str) -> Option<String> {
    let path = std::path::Path::new(name);
    if path.is_file() {
        return std::fs::read(path).ok().map(|b| digest(&b));
    }
    if path.is_dir() {
        let mut files = Vec::new();
        collect_files(path, path, &mut files);
        files.sort();
        let mut all = Vec::new();
        let mut total = 0u64;
        for rel in files {
            let bytes = std::fs::read(path.join(&rel)).unwrap_or_default();
            total += bytes.len() as u64;
            if total > DIR_DIGEST_MAX {
                break;
            }
            all.extend_from_slice(rel.as_bytes());
            all.push(0);
            all.extend_from_slice(&digest(&bytes).into_bytes());
            all.push(b'\n');
        }
        return Some(digest(&all));
    }
    iofleet_profile::builtin_source(name).map(|t| digest(t.as_bytes()))
}

/// Every regular file under `dir` (not following symbolic links to directories), as
/// paths relative to `root`.
fn collect_files(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => collect_files(root, &p, out),
            Ok(_) if p.is_file() => {
                if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.to_string_lossy().into_owned());
                }
            }
            _ => {}
        }
    }
}

/// An existing path as its canonical path; anything else as given.
fn canonical(value: &str) -> String {
    std::fs::canonicalize(value)
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| value.to_string())
}

impl Fingerprint {
    /// The fingerprint of the command line `argv` (program name, then the subcommand
    /// whose arguments are `A`), as `A` parses it: every argument given on the command
    /// line, by its flag.
    pub fn of<A: Args>(argv: impl IntoIterator<Item = OsString>) -> Fingerprint {
        let mut fp = Fingerprint::default();
        let mut argv = argv.into_iter().skip(1);
        let Some(name) = argv.next() else {
            return fp;
        };
        let name = name.to_string_lossy().into_owned();
        let sc = A::augment_args(clap::Command::new("iofleet"));
        let Ok(sub) = sc
            .clone()
            .try_get_matches_from(std::iter::once(OsString::from(&name)).chain(argv))
        else {
            return fp;
        };
        fp.flags.insert("command".into(), name);
        for arg in sc.get_arguments() {
            let id = arg.get_id().as_str();
            if sub.value_source(id) != Some(ValueSource::CommandLine) {
                continue;
            }
            let Some(raw) = sub.get_raw(id) else {
                continue;
            };
            let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
            let flag = arg
                .get_long()
                .map_or_else(|| id.to_uppercase(), |l| format!("--{l}"));
            fp.insert(&flag, values);
        }
        fp
    }

    /// File one flag's values under its part, with the digest of each file it names.
    fn insert(&mut self, flag: &str, values: Vec<String>) {
        if NOT_PART.contains(&flag) {
            return;
        }
        let part = if FLEET.contains(&flag) {
            &mut self.fleet
        } else if PROFILE.contains(&flag) {
            &mut self.profile
        } else {
            &mut self.flags
        };
        let values: Vec<String> = if PATHS.contains(&flag) {
            values.iter().map(|v| canonical(v)).collect()
        } else {
            values
        };
        if matches!(
            flag,
            "PROFILE"
                | "--group"
                | "--fio"
                | "--hosts"
                | "--vdbench"
                | "--iometer"
                | "--diskspd-map"
        ) {
            for v in &values {
                // A group is NAME=PROFILE[:WORKERS].
                let file = match flag {
                    "--group" => {
                        let p = v.split_once('=').map_or(v.as_str(), |(_, p)| p);
                        match p.rsplit_once(':') {
                            Some((f, n)) if n.parse::<u64>().is_ok() => f,
                            _ => p,
                        }
                    }
                    _ => v.as_str(),
                };
                if let Some(d) = text_digest(file) {
                    part.insert(format!("text of {file}"), d);
                }
            }
        }
        part.insert(flag.to_string(), values.join(" "));
    }

    pub fn to_json(&self) -> String {
        serde_json::json!({
            "profile": self.profile,
            "flags": self.flags,
            "fleet": self.fleet,
        })
        .to_string()
    }

    pub fn from_json(s: &str) -> Option<Fingerprint> {
        let v: serde_json::Value = serde_json::from_str(s).ok()?;
        let part = |k: &str| -> Option<BTreeMap<String, String>> {
            serde_json::from_value(v.get(k)?.clone()).ok()
        };
        Some(Fingerprint {
            profile: part("profile")?,
            flags: part("flags")?,
            fleet: part("fleet")?,
        })
    }

    /// What differs from `was` to `self`, one line each: `flags: --qd was 8, now 16`.
    pub fn changes_since(&self, was: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        for (part, a, b) in [
            ("profile", &was.profile, &self.profile),
            ("flags", &was.flags, &self.flags),
            ("fleet", &was.fleet, &self.fleet),
        ] {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let line = match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) if x == y => continue,
                    (Some(_), Some(_)) if k.starts_with("text of ") => {
                        format!("{part}: the {k} changed")
                    }
                    (Some(x), Some(y)) => format!("{part}: {k} was '{x}', now '{y}'"),
                    (Some(x), None) => format!("{part}: {k} '{x}' was given, now it is not"),
                    (None, Some(y)) => format!("{part}: {k} '{y}' was not given"),
                    (None, None) => continue,
                };
                out.push(line);
            }
        }
        out
    }
}

/// One campaign under way: its id, its fingerprint, and the steps already finished in
/// the store (by their `step` label).
pub(crate) struct Campaign {
    pub id: String,
    fp: Fingerprint,
    done: BTreeMap<String, RunResult>,
    /// The store it is kept in (None with --no-save).
    db: Option<Option<PathBuf>>,
}

impl Campaign {
    /// Begin a campaign of `kind` (the label naming the command's steps: `sweep`,
    /// `findmax`) named `name` for the arguments `a`, or resume one (`resume`: an id or
    /// `latest`).
    pub fn open(
        a: &RunArgs,
        resume: Option<&str>,
        kind: &str,
        name: &str,
        fp: Fingerprint,
    ) -> Result<Campaign, Exit> {
        let db = (!a.save.no_save).then(|| a.save.db.clone());
        let Some(resume) = resume else {
            let seed = format!(
                "{:?} {} {}",
                std::time::SystemTime::now(),
                std::process::id(),
                fp.to_json()
            );
            return Ok(Campaign {
                id: digest(seed.as_bytes())[..8].to_string(),
                fp,
                done: BTreeMap::new(),
                db,
            });
        };
        let Some(path) = &db else {
            return Err(Exit::input(
                "--resume: a campaign is resumed from the results store; drop --no-save",
            ));
        };
        if a.steady_state {
            return Err(Exit::input(
                "--resume: a campaign measured with --steady-state cannot be resumed: each \
                 round of a step is a run of its own, and a step stopped between rounds \
                 would look finished; run it again without --resume",
            ));
        }
        let store = DbArg { db: path.clone() }.open()?;
        let runs = store
            .list(&ListFilter {
                labels: vec![(kind.to_string(), name.to_string())],
                profile: None,
            })
            .map_err(store_exit)?;
        let id = choose(&runs, resume, kind, name, &fp)?;
        let mine: Vec<&RunListing> = runs
            .iter()
            .filter(|r| r.meta.labels.get(ID_LABEL) == Some(&id))
            .collect();
        // A run being recorded, or (between two steps) a latest run whose recording
        // process still lives.
        let busy = mine
            .iter()
            .find(|r| r.meta.status == RunStatus::Running)
            .or_else(|| mine.last().filter(|r| recorder_alive(r)));
        if let Some(r) = busy {
            return Err(Exit::input(format!(
                "--resume: campaign {id} is still running (its run {} was recorded by process {}, which still runs); wait for it or stop it first",
                r.meta.id,
                r.meta.recorder_pid.map_or("?".to_string(), |p| p.to_string())
            )));
        }
        let mut done = BTreeMap::new();
        for r in mine {
            if !matches!(r.meta.status, RunStatus::Complete | RunStatus::HostsLost) {
                continue;
            }
            let Some(step) = r.meta.labels.get("step") else {
                continue;
            };
            done.insert(step.clone(), stored_result(&store, r)?);
        }
        Ok(Campaign { id, fp, done, db })
    }

    /// The labels every step of the campaign carries.
    pub fn labels(&self) -> [(String, String); 2] {
        [
            (ID_LABEL.to_string(), self.id.clone()),
            (FP_LABEL.to_string(), self.fp.to_json()),
        ]
    }

    /// The stored result of step `step` (its `step` label), when it finished before.
    pub fn finished(&self, step: &str) -> Option<RunResult> {
        self.done.get(step).cloned()
    }

    /// Say on stderr which campaign this is: its id, and how to resume it.
    pub fn announce(&self, what: &str, quiet: bool) {
        if quiet {
            return;
        }
        match (self.db.is_some(), self.done.is_empty()) {
            (false, _) => {}
            (true, true) => eprintln!(
                "campaign {}: {what}; if it stops, continue it with --resume={}",
                self.id, self.id
            ),
            (true, false) => eprintln!(
                "campaign {} resumed: {what}; {} finished step(s) taken from the store",
                self.id,
                self.done.len()
            ),
        }
    }

    /// The campaign ran to its end (`end` says how) and its last step's run is `last`:
    /// label that run so `--resume` alone passes the campaign by (a warning if the store
    /// refuses).
    pub fn end(&self, last: Option<&str>, end: &str) {
        let (Some(db), Some(id)) = (&self.db, last) else {
            return;
        };
        let path = match db {
            Some(p) => Ok(p.clone()),
            None => iofleet_store::default_path(),
        };
        let done = path
            .and_then(|p| Store::open(&p))
            .and_then(|mut s| s.set_label(id, END_LABEL, end));
        if let Err(e) = done {
            eprintln!("warning: could not mark campaign {} as ended: {e}", self.id);
        }
    }
}

/// The campaign `resume` names among `runs` (all of command `kind` named `name`): the
/// id given, or the latest unfinished one with fingerprint `fp`. Refused when it does
/// not exist or its fingerprint is not `fp`.
fn choose(
    runs: &[RunListing],
    resume: &str,
    kind: &str,
    name: &str,
    fp: &Fingerprint,
) -> Result<String, Exit> {
    // Campaigns in the order they began, with their fingerprint and whether they ended.
    let mut campaigns: Vec<(String, Option<Fingerprint>, bool)> = Vec::new();
    for r in runs {
        let Some(id) = r.meta.labels.get(ID_LABEL) else {
            continue;
        };
        let ended = r.meta.labels.contains_key(END_LABEL);
        match campaigns.iter_mut().find(|c| &c.0 == id) {
            Some(c) => c.2 |= ended,
            None => campaigns.push((
                id.clone(),
                r.meta
                    .labels
                    .get(FP_LABEL)
                    .and_then(|s| Fingerprint::from_json(s)),
                ended,
            )),
        }
    }
    let refuse = |id: &str, was: &Option<Fingerprint>| {
        let changes = match was {
            Some(was) => fp.changes_since(was),
            None => vec!["its runs carry no fingerprint".to_string()],
        };
        Exit::input(format!(
            "--resume: campaign {id} was begun with another profile, flags or fleet, so its \
             finished steps are not this command's: {}; run without --resume to begin a new campaign",
            changes.join("; ")
        ))
    };
    if resume != "latest" {
        let Some((id, was, _)) = campaigns.iter().find(|c| c.0 == resume) else {
            return Err(Exit::input(format!(
                "--resume={resume}: no campaign {resume} of {kind} {name} in the results store"
            )));
        };
        if was.as_ref() != Some(fp) {
            return Err(refuse(id, was));
        }
        return Ok(id.clone());
    }
    let unfinished: Vec<&(String, Option<Fingerprint>, bool)> =
        campaigns.iter().filter(|c| !c.2).collect();
    if let Some(c) = unfinished.iter().rev().find(|c| c.1.as_ref() == Some(fp)) {
        return Ok(c.0.clone());
    }
    match unfinished.last() {
        Some((id, was, _)) => Err(refuse(id, was)),
        None => Err(Exit::input(format!(
            "--resume: no unfinished campaign of {kind} {name} in the results store; run without --resume to begin one"
        ))),
    }
}

/// The process that recorded `r` still runs on this machine (the store matches its pid
/// and start time), and is not this one: its campaign is under way.
fn recorder_alive(r: &RunListing) -> bool {
    r.meta.recorder_alive && r.meta.recorder_pid != Some(i64::from(std::process::id()))
}

/// A finished step's result as the store recomputes it, with its stored run.
fn stored_result(store: &Store, r: &RunListing) -> Result<RunResult, Exit> {
    let a = store.analyze(&r.meta.id).map_err(store_exit)?;
    let mut result = a.result;
    result.stored = Some(StoredRun {
        id: r.meta.id.clone(),
        name: r.meta.name.clone(),
        labels: r.meta.labels.clone(),
        status: r.meta.status.as_str().to_string(),
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command's arguments as `sweep` has them.
    #[derive(clap::Args, Debug)]
    struct Sweep {
        #[arg(long)]
        vary: Vec<String>,
        #[command(flatten)]
        resume: ResumeArg,
        #[command(flatten)]
        run: RunArgs,
    }

    fn fp(args: &[&str]) -> Fingerprint {
        Fingerprint::of::<Sweep>(
            std::iter::once("iofleet")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    #[test]
    fn the_fingerprint_keeps_what_decides_the_steps_and_nothing_else() {
        let a = fp(&[
            "sweep",
            "easy-run-4k100r",
            "--qd",
            "8",
            "--vary",
            "bs=4k,8k",
            "--target",
            "/x",
        ]);
        assert_eq!(a.flags.get("--qd").map(String::as_str), Some("8"));
        assert_eq!(a.flags.get("--vary").map(String::as_str), Some("bs=4k,8k"));
        assert_eq!(a.fleet.get("--target").map(String::as_str), Some("/x"));
        assert_eq!(
            a.profile.get("PROFILE").map(String::as_str),
            Some("easy-run-4k100r")
        );
        assert!(a.profile.contains_key("text of easy-run-4k100r"), "{a:?}");
        // How the result is shown or kept is not part of it.
        let b = fp(&[
            "sweep",
            "easy-run-4k100r",
            "--qd",
            "8",
            "--vary",
            "bs=4k,8k",
            "--target",
            "/x",
            "--json",
            "--quiet",
            "--resume",
            "--db",
            "/y",
        ]);
        assert_eq!(a, b);
        assert_eq!(Fingerprint::from_json(&a.to_json()), Some(a));
    }

    /// How hosts are reached and results shown is not part of it (labels are: they tell
    /// configurations apart in `compare --best`); a path is
    /// the same path however it is named; a directory is digested by its files.
    #[test]
    fn outputs_are_left_out_paths_are_canonical_and_directories_digested() {
        let d = tempfile::tempdir().unwrap();
        let inv = d.path().join("inventory");
        std::fs::create_dir_all(inv.join("group_vars")).unwrap();
        std::fs::write(inv.join("hosts.ini"), "[fleet]\na\n").unwrap();
        std::fs::write(inv.join("group_vars/all.yml"), "x: 1\n").unwrap();
        let inv_s = inv.to_str().unwrap();
        let roundabout = format!("{}/group_vars/..", inv_s);
        let base = ["sweep", "easy-run-4k100r", "--vary", "qd=1,2", "--hosts"];
        let with = |hosts: &str, extra: &[&str]| {
            let mut a: Vec<&str> = base.to_vec();
            a.push(hosts);
            a.extend_from_slice(extra);
            fp(&a)
        };
        let a = with(inv_s, &[]);
        assert!(a.fleet.keys().any(|k| k.starts_with("text of ")), "{a:?}");
        let b = with(&roundabout, &["--max-uploads", "4", "--quiet"]);
        assert_eq!(a, b);
        // A change inside the directory is a change of the fleet.
        std::fs::write(inv.join("group_vars/all.yml"), "x: 2\n").unwrap();
        let c = with(inv_s, &[]);
        assert_ne!(a, c);
        assert!(
            c.changes_since(&a)
                .iter()
                .any(|l| l.starts_with("fleet: the text of") && l.ends_with("changed")),
            "{:?}",
            c.changes_since(&a)
        );
    }

    #[test]
    fn what_changed_is_named_by_part_and_flag() {
        let was = fp(&[
            "sweep",
            "easy-run-4k100r",
            "--qd",
            "8",
            "--vary",
            "bs=4k,8k",
        ]);
        let now = fp(&[
            "sweep",
            "easy-run-4k70r",
            "--qd",
            "16",
            "--vary",
            "bs=4k,8k",
            "--target",
            "/x",
            "--seed",
            "2",
        ]);
        let c = now.changes_since(&was);
        for says in [
            "profile: PROFILE was 'easy-run-4k100r', now 'easy-run-4k70r'",
            "flags: --qd was '8', now '16'",
            "flags: --seed '2' was not given",
            "fleet: --target '/x' was not given",
        ] {
            assert!(c.iter().any(|l| l == says), "{says} not in {c:?}");
        }
        assert!(now.changes_since(&now).is_empty());
    }
}
