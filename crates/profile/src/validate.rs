//! Raw profile + command-line overrides + context → validated [`Plan`].
//!
//! All value parsing (sizes, durations, disk lists; block-size lists and hot bands through
//! their grammars in `values`) and every range and cross-field check happens here, before
//! any I/O. Each error names the dotted
//! TOML key that fixes it and, if the value came from an override, the CLI flag. Numeric
//! ranges and defaults come from the option table in `options`, so they are written once.
//! This module knows nothing about engines or files; `Context` carries the one fact about
//! the target it needs (whether I/O is direct).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::error::ProfileError;
use crate::options::{
    int_range, option, DIRECT_IO_SECTOR, DISK_SIZE_MULTIPLE, MAX_BLOCK_SIZE, MAX_DEDUPE_UNIT,
    MAX_INTERVALS, MAX_STREAMS, MIN_DISK_SIZE, MIN_INTERVAL, VERIFY_UNIT,
};
use crate::overrides::Overrides;
use crate::plan::{
    Arrival, BlockSizes, DataPattern, DataPlan, FleetShape, Locality, Plan, Prepare, StreamPlan,
    Timing,
};
use crate::raw::{RawDisks, RawProfile, RawStream};
use crate::units::{format_duration, parse_bytes, parse_cpu_list, parse_duration, Bytes};
use crate::values::{parse_block_sizes, parse_hot_bands};

/// Facts about the run that change what is valid.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// I/O bypasses the page cache (O_DIRECT): sizes and offsets must be sector multiples.
    pub direct: bool,
}

/// A value and the flag it came from (None: from the profile or the default).
#[derive(Debug, Clone, Copy)]
struct Val<T> {
    v: T,
    flag: Option<&'static str>,
}

impl<T> Val<T> {
    /// How to refer to this value in another key's message: the flag if it came from one.
    fn name(&self, key: &str) -> String {
        self.flag.map_or_else(|| key.to_string(), |f| f.to_string())
    }
}

/// A stream's lane: its weight (closed loop), or its own rate and queue depth.
type Lane = (Option<u32>, Option<f64>, Option<u32>);

struct Resolver<'a> {
    origin: &'a str,
    ctx: Context,
}

