//! `iofleet ceiling CLUSTER --profile NAME [--run RUN] [--json]`: the theoretical IOPS
//! ceiling of a profile's mix on a described cluster, per bottleneck, and with `--run`
//! a stored run's measured IOPS as a share of it. The arithmetic is
//! `iofleet_capacity`; this file loads inputs and prints.

use std::path::PathBuf;

use clap::Args;
use iofleet_capacity::{ceiling, load_cluster, Cluster};
use iofleet_profile::{Context, Overrides, Plan};

use crate::exit::Exit;
use crate::store::record::DbArg;

#[derive(Args, Debug)]
pub struct CeilingArgs {
    /// Cluster file (TOML: hosts, [device], [network], [protection]; docs/capacity.md).
    #[arg(value_name = "CLUSTER")]
    pub cluster: PathBuf,
    /// Built-in profile name or path to a profile .toml file, whose block sizes and
    /// read/write mix the ceiling is computed for.
    #[arg(long)]
    pub profile: String,
    /// A stored run (id, unique prefix, unique name or `latest`) whose measured IOPS
    /// are printed as a percentage of the ceiling (efficiency).
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// Print `ceiling_iops`, `binding`, `bottlenecks` (name → IOPS) and, with --run,
    /// `efficiency_pct` as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArg,
}

/// The profile, resolved as `iofleet run PROFILE` resolves it with no overrides.
fn plan(profile: &str) -> Result<Plan, Exit> {
    let raw = iofleet_profile::load(profile).map_err(Exit::input)?;
    iofleet_profile::resolve(&raw, &Overrides::default(), &Context { direct: true })
        .map_err(Exit::input)
}

fn describe(c: &Cluster) -> String {
    let mut s = format!(
        "{} hosts × {} devices = {} devices; protection {}",
        c.hosts,
        c.device.per_host,
        c.devices(),
        c.protection
    );
    if let Some(n) = &c.network {
        s += &format!(
            "; {} × {} Gb/s NICs per host, {}% of I/O crosses hosts",
            n.nics_per_host,
            n.nic_gbps,
            n.remote_share * 100.0
        );
    }
    s
}

pub fn run(a: CeilingArgs) -> Result<i32, Exit> {
    let path = a.cluster.display().to_string();
    let cluster = load_cluster(&path).map_err(Exit::input)?;
    let plan = plan(&a.profile)?;
    let c = ceiling(&cluster, &plan);
    let binding = c.binding().clone();
    let measured = match &a.run {
        None => None,
        Some(q) => {
            let run = crate::store::stored::load_run(&a.db.open()?, q)?;
            let ran = run.result.run.plan.plan.name.as_str();
            if ran != plan.name {
                eprintln!(
                    "note: run {} ran profile '{ran}'; this ceiling is for '{}', so the \
                     efficiency compares different mixes",
                    run.id, plan.name
                );
            }
            Some((run.id, run.name, run.result.summary.all.iops))
        }
    };
    let efficiency = measured.as_ref().map(|m| m.2 / binding.iops * 100.0);
    if a.json {
        let bottlenecks: serde_json::Map<String, serde_json::Value> = c
            .bottlenecks
            .iter()
            .map(|b| (b.name.to_string(), serde_json::json!(b.iops)))
            .collect();
        let unbounded: serde_json::Map<String, serde_json::Value> = c
            .unbounded
            .iter()
            .map(|(n, why)| (n.to_string(), serde_json::json!(why)))
            .collect();
        let mut out = serde_json::json!({
            "cluster": path,
            "profile": plan.name,
            "ceiling_iops": binding.iops,
            "binding": binding.name,
            "bottlenecks": bottlenecks,
            "unbounded": unbounded,
        });
        if let (Some((id, name, iops)), Some(eff)) = (&measured, efficiency) {
            out["run"] = serde_json::json!({"id": id, "name": name, "iops": iops});
            out["efficiency_pct"] = serde_json::json!(eff);
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(Exit::failure)?
        );
        return Ok(0);
    }
    println!("ceiling of {} for profile {}", path, plan.name);
    println!("{}", describe(&cluster));
    println!("{:<12} {:>16}  basis", "bottleneck", "IOPS ceiling");
    for b in &c.bottlenecks {
        println!("{:<12} {:>16.0}  {}", b.name, b.iops, b.basis);
    }
    for (name, why) in &c.unbounded {
        println!("{:<12} {:>16}  {}", name, "–", why);
    }
    println!("binding: {} at {:.0} IOPS", binding.name, binding.iops);
    if let (Some((id, name, iops)), Some(eff)) = (&measured, efficiency) {
        println!(
            "run {id} ({}): {iops:.0} IOPS measured = {eff:.1}% of the ceiling",
            iofleet_report::text::escape(name)
        );
    }
    Ok(0)
}
