//! Cluster hardware files and the theoretical IOPS ceiling of a profile's mix on them.
//!
//! A cluster file (`hosts`, `[device]`, `[network]`, `[protection]`) is parsed with the
//! same rules as a profile: serde with `deny_unknown_fields` for the shape, every value
//! checked here with an error naming its dotted key and the file. [`ceiling`] is pure
//! arithmetic over a [`Cluster`] and a resolved [`Plan`]: one IOPS ceiling per bottleneck
//! (devices, protection, network, bandwidth) and the binding one. The formulas are
//! explained in docs/capacity.md ("Theoretical ceilings").
//!
//! This crate owns the cluster file and the ceiling arithmetic. The plan it reads and the
//! TOML rules its errors follow (`key_at`, the dotted key at an error) are the profile
//! crate's, which knows nothing of clusters. It measures nothing and knows no engines or
//! results, so comparing a ceiling with a stored run is left to the CLI.

#![forbid(unsafe_code)]

use iofleet_profile::raw::key_at;
use iofleet_profile::Plan;
use serde::Deserialize;
use thiserror::Error;

/// Why a cluster file could not be used.
#[derive(Debug, Error)]
pub enum ClusterError {
    #[error("cannot read cluster file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, an unknown key or a wrong type; `key` is the dotted key when found.
    #[error("{origin}: {}{message}", .key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
    Parse {
        origin: String,
        key: Option<String>,
        message: String,
    },
    /// A value missing, out of range or inconsistent with another.
    #[error("{origin}: {key}: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
}

impl ClusterError {
    /// The dotted key the error is about, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ClusterError::Parse { key, .. } => key.as_deref(),
            ClusterError::Invalid { key, .. } => Some(key),
            ClusterError::Read { .. } => None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    hosts: Option<i64>,
    device: Option<RawDevice>,
    network: Option<RawNetwork>,
    protection: Option<RawProtection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    per_host: Option<i64>,
    read_iops: Option<f64>,
    write_iops: Option<f64>,
    read_mbps: Option<f64>,
    write_mbps: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    nics_per_host: Option<i64>,
    nic_gbps: Option<f64>,
    remote_share: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProtection {
    scheme: Option<String>,
    copies: Option<i64>,
    data: Option<i64>,
    parity: Option<i64>,
}

/// Rated figures of one device (4K random I/O for the IOPS; MB = 10^6 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub per_host: u32,
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_mbps: f64,
    pub write_mbps: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    pub nics_per_host: u32,
    pub nic_gbps: f64,
    /// Share of client I/O served by a host other than the client's, 0..=1.
    pub remote_share: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Protection {
    None,
    /// `copies` full copies on distinct hosts.
    Mirror {
        copies: u32,
    },
    /// `data` + `parity` chunks per stripe (k + m).
    Erasure {
        data: u32,
        parity: u32,
    },
}

impl Protection {
    /// Device (reads, writes) one client write of a block costs.
    pub fn write_cost(&self) -> (u32, u32) {
        match *self {
            Protection::None => (0, 1),
            Protection::Mirror { copies } => (0, copies),
            // Read-modify-write of a small write: read the old data chunk and the m old
            // parity chunks, write the new data chunk and the m new parity chunks.
            Protection::Erasure { parity, .. } => (parity + 1, parity + 1),
        }
    }

    /// Copies of a written block beyond the first, each sent to another host.
    fn forwarded(&self) -> u32 {
        match *self {
            Protection::None => 0,
            Protection::Mirror { copies } => copies - 1,
            Protection::Erasure { parity, .. } => parity,
        }
    }
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Protection::None => write!(f, "none"),
            Protection::Mirror { copies } => write!(f, "mirror, {copies} copies"),
            Protection::Erasure { data, parity } => write!(f, "erasure {data}+{parity}"),
        }
    }
}

/// A validated cluster file.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub hosts: u32,
    pub device: Device,
    /// None: no `[network]` table, no network bottleneck.
    pub network: Option<Network>,
    pub protection: Protection,
}

impl Cluster {
    pub fn devices(&self) -> u64 {
        self.hosts as u64 * self.device.per_host as u64
    }
}