impl Resolver<'_> {
    fn err(
        &self,
        key: &str,
        flag: Option<&'static str>,
        message: impl Into<String>,
    ) -> ProfileError {
        ProfileError::Invalid {
            origin: self.origin.to_string(),
            key: key.to_string(),
            flag,
            message: message.into(),
        }
    }

    /// Override, else the profile's value, else the table default; range from the table.
    fn integer(
        &self,
        opt: &str,
        key: &str,
        ov: Option<i64>,
        raw: Option<i64>,
    ) -> Result<Option<Val<u32>>, ProfileError> {
        let def = option(opt);
        let (v, flag) = match (ov, raw) {
            (Some(v), _) => (v, def.flag),
            (None, Some(v)) => (v, None),
            (None, None) => return Ok(None),
        };
        def.check(v as f64).map_err(|m| self.err(key, flag, m))?;
        let v =
            u32::try_from(v).map_err(|_| self.err(key, flag, format!("{v} is out of range")))?;
        Ok(Some(Val { v, flag }))
    }

    fn number(
        &self,
        opt: &str,
        key: &str,
        ov: Option<f64>,
        raw: Option<f64>,
    ) -> Result<Option<Val<f64>>, ProfileError> {
        let def = option(opt);
        let (v, flag) = match (ov, raw) {
            (Some(v), _) => (v, def.flag),
            (None, Some(v)) => (v, None),
            (None, None) => return Ok(None),
        };
        def.check(v).map_err(|m| self.err(key, flag, m))?;
        Ok(Some(Val { v, flag }))
    }

    fn duration(
        &self,
        opt: &str,
        ov: Option<Duration>,
        raw: Option<&str>,
    ) -> Result<Val<Duration>, ProfileError> {
        let def = option(opt);
        if let Some(v) = ov {
            return Ok(Val { v, flag: def.flag });
        }
        let text = raw.unwrap_or_else(|| default_text(opt));
        let v = parse_duration(text).map_err(|m| self.err(opt, None, m))?;
        Ok(Val { v, flag: None })
    }

    fn fleet(
        &self,
        raw: &RawProfile,
        ov: &Overrides,
    ) -> Result<(FleetShape, Val<Bytes>), ProfileError> {
        let f = &raw.fleet;
        let int = |opt: &str, o: Option<i64>, r: Option<i64>| -> Result<u32, ProfileError> {
            Ok(match self.integer(opt, opt, o, r)? {
                Some(v) => v.v,
                None => default_int(opt),
            })
        };
        let workers = int("fleet.workers", ov.workers, f.workers)?;
        let disks_per_worker = int("fleet.disks_per_worker", ov.disks, f.disks_per_worker)?;
        let threads_per_disk = int("fleet.threads_per_disk", ov.threads, f.threads_per_disk)?;
        let qd = int("fleet.qd", ov.qd, f.qd)?;
        let io_threads = self
            .integer(
                "fleet.io_threads",
                "fleet.io_threads",
                ov.io_threads,
                f.io_threads,
            )?
            .map(|v| v.v);
        let cpus = {
            let key = "fleet.cpus";
            let (text, flag) = match (&ov.cpus, &f.cpus) {
                (Some(t), _) => (Some(t.as_str()), option(key).flag),
                (None, Some(t)) => (Some(t.as_str()), None),
                (None, None) => (None, None),
            };
            match text {
                Some(t) => Some(parse_cpu_list(t).map_err(|m| self.err(key, flag, m))?),
                None => None,
            }
        };

        let key = "fleet.disk_size";
        let disk_size = match ov.disk_size {
            Some(v) => Val {
                v,
                flag: option(key).flag,
            },
            None => {
                let text = f.disk_size.as_deref().unwrap_or_else(|| default_text(key));
                let v = parse_bytes(text).map_err(|m| self.err(key, None, m))?;
                Val { v, flag: None }
            }
        };
        if disk_size.v < MIN_DISK_SIZE {
            return Err(self.err(
                key,
                disk_size.flag,
                format!(
                    "{} is smaller than the minimum {MIN_DISK_SIZE}",
                    disk_size.v
                ),
            ));
        }
        if disk_size.v.0 % DISK_SIZE_MULTIPLE.0 != 0 {
            return Err(self.err(
                key,
                disk_size.flag,
                format!(
                    "{} bytes is not a multiple of {DISK_SIZE_MULTIPLE}",
                    disk_size.v.0
                ),
            ));
        }
        let shape = FleetShape {
            workers,
            disks_per_worker,
            disk_size: disk_size.v,
            threads_per_disk,
            qd,
            io_threads,
            cpus,
        };
        Ok((shape, disk_size))
    }

    fn timing(&self, raw: &RawProfile, ov: &Overrides) -> Result<Timing, ProfileError> {
        let t = &raw.timing;
        let prepare = match ov.prepare {
            Some(p) => p,
            None => {
                let key = "timing.prepare";
                match t.prepare.as_deref().unwrap_or_else(|| default_text(key)) {
                    "random" => Prepare::Random,
                    "zero" => Prepare::Zero,
                    "none" => Prepare::None,
                    other => {
                        return Err(self.err(
                            key,
                            None,
                            format!("'{other}' is not one of random, zero, none"),
                        ))
                    }
                }
            }
        };
        let arrival = {
            let key = "timing.arrival";
            match t.arrival.as_deref().unwrap_or_else(|| default_text(key)) {
                "poisson" => Arrival::Poisson,
                "uniform" => Arrival::Uniform,
                other => {
                    return Err(self.err(
                        key,
                        None,
                        format!("'{other}' is not one of poisson, uniform"),
                    ))
                }
            }
        };
        let warmup = self.duration("timing.warmup", ov.warmup, t.warmup.as_deref())?;
        let duration = self.duration("timing.duration", ov.duration, t.duration.as_deref())?;
        if duration.v.is_zero() {
            return Err(self.err("timing.duration", duration.flag, "must be greater than 0s"));
        }
        let interval = self.duration("timing.interval", ov.interval, t.interval.as_deref())?;
        if interval.v < MIN_INTERVAL {
            return Err(self.err(
                "timing.interval",
                interval.flag,
                format!(
                    "{} is shorter than the minimum {}",
                    format_duration(interval.v),
                    format_duration(MIN_INTERVAL)
                ),
            ));
        }
        if interval.v > duration.v {
            return Err(self.err(
                "timing.interval",
                interval.flag,
                format!(
                    "{} is longer than {} ({})",
                    format_duration(interval.v),
                    duration.name("timing.duration"),
                    format_duration(duration.v)
                ),
            ));
        }
        let intervals = intervals_in(warmup.v, interval.v) + intervals_in(duration.v, interval.v);
        if intervals > MAX_INTERVALS {
            return Err(self.err(
                "timing.interval",
                interval.flag,
                format!(
                    "{} cuts the warm-up ({}) and {} ({}) into {intervals} intervals, more than {MAX_INTERVALS}: lengthen it",
                    format_duration(interval.v),
                    format_duration(warmup.v),
                    duration.name("timing.duration"),
                    format_duration(duration.v)
                ),
            ));
        }
        let rate = self.number("timing.rate_iops", "timing.rate_iops", ov.rate, t.rate_iops)?;
        Ok(Timing {
            prepare,
            warmup: warmup.v,
            duration: duration.v,
            interval: interval.v,
            rate_iops: rate.map(|r| r.v),
            arrival,
            verify: ov.verify || t.verify.unwrap_or(false),
        })
    }

    fn data(&self, raw: &RawProfile, ov: &Overrides) -> Result<DataPlan, ProfileError> {
        let d = &raw.data;
        let key = "data.pattern";
        let pattern = match ov.pattern {
            Some(p) => Val {
                v: p,
                flag: option(key).flag,
            },
            None => {
                let v = match d.pattern.as_deref().unwrap_or_else(|| default_text(key)) {
                    "random" => DataPattern::Random,
                    "zero" => DataPattern::Zero,
                    other => {
                        return Err(self.err(
                            key,
                            None,
                            format!("'{other}' is not one of random, zero"),
                        ))
                    }
                };
                Val { v, flag: None }
            }
        };
        let ratio = |k: &str, o: Option<f64>, r: Option<f64>| {
            self.number(k, k, o, r)
                .map(|v| v.unwrap_or(Val { v: 1.0, flag: None }))
        };
        let dedupe = ratio("data.dedupe_ratio", ov.dedupe_ratio, d.dedupe_ratio)?;
        let compress = ratio("data.compress_ratio", ov.compress_ratio, d.compress_ratio)?;
        let key = "data.dedupe_unit";
        let unit = match ov.dedupe_unit {
            Some(v) => Val {
                v,
                flag: option(key).flag,
            },
            None => {
                let text = d
                    .dedupe_unit
                    .as_deref()
                    .unwrap_or_else(|| default_text(key));
                let v = parse_bytes(text).map_err(|m| self.err(key, None, m))?;
                Val { v, flag: None }
            }
        };
        if unit.v.0 == 0 || unit.v.0 % DIRECT_IO_SECTOR.0 != 0 || unit.v > MAX_DEDUPE_UNIT {
            return Err(self.err(
                key,
                unit.flag,
                format!(
                    "{} bytes is not a multiple of {DIRECT_IO_SECTOR} between {DIRECT_IO_SECTOR} \
                     and {MAX_DEDUPE_UNIT}",
                    unit.v.0
                ),
            ));
        }
        if pattern.v == DataPattern::Zero {
            for (k, v) in [
                ("data.dedupe_ratio", dedupe),
                ("data.compress_ratio", compress),
            ] {
                if v.v != 1.0 {
                    return Err(self.err(
                        k,
                        v.flag,
                        format!(
                            "{} asks for random data shaped to a ratio, but {} is zero \
                             (zeros dedupe and compress completely)",
                            v.v,
                            pattern.name("data.pattern")
                        ),
                    ));
                }
            }
        }
        Ok(DataPlan {
            pattern: pattern.v,
            dedupe_ratio: dedupe.v,
            dedupe_unit: unit.v,
            compress_ratio: compress.v,
            write_through: ov.write_through || d.write_through.unwrap_or(false),
        })
    }

    fn stream(
        &self,
        i: usize,
        rs: &RawStream,
        ov: &Overrides,
        fleet: &FleetShape,
        disk_size: Val<Bytes>,
    ) -> Result<StreamPlan, ProfileError> {
        let name = rs.name.clone().unwrap_or_else(|| format!("stream{i}"));
        let prefix = match &rs.name {
            Some(n) => format!("stream[{i}] (\"{n}\")"),
            None => format!("stream[{i}]"),
        };
        let k = |field: &str| format!("{prefix}.{field}");
        let disk_size_name = disk_size.name("fleet.disk_size");

        let bs = self.stream_bs(&k, rs, ov, fleet, &disk_size_name)?;
        let max_bs = bs.v.max();
        let (read_pct, random_pct) = self.stream_mix(&k, rs, ov)?;
        let align = self.stream_align(&k, rs, &bs.v, fleet, &disk_size_name)?;
        let (weight, rate_iops, qd) = self.stream_lane(&k, rs, ov, fleet)?;
        let locality = self.stream_locality(&k, rs)?;
        let ws = self.stream_working_set(&k, rs, ov, fleet, max_bs, &disk_size_name)?;
        let disks = self.stream_disks(&k, rs, ov, fleet)?;

        Ok(StreamPlan {
            name,
            bs: bs.v,
            read_pct,
            random_pct,
            align,
            weight,
            rate_iops,
            qd,
            locality,
            working_set_pct: ws,
            disks,
        })
    }

    /// A stream's block sizes: given, non-empty, sector-aligned if direct, within a disk.
    fn stream_bs(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        ov: &Overrides,
        fleet: &FleetShape,
        disk_size_name: &str,
    ) -> Result<Val<BlockSizes>, ProfileError> {
        let bs_key = k("bs");
        let bs = match &ov.bs {
            Some(b) => Val {
                v: b.clone(),
                flag: option("stream.bs").flag,
            },
            None => {
                let text = rs.bs.as_deref().ok_or_else(|| {
                    self.err(
                        &bs_key,
                        None,
                        "is required (e.g. bs = \"4k\" or \"512:10,4k:90\")",
                    )
                })?;
                let v = parse_block_sizes(text).map_err(|m| self.err(&bs_key, None, m))?;
                Val { v, flag: None }
            }
        };
        if bs.v.entries.is_empty() {
            return Err(self.err(&bs_key, bs.flag, "has no block sizes"));
        }
        for &(size, weight) in &bs.v.entries {
            if size.0 == 0 {
                return Err(self.err(&bs_key, bs.flag, "block size must be greater than 0"));
            }
            if weight == 0 {
                return Err(self.err(
                    &bs_key,
                    bs.flag,
                    format!("weight of {size} must be at least 1"),
                ));
            }
            if self.ctx.direct && size.0 % DIRECT_IO_SECTOR.0 != 0 {
                return Err(self.err(
                    &bs_key,
                    bs.flag,
                    format!(
                        "{} bytes is not a multiple of {} bytes, which direct I/O requires",
                        size.0, DIRECT_IO_SECTOR.0
                    ),
                ));
            }
        }
        let max_bs = bs.v.max();
        if max_bs > MAX_BLOCK_SIZE {
            return Err(self.err(
                &bs_key,
                bs.flag,
                format!("block size {max_bs} is larger than the largest allowed, {MAX_BLOCK_SIZE}"),
            ));
        }
        if max_bs > fleet.disk_size {
            return Err(self.err(
                &bs_key,
                bs.flag,
                format!(
                    "block size {max_bs} is larger than {disk_size_name} ({})",
                    fleet.disk_size
                ),
            ));
        }
        Ok(bs)
    }

    /// A stream's mix: its read and random percentages, both required.
    fn stream_mix(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        ov: &Overrides,
    ) -> Result<(f64, f64), ProfileError> {
        let pct =
            |field: &str, opt: &str, o: Option<f64>, r: Option<f64>| -> Result<f64, ProfileError> {
                let key = k(field);
                self.number(opt, &key, o, r)?
                    .map(|v| v.v)
                    .ok_or_else(|| self.err(&key, None, "is required (0..=100)"))
            };
        let read_pct = pct("read_pct", "stream.read_pct", ov.read_pct, rs.read_pct)?;
        let random_pct = pct(
            "random_pct",
            "stream.random_pct",
            ov.random_pct,
            rs.random_pct,
        )?;
        Ok((read_pct, random_pct))
    }

    /// A stream's offset alignment: a power of two, direct-I/O sized, within a disk.
    fn stream_align(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        bs: &BlockSizes,
        fleet: &FleetShape,
        disk_size_name: &str,
    ) -> Result<Bytes, ProfileError> {
        let align_key = k("align");
        let align = match rs.align.as_deref() {
            Some(text) => parse_bytes(text).map_err(|m| self.err(&align_key, None, m))?,
            None => Bytes(bs.min().0.max(DIRECT_IO_SECTOR.0).next_power_of_two()),
        };
        if !align.0.is_power_of_two() {
            return Err(self.err(
                &align_key,
                None,
                format!("{} bytes is not a power of two", align.0),
            ));
        }
        if self.ctx.direct && align < DIRECT_IO_SECTOR {
            return Err(self.err(
                &align_key,
                None,
                format!(
                    "{} bytes is below the {}-byte minimum of direct I/O",
                    align.0, DIRECT_IO_SECTOR.0
                ),
            ));
        }
        if align > fleet.disk_size {
            return Err(self.err(
                &align_key,
                None,
                format!(
                    "{align} is larger than {disk_size_name} ({})",
                    fleet.disk_size
                ),
            ));
        }
        Ok(align)
    }

    /// A stream's lane: weight (closed loop) or own rate and queue depth (open loop).
    fn stream_lane(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        ov: &Overrides,
        fleet: &FleetShape,
    ) -> Result<Lane, ProfileError> {
        if rs.weight.is_some() && rs.rate_iops.is_some() {
            return Err(self.err(
                &k("weight"),
                None,
                format!(
                    "is mutually exclusive with {}: a stream with its own rate runs in its own \
                     lane, a weight only shares the closed-loop lane; remove one of them",
                    k("rate_iops")
                ),
            ));
        }
        let rate = self.number("stream.rate_iops", &k("rate_iops"), None, rs.rate_iops)?;
        let weight = self.integer("stream.weight", &k("weight"), None, rs.weight)?;
        if rs.qd.is_some() && rate.is_none() {
            return Err(self.err(
                &k("qd"),
                None,
                format!(
                    "is only allowed together with {} (closed-loop streams share fleet.qd)",
                    k("rate_iops")
                ),
            ));
        }
        Ok(match rate {
            Some(r) => {
                let qd = self.integer("stream.qd", &k("qd"), ov.qd, rs.qd)?;
                (None, Some(r.v), Some(qd.map_or(fleet.qd, |q| q.v)))
            }
            None => (
                Some(weight.map_or(default_int("stream.weight"), |w| w.v)),
                None,
                None,
            ),
        })
    }

    /// A stream's locality: hot bands, Zipf, or uniform.
    fn stream_locality(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
    ) -> Result<Locality, ProfileError> {
        Ok(match (&rs.hot_bands, rs.zipf) {
            (Some(_), Some(_)) => {
                return Err(self.err(
                    &k("hot_bands"),
                    None,
                    format!("is mutually exclusive with {}; keep one", k("zipf")),
                ))
            }
            (Some(text), None) => Locality::HotBands {
                bands: parse_hot_bands(text).map_err(|m| self.err(&k("hot_bands"), None, m))?,
            },
            (None, Some(_)) => {
                let theta = self.number("stream.zipf", &k("zipf"), None, rs.zipf)?;
                Locality::Zipf {
                    theta: theta.map_or(1.0, |t| t.v),
                }
            }
            (None, None) => Locality::Uniform,
        })
    }

    /// A stream's working set percentage: at least one block of the largest size.
    fn stream_working_set(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        ov: &Overrides,
        fleet: &FleetShape,
        max_bs: Bytes,
        disk_size_name: &str,
    ) -> Result<f64, ProfileError> {
        let ws_key = k("working_set_pct");
        let ws = self
            .number(
                "stream.working_set_pct",
                &ws_key,
                ov.working_set,
                rs.working_set_pct,
            )?
            .unwrap_or(Val {
                v: default_f64("stream.working_set_pct"),
                flag: None,
            });
        let ws_bytes = fleet.disk_size.0 as f64 * ws.v / 100.0;
        if ws_bytes < max_bs.0 as f64 {
            return Err(self.err(
                &ws_key,
                ws.flag,
                format!(
                    "{}% of {disk_size_name} ({}) is {} bytes, less than one block of the largest \
                     block size {max_bs}",
                    ws.v,
                    fleet.disk_size,
                    ws_bytes.floor()
                ),
            ));
        }
        Ok(ws.v)
    }

    /// A stream's disks: all of a worker's, or its list checked against (or cut to) them.
    fn stream_disks(
        &self,
        k: &impl Fn(&str) -> String,
        rs: &RawStream,
        ov: &Overrides,
        fleet: &FleetShape,
    ) -> Result<Vec<u32>, ProfileError> {
        let disks_key = k("disks");
        let all: Vec<u32> = (0..fleet.disks_per_worker).collect();
        Ok(match &rs.disks {
            None => all,
            Some(d) => match parse_disk_list(d).map_err(|m| self.err(&disks_key, None, m))? {
                None => all,
                Some(list) => {
                    let n = fleet.disks_per_worker;
                    if ov.disks.is_some() {
                        let kept: Vec<u32> = list.iter().copied().filter(|&d| d < n).collect();
                        if kept.is_empty() {
                            return Err(self.err(
                                &disks_key,
                                option("fleet.disks_per_worker").flag,
                                format!(
                                    "with {n} disks per worker none of this stream's disks {list:?} \
                                     exist; use a larger --disks"
                                ),
                            ));
                        }
                        kept
                    } else if let Some(bad) = list.iter().find(|&&d| d >= n) {
                        return Err(self.err(
                            &disks_key,
                            None,
                            format!(
                                "disk {bad} does not exist: fleet.disks_per_worker is {n} (indexes \
                                 0..={})",
                                n - 1
                            ),
                        ));
                    } else {
                        list
                    }
                }
            },
        })
    }
}

