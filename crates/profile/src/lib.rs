//! iofleet's workload model: profiles as written (TOML) → a validated, resolved [`Plan`].
//!
//! A profile is the fleet shape, the timing and one or more streams (access patterns).
//! This crate parses profile files (`raw`), holds the built-in profiles (`builtin`,
//! embedded from the top-level `profiles/` directory), defines every option once
//! (`options`), and turns raw profile + command-line [`Overrides`] into a [`Plan`]
//! (`validate`), naming the key or flag that fixes any problem; `flags` is the default
//! shape of a run given no profile, `totals` what a fleet of groups adds up to (bounded
//! in checked arithmetic), and `emit` prints a resolved plan back as profile TOML.
//! It does no I/O beyond reading a profile file, and knows nothing about engines,
//! workers or results.
//!
//! What reads other formats into this model lives elsewhere and depends on this crate,
//! never the reverse: `iofleet-import` (fio job files into raw profiles, I/O traces into
//! plans) and `iofleet-capacity` (a cluster hardware file and the theoretical ceiling of
//! a plan's mix on it). They use the model's public types and, from the profile file's
//! own rules, [`raw::key_at`] (the dotted key at a TOML error).
//!
//! Adding a profile key, all in this crate: its row in the option table (`options`),
//! its field in the raw profile (`raw`) and the plan (`plan`), its resolution (`validate`)
//! and, if it has a flag, its field in [`Overrides`] (`overrides`, which every command
//! flattens into its arguments). The compiler then asks for its printed form (`emit`, a
//! struct literal), and tests fail while the option table, the TOML fields and the flags
//! disagree. The CLI needs no change. The reference (docs/profiles.md) is printed from
//! the table by `reference`; `values` holds the grammars of block-size lists and hot
//! bands, which flags and profiles share.

#![forbid(unsafe_code)]

pub mod builtin;
pub mod emit;
pub mod error;
pub mod flags;
pub mod options;
pub mod overrides;
pub mod plan;
pub mod raw;
pub mod reference;
pub mod totals;
// `units` is the fixed interface shared with the other crates; left as written.
#[allow(clippy::manual_range_contains)]
pub mod units;
mod validate;
mod values;

pub use builtin::{builtin_names, builtin_source};
pub use emit::plan_toml;
pub use error::ProfileError;
pub use flags::{resolve_flags, FLAGS_PROFILE};
pub use overrides::Overrides;
pub use plan::*;
pub use raw::{parse_toml, RawProfile};
pub use reference::reference_markdown;
pub use totals::FleetTotals;
pub use units::*;
pub use validate::{resolve, Context};
pub use values::{parse_block_sizes, parse_hot_bands};

/// Parse the built-in profile `name`; an unknown name lists the valid ones.
pub fn load_builtin(name: &str) -> Result<RawProfile, ProfileError> {
    match builtin_source(name) {
        Some(text) => parse_toml(text, &format!("built-in {name}")),
        None => Err(ProfileError::UnknownProfile {
            name: name.to_string(),
            nearest: nearest_name(name, &builtin_names()),
            valid: builtin_names(),
        }),
    }
}

/// The name in `names` that `typed` most resembles, when it is close enough to be a typo
/// of it (Jaro similarity of at least 0.8, the measure clap suggests flags by).
fn nearest_name(typed: &str, names: &[&'static str]) -> Option<&'static str> {
    names
        .iter()
        .map(|&n| (strsim::jaro(typed, n), n))
        .filter(|&(score, _)| score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// A path if `name_or_path` ends with `.toml` or contains `/`, else a built-in name.
pub fn load(name_or_path: &str) -> Result<RawProfile, ProfileError> {
    load_with(name_or_path, &|p| std::fs::read_to_string(p))
}

/// [`load`] with a profile file read by `read` (a command that reads each input file
/// once hands its own reader).
pub fn load_with(
    name_or_path: &str,
    read: &dyn Fn(&str) -> std::io::Result<String>,
) -> Result<RawProfile, ProfileError> {
    if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
        let text = read(name_or_path).map_err(|source| ProfileError::Read {
            path: name_or_path.to_string(),
            source,
        })?;
        parse_toml(&text, name_or_path)
    } else {
        load_builtin(name_or_path)
    }
}