/// Read and check a cluster file.
pub fn load_cluster(path: &str) -> Result<Cluster, ClusterError> {
    let text = std::fs::read_to_string(path).map_err(|source| ClusterError::Read {
        path: path.to_string(),
        source,
    })?;
    parse_cluster(&text, path)
}

/// Check cluster TOML; `origin` (the file) prefixes every error.
pub fn parse_cluster(text: &str, origin: &str) -> Result<Cluster, ClusterError> {
    let raw: RawCluster = toml::from_str(text).map_err(|e| ClusterError::Parse {
        origin: origin.to_string(),
        key: e.span().and_then(|s| key_at(text, s.start)),
        message: e.to_string().trim_end().to_string(),
    })?;
    let bad = |key: &str, message: String| ClusterError::Invalid {
        origin: origin.to_string(),
        key: key.to_string(),
        message,
    };
    let count = |key: &str, v: Option<i64>, min: i64| -> Result<u32, ClusterError> {
        let v = v.ok_or_else(|| bad(key, "is required".into()))?;
        if v < min || v > u32::MAX as i64 {
            return Err(bad(
                key,
                format!("{v} is out of range (a whole number >= {min})"),
            ));
        }
        Ok(v as u32)
    };
    let rate = |key: &str, v: Option<f64>| -> Result<f64, ClusterError> {
        let v = v.ok_or_else(|| bad(key, "is required".into()))?;
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(key, format!("{v} is out of range (must be > 0)")));
        }
        Ok(v)
    };
    let hosts = count("hosts", raw.hosts, 1)?;
    let d = raw
        .device
        .ok_or_else(|| bad("device", "the [device] table is required".into()))?;
    let device = Device {
        per_host: count("device.per_host", d.per_host, 1)?,
        read_iops: rate("device.read_iops", d.read_iops)?,
        write_iops: rate("device.write_iops", d.write_iops)?,
        read_mbps: rate("device.read_mbps", d.read_mbps)?,
        write_mbps: rate("device.write_mbps", d.write_mbps)?,
    };
    let network = match raw.network {
        None => None,
        Some(n) => {
            let share = n
                .remote_share
                .ok_or_else(|| bad("network.remote_share", "is required (0..=1)".into()))?;
            if !(0.0..=1.0).contains(&share) {
                return Err(bad(
                    "network.remote_share",
                    format!("{share} is out of range (a share from 0 to 1)"),
                ));
            }
            Some(Network {
                nics_per_host: count("network.nics_per_host", n.nics_per_host, 1)?,
                nic_gbps: rate("network.nic_gbps", n.nic_gbps)?,
                remote_share: share,
            })
        }
    };
    let protection = match raw.protection {
        None => Protection::None,
        Some(p) => {
            let scheme = p.scheme.as_deref().unwrap_or("none");
            let not_with = |key: &str, present: bool| -> Result<(), ClusterError> {
                if present {
                    return Err(bad(
                        key,
                        format!("does not apply to protection.scheme = \"{scheme}\""),
                    ));
                }
                Ok(())
            };
            match scheme {
                "none" => {
                    not_with("protection.copies", p.copies.is_some())?;
                    not_with("protection.data", p.data.is_some())?;
                    not_with("protection.parity", p.parity.is_some())?;
                    Protection::None
                }
                "mirror" => {
                    not_with("protection.data", p.data.is_some())?;
                    not_with("protection.parity", p.parity.is_some())?;
                    let copies = count("protection.copies", p.copies, 1)?;
                    if copies > hosts {
                        return Err(bad(
                            "protection.copies",
                            format!(
                                "{copies} copies need as many hosts, and hosts = {hosts} \
                                 (each copy lives on a different host)"
                            ),
                        ));
                    }
                    Protection::Mirror { copies }
                }
                "erasure" => {
                    not_with("protection.copies", p.copies.is_some())?;
                    Protection::Erasure {
                        data: count("protection.data", p.data, 1)?,
                        parity: count("protection.parity", p.parity, 1)?,
                    }
                }
                other => {
                    return Err(bad(
                        "protection.scheme",
                        format!("'{other}' is not one of none, mirror, erasure"),
                    ))
                }
            }
        }
    };
    Ok(Cluster {
        hosts,
        device,
        network,
        protection,
    })
}