/// Validate `raw` with `ov` applied, for the target described by `ctx`.
pub fn resolve(raw: &RawProfile, ov: &Overrides, ctx: &Context) -> Result<Plan, ProfileError> {
    let origin = if raw.origin.is_empty() {
        "profile"
    } else {
        &raw.origin
    };
    let r = Resolver { origin, ctx: *ctx };
    let name = match raw.name.as_deref().map(str::trim) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => return Err(r.err("name", None, "is required and may not be empty")),
    };
    let (fleet, disk_size) = r.fleet(raw, ov)?;
    let timing = r.timing(raw, ov)?;
    let data = r.data(raw, ov)?;
    if raw.streams.is_empty() {
        return Err(r.err(
            "stream",
            None,
            "a profile needs at least one [[stream]] table (with bs, read_pct, random_pct)",
        ));
    }
    if raw.streams.len() > MAX_STREAMS {
        return Err(r.err(
            "stream",
            None,
            format!(
                "{} [[stream]] tables, more than the {MAX_STREAMS} a run may have",
                raw.streams.len()
            ),
        ));
    }
    let mut streams = Vec::with_capacity(raw.streams.len());
    let mut names = BTreeSet::new();
    for (i, rs) in raw.streams.iter().enumerate() {
        let s = r.stream(i, rs, ov, &fleet, disk_size)?;
        if !names.insert(s.name.clone()) {
            return Err(r.err(
                &format!("stream[{i}].name"),
                None,
                format!("\"{}\" is already the name of an earlier stream", s.name),
            ));
        }
        streams.push(s);
    }
    if timing.rate_iops.is_some() && streams.iter().all(|s| s.rate_iops.is_some()) {
        let flag = ov.rate.and(option("timing.rate_iops").flag);
        return Err(r.err(
            "timing.rate_iops",
            flag,
            "applies to closed-loop streams, but every stream has its own stream.rate_iops",
        ));
    }
    if timing.verify {
        // Every I/O covers whole verify units at unit offsets (docs/verify.md).
        let flag = option("timing.verify").flag.filter(|_| ov.verify);
        let unit = Bytes(VERIFY_UNIT);
        for (i, s) in streams.iter().enumerate() {
            if let Some((bs, _)) = s.bs.entries.iter().find(|(b, _)| b.0 % unit.0 != 0) {
                return Err(r.err(
                    &format!("stream[{i}].bs"),
                    ov.bs.as_ref().and(option("stream.bs").flag),
                    format!(
                        "{bs} is not a multiple of the 4k verify unit that {} needs",
                        flag.unwrap_or("timing.verify")
                    ),
                ));
            }
            if s.align.0 % unit.0 != 0 {
                return Err(r.err(
                    &format!("stream[{i}].align"),
                    None,
                    format!(
                        "{} is not a multiple of the 4k verify unit that {} needs",
                        s.align,
                        flag.unwrap_or("timing.verify")
                    ),
                ));
            }
        }
        // The verify header (offset, sequence) makes every unit distinct: a dedupe
        // ratio could not hold, so asking for both is refused rather than ignored.
        if data.dedupe_ratio != 1.0 {
            return Err(r.err(
                "data.dedupe_ratio",
                ov.dedupe_ratio.and(option("data.dedupe_ratio").flag),
                format!(
                    "{} writes a distinct header into every 4k unit, so no dedupe ratio can hold with it (docs/verify.md)",
                    flag.unwrap_or("timing.verify")
                ),
            ));
        }
    }
    Ok(Plan {
        name,
        description: raw
            .description
            .clone()
            .unwrap_or_default()
            .trim()
            .to_string(),
        fleet,
        timing,
        streams,
        data,
    })
}

