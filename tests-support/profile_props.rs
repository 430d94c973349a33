//! What the property tests of the profile model and of its importers share (included with
//! `#[path]` by `crates/profile/tests/properties.rs` and `crates/import/tests/properties.rs`):
//! proptest's settings, `key = value` lines generated from a table of right and wrong
//! values per key, and the two checks every outcome gets: a resolved plan within the
//! option table's bounds, and a profile error that names its key.

use iofleet_profile::options::option;
use iofleet_profile::{Context, Plan, ProfileError};
use proptest::prelude::*;
use proptest::sample::select;

const CASES: u32 = 96;

/// A modest case count for the suite (the fuzz targets go further), no failure files.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Direct I/O, the default a profile is resolved in.
pub const DIRECT: Context = Context { direct: true };

/// A plan's integers and numbers are within the option table's ranges.
pub fn assert_within_bounds(plan: &Plan) {
    let check = |key: &str, v: f64| {
        if let Err(m) = option(key).check(v) {
            panic!("{key} = {v}: {m}");
        }
    };
    let f = &plan.fleet;
    check("fleet.workers", f.workers.into());
    check("fleet.disks_per_worker", f.disks_per_worker.into());
    check("fleet.threads_per_disk", f.threads_per_disk.into());
    check("fleet.qd", f.qd.into());
    for s in &plan.streams {
        check("stream.read_pct", s.read_pct);
        check("stream.random_pct", s.random_pct);
        check("stream.working_set_pct", s.working_set_pct);
        assert!(s.disks.iter().all(|&d| d < f.disks_per_worker), "{s:?}");
        assert!(s.bs.max() <= f.disk_size, "{s:?}");
    }
}

/// A profile error names its key (or, for TOML syntax, a line) and no flag.
pub fn assert_names_key(e: &ProfileError) {
    let msg = e.to_string();
    match e {
        ProfileError::Parse { key: None, .. } => assert!(msg.contains("line "), "{msg}"),
        ProfileError::Read { .. } | ProfileError::UnknownProfile { .. } => {
            panic!("not a parse or value error: {msg}")
        }
        _ => {
            let key = e.key().unwrap_or_else(|| panic!("no key: {msg}"));
            assert!(!key.is_empty() && msg.contains(key), "{msg}");
            assert_eq!(e.flag(), None, "{msg}");
        }
    }
}

/// `key = value` lines of a table: each key present with probability `p`, its value
/// one of the key's valid ones nine times in ten, else one of its wrong ones.
pub fn table(keys: &'static [Key], p: f64) -> impl Strategy<Value = String> {
    keys.iter()
        .map(|&(k, good, bad)| {
            let value = match (good.is_empty(), bad.is_empty()) {
                (_, true) => select(good).boxed(),
                (true, false) => select(bad).boxed(),
                (false, false) => prop_oneof![9 => select(good), 1 => select(bad)].boxed(),
            };
            proptest::option::weighted(p, value.prop_map(move |v| format!("{k} = {v}\n")))
        })
        .collect::<Vec<_>>()
        .prop_map(|lines| lines.into_iter().flatten().collect())
}

/// A key, values it takes and values it refuses.
pub type Key = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// Sizes a stream may use, each a multiple of the direct-I/O sector.
pub const SIZES: [u64; 6] = [512, 4096, 8192, 65536, 131072, 1 << 20];