/// One kind of client I/O of a profile's mix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixEntry {
    pub read: bool,
    pub bytes: f64,
    /// Share of all client I/Os, 0..=1 (the entries sum to 1).
    pub share: f64,
}

/// The profile's I/O mix: each stream's share × its read/write split × its block-size
/// weights. Closed-loop streams count in proportion to weight × disks they drive; a
/// profile whose every stream is rated counts each in proportion to its rate (IOPS per
/// worker, spread over its disks). In a profile with both, the rated streams are left out
/// (their rate is fixed by the profile, not by the cluster).
pub fn mix(plan: &Plan) -> Vec<MixEntry> {
    let all_rated = plan.streams.iter().all(|s| s.rate_iops.is_some());
    let mut out = Vec::new();
    let stream_w: Vec<f64> = plan
        .streams
        .iter()
        .map(|s| match (all_rated, s.rate_iops, s.weight) {
            (true, Some(r), _) => r,
            (false, None, w) => w.unwrap_or(1) as f64 * s.disks.len().max(1) as f64,
            _ => 0.0,
        })
        .collect();
    let total: f64 = stream_w.iter().sum();
    for (s, w) in plan.streams.iter().zip(&stream_w) {
        if *w <= 0.0 {
            continue;
        }
        let bs_total: f64 = s.bs.entries.iter().map(|e| e.1 as f64).sum();
        for &(size, bw) in &s.bs.entries {
            let share = w / total * bw as f64 / bs_total;
            for (read, pct) in [(true, s.read_pct), (false, 100.0 - s.read_pct)] {
                if pct > 0.0 {
                    out.push(MixEntry {
                        read,
                        bytes: size.0 as f64,
                        share: share * pct / 100.0,
                    });
                }
            }
        }
    }
    out
}

/// One bottleneck's ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Bottleneck {
    /// `devices`, `protection`, `network` or `bandwidth`.
    pub name: &'static str,
    /// Client IOPS of the profile's mix this resource allows.
    pub iops: f64,
    /// What the figure is made of, for the table.
    pub basis: String,
}

/// Every finite bottleneck, in the order devices, protection, network, bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    pub bottlenecks: Vec<Bottleneck>,
    /// Resources that do not limit this mix (e.g. the network when no byte crosses
    /// hosts), with why.
    pub unbounded: Vec<(&'static str, String)>,
}

impl Ceiling {
    /// The binding (lowest) bottleneck; the first listed on a tie.
    pub fn binding(&self) -> &Bottleneck {
        let mut best = &self.bottlenecks[0];
        for b in &self.bottlenecks[1..] {
            if b.iops < best.iops {
                best = b;
            }
        }
        best
    }
}

/// Bytes per second of `mbps` megabytes (10^6 bytes) per second.
const MB: f64 = 1e6;