/// The table default of `opt` without TOML quotes.
fn default_text(opt: &str) -> &'static str {
    option(opt)
        .default
        .unwrap_or_else(|| panic!("option {opt} has no default"))
        .trim_matches('"')
}

fn default_int(opt: &str) -> u32 {
    default_text(opt)
        .parse()
        .unwrap_or_else(|_| panic!("default of {opt} is not an integer"))
}

fn default_f64(opt: &str) -> f64 {
    default_text(opt)
        .parse()
        .unwrap_or_else(|_| panic!("default of {opt} is not a number"))
}

/// `"all"` → None; `"0-3"`, `"4,5"`, `"0-1,6"` or `[0, 1]` → sorted, deduplicated indexes.
fn parse_disk_list(d: &RawDisks) -> Result<Option<Vec<u32>>, String> {
    let mut set = BTreeSet::new();
    // No worker has more disks than fleet.disks_per_worker allows: an index past that
    // is refused before a range is expanded.
    let most = *int_range("fleet.disks_per_worker").end();
    let beyond = |v: u64| {
        format!(
            "disk {v} is beyond the last disk a worker may have ({}: fleet.disks_per_worker is at most {most})",
            most - 1
        )
    };
    let index = |v: i64| -> Result<u32, String> {
        let i = u32::try_from(v).map_err(|_| format!("{v} is not a disk index (0, 1, 2, ...)"))?;
        if i as u64 >= most {
            return Err(beyond(i as u64));
        }
        Ok(i)
    };
    match d {
        RawDisks::List(list) => {
            for &v in list {
                set.insert(index(v)?);
            }
        }
        RawDisks::Text(t) => {
            let t = t.trim();
            if t == "all" {
                return Ok(None);
            }
            for item in t.split(',') {
                let item = item.trim();
                let parse = |s: &str| -> Result<u32, String> {
                    let v = s.trim().parse::<u32>().map_err(|_| {
                        format!("'{item}' is not a disk index or range (examples: \"all\", \"0-3\", \"4,5\")")
                    })?;
                    if v as u64 >= most {
                        return Err(beyond(v as u64));
                    }
                    Ok(v)
                };
                match item.split_once('-') {
                    Some((a, b)) => {
                        let (a, b) = (parse(a)?, parse(b)?);
                        if a > b {
                            return Err(format!("range '{item}' runs backwards"));
                        }
                        set.extend(a..=b);
                    }
                    None => {
                        set.insert(parse(item)?);
                    }
                }
            }
        }
    }
    if set.is_empty() {
        return Err("the disk list is empty".into());
    }
    Ok(Some(set.into_iter().collect()))
}

/// The intervals a phase of `len` is cut into (its last may be shorter), as the run's
/// timeline cuts it.
pub fn intervals_in(len: Duration, interval: Duration) -> u64 {
    let step = interval.as_nanos().max(1);
    len.as_nanos().div_ceil(step) as u64
}

#[cfg(test)]
mod tests;
