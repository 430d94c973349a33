//! The profile of a run given no profile: fio-style use, the workload from flags.
//!
//! `iofleet run --bs 4k --read-pct 70 --random-pct 100 --qd 32` starts from
//! [`FLAGS_PROFILE`], a fixed default shape (1 worker, 1 disk of 1 GiB, 1 thread, qd 1,
//! 4 KiB random reads, no warm-up, 60 s), and the flags override it exactly as they
//! override any profile, with the same checks. The run is named after what it does
//! (`cli-4k-read70-random100-qd32`), so stored runs of different flag workloads are not
//! mistaken for one another. This module holds that profile and the naming; nothing else.

use crate::error::ProfileError;
use crate::overrides::Overrides;
use crate::plan::Plan;
use crate::raw::{parse_toml, RawProfile};
use crate::validate::{resolve, Context};

/// Where errors about a flags-only run point: the flags themselves.
pub const FLAGS_ORIGIN: &str = "command line";

/// The default shape of a run without a profile, as a profile file.
pub const FLAGS_PROFILE: &str = r#"name = "cli"
description = "Workload from command-line flags on iofleet's default shape for runs without a profile: 1 worker, 1 disk, 1 thread per disk."

[fleet]
workers = 1
disks_per_worker = 1
disk_size = "1g"
threads_per_disk = 1
qd = 1

[timing]
prepare = "random"
warmup = "0s"
duration = "60s"
interval = "1s"

[[stream]]
name = "main"
bs = "4k"
read_pct = 100
random_pct = 100
working_set_pct = 100
"#;

/// [`FLAGS_PROFILE`], parsed.
pub fn flags_profile() -> RawProfile {
    parse_toml(FLAGS_PROFILE, FLAGS_ORIGIN).expect("the flags profile parses")
}

/// The plan of a run without a profile: [`FLAGS_PROFILE`] with `ov` applied, named
/// after its workload.
pub fn resolve_flags(ov: &Overrides, ctx: &Context) -> Result<Plan, ProfileError> {
    let mut plan = resolve(&flags_profile(), ov, ctx)?;
    let s = &plan.streams[0];
    let bs = match s.bs.entries.as_slice() {
        [(size, _)] => size.to_string(),
        _ => "mixed".into(),
    };
    plan.name = format!(
        "cli-{bs}-read{}-random{}-qd{}",
        s.read_pct, s.random_pct, plan.fleet.qd
    );
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bytes;

    #[test]
    fn default_shape() {
        let p = resolve_flags(&Overrides::default(), &Context { direct: true }).unwrap();
        let f = &p.fleet;
        assert_eq!(
            (f.workers, f.disks_per_worker, f.threads_per_disk, f.qd),
            (1, 1, 1, 1)
        );
        assert_eq!(f.disk_size, Bytes(Bytes::GIB));
        assert_eq!(p.streams.len(), 1);
        assert_eq!(p.name, "cli-4k-read100-random100-qd1");
    }

    #[test]
    fn flags_override_and_name_the_run() {
        let ov = Overrides {
            bs: Some(crate::parse_block_sizes("8k").unwrap()),
            read_pct: Some(70.0),
            qd: Some(32),
            ..Default::default()
        };
        let p = resolve_flags(&ov, &Context { direct: true }).unwrap();
        assert_eq!(p.name, "cli-8k-read70-random100-qd32");
        let ov = Overrides {
            bs: Some(crate::parse_block_sizes("4k:60,64k:40").unwrap()),
            ..Default::default()
        };
        let p = resolve_flags(&ov, &Context { direct: true }).unwrap();
        assert!(p.name.starts_with("cli-mixed-"), "{}", p.name);
    }

    #[test]
    fn errors_point_at_the_flag() {
        let ov = Overrides {
            qd: Some(-1),
            ..Default::default()
        };
        let e = resolve_flags(&ov, &Context::default()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("command line: --qd (fleet.qd): -1"),
            "{msg}"
        );
        assert!(msg.contains("must be at least 1"), "{msg}");
    }
}