/// The ceilings of `plan`'s mix on `cluster` (formulas in docs/capacity.md):
///
/// - devices: Σ device time per client I/O at the rated IOPS (one device operation per
///   client I/O, reads at `read_iops`, writes at `write_iops`), against every device;
/// - protection: the same with the scheme's device operations per client write;
/// - network: bytes crossing hosts per client I/O (`remote_share` × size, plus the
///   forwarded copies or parity updates of writes), against hosts × NICs × Gb/s;
/// - bandwidth: device bytes per client I/O (with the scheme's amplification) at the
///   rated MB/s, against every device.
pub fn ceiling(cluster: &Cluster, plan: &Plan) -> Ceiling {
    let m = mix(plan);
    let d = &cluster.device;
    let n = cluster.devices() as f64;
    let p = cluster.protection;
    let (w_reads, w_writes) = p.write_cost();
    let (w_reads, w_writes) = (w_reads as f64, w_writes as f64);
    let sum = |f: &dyn Fn(&MixEntry) -> f64| m.iter().map(|e| e.share * f(e)).sum::<f64>();

    let mut bottlenecks = Vec::new();
    let mut unbounded = Vec::new();
    let dev_time = sum(&|e| {
        if e.read {
            1.0 / d.read_iops
        } else {
            1.0 / d.write_iops
        }
    });
    bottlenecks.push(Bottleneck {
        name: "devices",
        iops: n / dev_time,
        basis: format!(
            "{n} devices × rated {} read / {} write IOPS",
            d.read_iops, d.write_iops
        ),
    });
    let prot_time = sum(&|e| {
        if e.read {
            1.0 / d.read_iops
        } else {
            w_reads / d.read_iops + w_writes / d.write_iops
        }
    });
    bottlenecks.push(Bottleneck {
        name: "protection",
        iops: n / prot_time,
        basis: format!(
            "{p}: a client write costs {w_writes} device write(s){}",
            if w_reads > 0.0 {
                format!(" + {w_reads} device read(s)")
            } else {
                String::new()
            }
        ),
    });
    match &cluster.network {
        None => unbounded.push(("network", "no [network] table".to_string())),
        Some(net) => {
            let fwd = p.forwarded() as f64;
            let crossing = sum(&|e| {
                let own = net.remote_share * e.bytes;
                if e.read {
                    own
                } else {
                    own + fwd * e.bytes
                }
            });
            let capacity =
                cluster.hosts as f64 * net.nics_per_host as f64 * net.nic_gbps * 1e9 / 8.0;
            if crossing > 0.0 {
                bottlenecks.push(Bottleneck {
                    name: "network",
                    iops: capacity / crossing,
                    basis: format!(
                        "{} hosts × {} × {} Gb/s; {crossing:.0} bytes cross hosts per I/O",
                        cluster.hosts, net.nics_per_host, net.nic_gbps
                    ),
                });
            } else {
                unbounded.push(("network", "no byte of this mix crosses hosts".to_string()));
            }
        }
    }
    let bw_time = sum(&|e| {
        if e.read {
            e.bytes / (d.read_mbps * MB)
        } else {
            w_reads * e.bytes / (d.read_mbps * MB) + w_writes * e.bytes / (d.write_mbps * MB)
        }
    });
    bottlenecks.push(Bottleneck {
        name: "bandwidth",
        iops: n / bw_time,
        basis: format!(
            "{n} devices × rated {} read / {} write MB/s; {:.0} device bytes per I/O",
            d.read_mbps,
            d.write_mbps,
            sum(&|e| if e.read {
                e.bytes
            } else {
                (w_reads + w_writes) * e.bytes
            })
        ),
    });
    Ceiling {
        bottlenecks,
        unbounded,
    }
}

#[cfg(test)]
mod tests {
    use iofleet_profile::{parse_toml, resolve, Context, Overrides};

    use super::*;

    const ISSUE: &str = r#"
hosts = 12
[device]
per_host = 4
read_iops = 550000
write_iops = 500000
read_mbps = 2500
write_mbps = 2000
[network]
nics_per_host = 2
nic_gbps = 100
remote_share = 0.5
[protection]
scheme = "mirror"
copies = 2
"#;

    fn plan(bs: &str, read_pct: f64) -> Plan {
        let text = format!(
            "name = \"t\"\n[[stream]]\nbs = \"{bs}\"\nread_pct = {read_pct}\nrandom_pct = 100\n"
        );
        let raw = parse_toml(&text, "t.toml").unwrap();
        resolve(&raw, &Overrides::default(), &Context { direct: true }).unwrap()
    }

    fn get(c: &Ceiling, name: &str) -> f64 {
        c.bottlenecks.iter().find(|b| b.name == name).unwrap().iops
    }

    #[test]
    fn the_issue_example_parses() {
        let c = parse_cluster(ISSUE, "c.toml").unwrap();
        assert_eq!(c.hosts, 12);
        assert_eq!(c.devices(), 48);
        assert_eq!(c.protection, Protection::Mirror { copies: 2 });
        assert_eq!(c.network.as_ref().unwrap().remote_share, 0.5);
    }

    #[test]
    fn four_k_random_read_is_device_bound_at_the_rated_sum() {
        let c = parse_cluster(ISSUE, "c.toml").unwrap();
        let r = ceiling(&c, &plan("4k", 100.0));
        assert!((get(&r, "devices") - 26.4e6).abs() < 1e-3);
        assert_eq!(
            get(&r, "protection"),
            get(&r, "devices"),
            "reads pay no penalty"
        );
        // 48 × 2500 MB/s ÷ 4096 bytes; 12 × 2 × 100 Gb/s ÷ (0.5 × 4096 bytes).
        assert!((get(&r, "bandwidth") - 48.0 * 2500e6 / 4096.0).abs() < 1e-3);
        assert!((get(&r, "network") - 12.0 * 2.0 * 100e9 / 8.0 / 2048.0).abs() < 1e-3);
        assert_eq!(r.binding().name, "devices");
    }

    #[test]
    fn write_penalties() {
        let base = ISSUE.replace("copies = 2\n", "");
        let with = |prot: &str| {
            let text = base.replace("scheme = \"mirror\"\n", prot);
            get(
                &ceiling(&parse_cluster(&text, "c.toml").unwrap(), &plan("4k", 0.0)),
                "protection",
            )
        };
        let raw = 48.0 * 500e3;
        assert!((with("scheme = \"none\"\n") - raw).abs() < 1e-3);
        assert!((with("scheme = \"mirror\"\ncopies = 2\n") - raw / 2.0).abs() < 1e-3);
        assert!((with("scheme = \"mirror\"\ncopies = 3\n") - raw / 3.0).abs() < 1e-3);
        // 4+2: 3 reads at 550K and 3 writes at 500K per client write.
        let ec = with("scheme = \"erasure\"\ndata = 4\nparity = 2\n");
        assert!(
            (ec - 48.0 / (3.0 / 550e3 + 3.0 / 500e3)).abs() < 1e-3,
            "{ec}"
        );
    }

    #[test]
    fn mix_splits_streams_sizes_and_directions() {
        let p = plan("4k:3,64k:1", 75.0);
        let m = mix(&p);
        let share = |read: bool, bytes: f64| {
            m.iter()
                .filter(|e| e.read == read && e.bytes == bytes)
                .map(|e| e.share)
                .sum::<f64>()
        };
        assert!((share(true, 4096.0) - 0.75 * 0.75).abs() < 1e-12);
        assert!((share(false, 65536.0) - 0.25 * 0.25).abs() < 1e-12);
        assert!((m.iter().map(|e| e.share).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            ("hosts = 12", "hosts = 0", "hosts"),
            ("read_iops = 550000", "read_iops = -5", "device.read_iops"),
            ("write_mbps = 2000", "write_mbps = 0", "device.write_mbps"),
            (
                "remote_share = 0.5",
                "remote_share = 1.5",
                "network.remote_share",
            ),
            ("copies = 2", "copies = 0", "protection.copies"),
            ("nic_gbps = 100", "nic_gbps = \"fast\"", "network.nic_gbps"),
            ("per_host = 4", "per_host = 4\nrpm = 7200", "device.rpm"),
            (
                "scheme = \"mirror\"",
                "scheme = \"raid\"",
                "protection.scheme",
            ),
        ];
        for (from, to, key) in cases {
            let text = ISSUE.replace(from, to);
            let e = parse_cluster(&text, "c.toml").unwrap_err();
            assert!(e.to_string().starts_with("c.toml: "), "{e}");
            assert!(e.to_string().contains(key), "{to}: {e}");
        }
        let missing = [
            ("hosts = 12\n", "", "hosts"),
            (
                "[device]\nper_host = 4\n",
                "[device]\nper_host_ = 4\n",
                "device.per_host_",
            ),
            (
                "scheme = \"mirror\"",
                "scheme = \"none\"",
                "protection.copies",
            ),
            ("copies = 2", "copies = 2\nparity = 1", "protection.parity"),
        ];
        for (from, to, key) in missing {
            assert!(ISSUE.contains(from), "{from}");
            let e = parse_cluster(&ISSUE.replacen(from, to, 1), "c.toml").unwrap_err();
            assert_eq!(e.key(), Some(key), "{to}: {e}");
        }
        let e = parse_cluster("hosts = 2\n", "c.toml").unwrap_err();
        assert_eq!(e.key(), Some("device"), "{e}");
        let e = parse_cluster(
            &ISSUE.replace(
                "scheme = \"mirror\"\ncopies = 2",
                "scheme = \"erasure\"\ndata = 4",
            ),
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("protection.parity"), "{e}");
    }
}
