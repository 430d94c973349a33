//! I/O traces → fitted profiles (`iofleet profile from-trace`).
//!
//! [`parse`] reads three trace formats into [`TraceIo`] records (blkparse's default text
//! output, a plain CSV, SNIA IOTTA MSR-Cambridge); [`fit`] turns the records of a trace,
//! whole or cut into time windows, into [`Plan`]s that the profile crate's `plan_toml`
//! prints as profiles `iofleet run` accepts. Per direction it fits the block-size
//! distribution, the random share (from seek distance), the alignment and hot bands, and
//! over both the read % and the arrival rate. It reads no files and knows nothing of
//! engines: the choices it makes are listed in docs/traces.md, which is the user-facing
//! account.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::time::Duration;

use iofleet_profile::{
    Arrival, BlockSizes, Bytes, FleetShape, HotBand, Locality, Plan, Prepare, StreamPlan, Timing,
};
use thiserror::Error;

/// The trace formats `parse` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// blkparse's default text output; queue (`Q`) events of reads and writes.
    Blkparse,
    /// `time,op,offset,length`: seconds, R/W or read/write, bytes, bytes.
    Csv,
    /// SNIA IOTTA MSR-Cambridge: Timestamp (Windows filetime, 100 ns ticks), Hostname,
    /// DiskNumber, Type, Offset, Size, ResponseTime.
    Msr,
}

impl std::fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Csv => "csv",
            TraceFormat::Msr => "msr",
        })
    }
}

#[derive(Debug, Error)]
pub enum TraceError {
    /// A line that should be an event but does not parse; `line` counts from 1.
    #[error("{origin} line {line}: {message}")]
    Line {
        origin: String,
        line: usize,
        message: String,
    },
    #[error("cannot read trace {origin}: {source}")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: no read or write I/O found (is --format {format} right?)")]
    Empty { origin: String, format: TraceFormat },
}

/// One read or write of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceIo {
    /// Issue time in nanoseconds on the trace's own clock.
    pub time_ns: i128,
    pub read: bool,
    pub offset: u64,
    pub len: u64,
    /// The device the I/O went to (index into the trace's devices, in order of
    /// appearance): sequential runs are told per device.
    pub device: u32,
}

/// `digits[.digits]` seconds as integer nanoseconds (decimals past the 9th are dropped).
fn secs_ns(text: &str) -> Option<i128> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(frac) || whole.len() > 20 {
        return None;
    }
    let w: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut f = frac.chars().take(9).collect::<String>();
    while f.len() < 9 {
        f.push('0');
    }
    Some(w * 1_000_000_000 + f.parse::<i128>().ok()?)
}

/// Read or write from an op field (`R`, `W`, `read`, `write`, any case).
fn op(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "r" | "read" => Some(true),
        "w" | "write" => Some(false),
        _ => None,
    }
}

/// Parse a whole trace held in memory; see [`parse_reader`].
pub fn parse(text: &str, format: TraceFormat, origin: &str) -> Result<Vec<TraceIo>, TraceError> {
    parse_reader(text.as_bytes(), format, origin)
}

/// Parse a trace line by line (bytes that are not UTF-8, say in a blkparse process
/// name, are replaced, not refused). `origin` (the file) prefixes every error. The
/// records come back sorted by time (blkparse merges per-CPU buffers, so events may be
/// slightly out of order).
pub fn parse_reader(
    mut input: impl BufRead,
    format: TraceFormat,
    origin: &str,
) -> Result<Vec<TraceIo>, TraceError> {
    let mut devices: HashMap<String, u32> = HashMap::new();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        let read = input
            .read_until(b'\n', &mut buf)
            .map_err(|source| TraceError::Read {
                origin: origin.to_string(),
                source,
            })?;
        if read == 0 {
            break;
        }
        n += 1;
        let err = |message: String| TraceError::Line {
            origin: origin.to_string(),
            line: n,
            message,
        };
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim();
        if line.is_empty() {
            continue;
        }
        let parsed = match format {
            TraceFormat::Blkparse => blkparse_line(line).map_err(err)?,
            TraceFormat::Csv => csv_line(line, n).map_err(err)?,
            TraceFormat::Msr => msr_line(line, n).map_err(err)?,
        };
        if let Some((device, time_ns, read, offset, len)) = parsed {
            let next = devices.len() as u32;
            let device = *devices.entry(device).or_insert(next);
            out.push(TraceIo {
                time_ns,
                read,
                offset,
                len,
                device,
            });
        }
    }
    if out.is_empty() {
        return Err(TraceError::Empty {
            origin: origin.to_string(),
            format,
        });
    }
    out.sort_by_key(|io| io.time_ns);
    Ok(out)
}

type Parsed = Option<(String, i128, bool, u64, u64)>;

/// A blkparse line: an event when its first field is `MAJOR,MINOR`, else (summaries,
/// blank or banner lines) skipped. Only queue (`Q`) events of reads and writes count.
fn blkparse_line(line: &str) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let is_dev = f[0].split_once(',').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && (a.to_owned() + b).bytes().all(|c| c.is_ascii_digit())
    });
    if !is_dev {
        return Ok(None);
    }
    if f.len() < 7 {
        return Err(format!(
            "an event needs device, cpu, sequence, time, pid, action and RWBS fields; found {}",
            f.len()
        ));
    }
    for (i, what) in [(1, "cpu"), (2, "sequence number"), (4, "pid")] {
        if f[i].parse::<u64>().is_err() {
            return Err(format!("{what} '{}' is not a whole number", f[i]));
        }
    }
    let time = secs_ns(f[3]).ok_or_else(|| format!("time '{}' is not seconds", f[3]))?;
    if f[5] != "Q" {
        return Ok(None);
    }
    let rwbs = f[6];
    let read = if rwbs.contains('R') {
        true
    } else if rwbs.contains('W') {
        false
    } else {
        return Ok(None);
    };
    if f.len() < 10 || f[8] != "+" {
        return Err(format!(
            "a queue event of a {} needs 'SECTOR + COUNT' after '{rwbs}'",
            if read { "read" } else { "write" }
        ));
    }
    let sector: u64 = f[7]
        .parse()
        .map_err(|_| format!("sector '{}' is not a whole number", f[7]))?;
    let count: u64 = f[9]
        .parse()
        .map_err(|_| format!("sector count '{}' is not a whole number", f[9]))?;
    if count == 0 {
        return Ok(None);
    }
    Ok(Some((
        f[0].to_string(),
        time,
        read,
        sector * 512,
        count * 512,
    )))
}

/// A header is a first line whose first field is not a number.
fn is_header(first_field: &str, n: usize) -> bool {
    n == 1 && first_field.parse::<f64>().is_err()
}

fn whole(what: &str, text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("{what} '{text}' is not a whole number of bytes"))
}

fn length(text: &str) -> Result<u64, String> {
    let len = whole("length", text)?;
    if len == 0 {
        return Err("length must be greater than 0".into());
    }
    Ok(len)
}

/// `time,op,offset,length`.
fn csv_line(line: &str, n: usize) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if is_header(f[0], n) {
        return Ok(None);
    }
    if f.len() != 4 {
        return Err(format!(
            "expected 4 fields (time,op,offset,length), found {}",
            f.len()
        ));
    }
    let time = secs_ns(f[0]).ok_or_else(|| format!("time '{}' is not seconds", f[0]))?;
    let read = op(f[1]).ok_or_else(|| format!("op '{}' is not R, W, read or write", f[1]))?;
    Ok(Some((
        String::new(),
        time,
        read,
        whole("offset", f[2])?,
        length(f[3])?,
    )))
}

/// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
fn msr_line(line: &str, n: usize) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if is_header(f[0], n) {
        return Ok(None);
    }
    if f.len() != 7 {
        return Err(format!(
            "expected 7 fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), \
             found {}",
            f.len()
        ));
    }
    let ticks: i128 = f[0]
        .parse::<u64>()
        .map_err(|_| format!("Timestamp '{}' is not a whole number of 100 ns ticks", f[0]))?
        .into();
    if f[2].parse::<u64>().is_err() {
        return Err(format!("DiskNumber '{}' is not a whole number", f[2]));
    }
    let read = op(f[3]).ok_or_else(|| format!("Type '{}' is not Read or Write", f[3]))?;
    if f[6].parse::<u64>().is_err() {
        return Err(format!("ResponseTime '{}' is not a whole number", f[6]));
    }
    Ok(Some((
        format!("{}/{}", f[1], f[2]),
        ticks * 100,
        read,
        whole("Offset", f[4])?,
        length(f[5])?,
    )))
}

/// What to fit and how to name it.
#[derive(Debug, Clone)]
pub struct FitOptions {
    /// Profile name (windows get `-wNN` appended).
    pub name: String,
    /// Where the trace came from, for the description (`FILE (FORMAT)`).
    pub source: String,
    /// Cut the trace into windows of this length; None: one profile of the whole trace.
    pub split: Option<Duration>,
}

/// One fitted profile: the whole trace or one window of it.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// Window number from 1 (None without --split).
    pub window: Option<usize>,
    /// Start and end of the window, seconds from the trace's first I/O.
    pub from_s: f64,
    pub to_s: f64,
    pub ios: usize,
    pub plan: Plan,
}

/// Queue depth of fitted profiles: a trace of issue times does not say how many I/Os
/// the application kept outstanding, so iofleet's usual 16 is written (set --qd).
pub const FITTED_QD: u32 = 16;
/// Locality is fitted on this many equal slices of the addressed span.
const SLICES: usize = 100;

/// Fit `ios` (sorted by time, as `parse` returns them). With a split, a window without
/// any I/O yields no profile.
pub fn fit(ios: &[TraceIo], opts: &FitOptions) -> Vec<Fitted> {
    if ios.is_empty() {
        return Vec::new();
    }
    // The addressed span, from the lowest offset (4K-aligned down) to the highest end.
    let base = ios.iter().map(|io| io.offset).min().unwrap_or(0) / 4096 * 4096;
    let top = ios.iter().map(|io| io.offset + io.len).max().unwrap_or(0);
    let span = (top - base).max(1);
    let disk_size = span.div_ceil(Bytes::MIB) * Bytes::MIB;

    // Sequential: starts where the previous I/O of the same direction on the same device
    // ended.
    let mut last_end: HashMap<(u32, bool), u64> = HashMap::new();
    let seq: Vec<bool> = ios
        .iter()
        .map(|io| {
            let prev = last_end.insert((io.device, io.read), io.offset + io.len);
            prev == Some(io.offset)
        })
        .collect();

    let t0 = ios[0].time_ns;
    let t_end = ios[ios.len() - 1].time_ns;
    let mut windows: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, io) in ios.iter().enumerate() {
        let w = match opts.split {
            Some(d) => ((io.time_ns - t0) / d.as_nanos().max(1) as i128) as usize,
            None => 0,
        };
        windows.entry(w).or_default().push(i);
    }
    let count = windows.keys().last().map_or(0, |w| w + 1);
    let width = count.to_string().len();
    windows
        .into_iter()
        .map(|(w, idx)| {
            let (from, to) = match opts.split {
                Some(d) => {
                    let d = d.as_nanos() as i128;
                    let from = t0 + w as i128 * d;
                    // The last window ends at the last I/O.
                    let to = if w + 1 < count {
                        from + d
                    } else {
                        t_end.max(from)
                    };
                    (from, to)
                }
                None => (t0, t_end),
            };
            let name = match opts.split {
                Some(_) => format!("{}-w{:0width$}", opts.name, w + 1),
                None => opts.name.clone(),
            };
            let window = opts.split.map(|_| w + 1);
            let len_ns = (to - from).max(0);
            let plan = fit_window(
                ios,
                &seq,
                &idx,
                Window {
                    name,
                    len_ns,
                    base,
                    span,
                    disk_size,
                    describe: match window {
                        Some(n) => format!(
                            "window {n} ({:.3} s to {:.3} s) of {}",
                            (from - t0) as f64 / 1e9,
                            (to - t0) as f64 / 1e9,
                            opts.source
                        ),
                        None => opts.source.clone(),
                    },
                },
            );
            Fitted {
                window,
                from_s: (from - t0) as f64 / 1e9,
                to_s: (to - t0) as f64 / 1e9,
                ios: idx.len(),
                plan,
            }
        })
        .collect()
}

struct Window {
    name: String,
    len_ns: i128,
    base: u64,
    span: u64,
    disk_size: u64,
    describe: String,
}

/// Block size rounded to the nearest multiple of 512 bytes (at least 512), which every
/// target and direct I/O accept.
fn round_bs(len: u64) -> u64 {
    (((len + 256) / 512) * 512).max(512)
}

/// Parts of 10,000 (at least 1 for a non-zero count), so small shares survive.
fn parts(n: usize, total: usize) -> u32 {
    (((n as f64 / total as f64) * 10_000.0).round() as u32).max(1)
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn fit_window(ios: &[TraceIo], seq: &[bool], idx: &[usize], w: Window) -> Plan {
    let total = idx.len();
    let mut streams = Vec::new();
    for read in [true, false] {
        let mine: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|&i| ios[i].read == read)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut sizes: BTreeMap<u64, usize> = BTreeMap::new();
        for &i in &mine {
            *sizes.entry(round_bs(ios[i].len)).or_default() += 1;
        }
        let bs = BlockSizes {
            entries: sizes
                .iter()
                .map(|(&s, &n)| (Bytes(s), parts(n, mine.len())))
                .collect(),
        };
        let random: Vec<usize> = mine.iter().copied().filter(|&i| !seq[i]).collect();
        // Alignment: the largest power of two from 512 to 4K dividing every random offset.
        let mut align = 4096u64;
        for &i in &random {
            while align > 512 && !(ios[i].offset - w.base).is_multiple_of(align) {
                align /= 2;
            }
        }
        let offsets: Vec<u64> = random.iter().map(|&i| ios[i].offset - w.base).collect();
        streams.push(StreamPlan {
            name: if read { "read" } else { "write" }.to_string(),
            bs: if bs.entries.len() == 1 {
                BlockSizes::fixed(bs.entries[0].0)
            } else {
                bs
            },
            read_pct: if read { 100.0 } else { 0.0 },
            random_pct: round1(random.len() as f64 / mine.len() as f64 * 100.0),
            align: Bytes(align),
            weight: Some(parts(mine.len(), total)),
            rate_iops: None,
            qd: None,
            locality: hot_bands(&offsets, w.span),
            working_set_pct: 100.0,
            disks: vec![0],
        });
    }
    let secs = w.len_ns as f64 / 1e9;
    // Inter-arrival spread: Poisson when the gaps vary as much as exponential ones do.
    let times: Vec<i128> = idx.iter().map(|&i| ios[i].time_ns).collect();
    let gaps: Vec<f64> = times.windows(2).map(|p| (p[1] - p[0]) as f64).collect();
    let arrival = if gaps.len() < 2 {
        Arrival::Poisson
    } else {
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        if mean > 0.0 && var.sqrt() / mean < 0.5 {
            Arrival::Uniform
        } else {
            Arrival::Poisson
        }
    };
    let rate = (secs > 0.0).then(|| round1(total as f64 / secs).max(0.1));
    let duration = Duration::from_secs((secs.ceil() as u64).max(1));
    let reads = idx.iter().filter(|&&i| ios[i].read).count();
    Plan {
        name: w.name,
        description: format!(
            "Fitted by iofleet profile from-trace from {}: {total} I/Os over {secs:.3} s, \
             {:.1}% reads, {}. Block sizes, random %, alignment and hot bands per direction, \
             read % and arrivals are the trace's; 1 worker x 1 disk of the addressed span, \
             1 thread, qd {FITTED_QD} are iofleet's choices (the trace does not give them; set \
             --qd, --workers, --disks).",
            w.describe,
            reads as f64 / total as f64 * 100.0,
            match rate {
                Some(r) => format!("{r} IOPS"),
                None => "no measurable rate (one instant)".to_string(),
            },
        ),
        fleet: FleetShape {
            workers: 1,
            disks_per_worker: 1,
            disk_size: Bytes(w.disk_size),
            threads_per_disk: 1,
            qd: FITTED_QD,
            io_threads: None,
            cpus: None,
        },
        timing: Timing {
            prepare: Prepare::Random,
            warmup: Duration::ZERO,
            duration,
            interval: Duration::from_secs(1),
            rate_iops: rate,
            arrival,
            verify: false,
        },
        data: Default::default(),
        streams,
    }
}

/// Hot bands of random offsets over `span` bytes: the I/O share of the hottest 5% and
/// the next hottest 15% of the span's slices, when the hottest 20% carry clearly more
/// than 20% of the I/O (beyond sampling noise); else uniform. The bands say how skewed
/// the accesses are; the profile grammar lays them from the start of the working set,
/// wherever the trace's hot spots were.
fn hot_bands(offsets: &[u64], span: u64) -> Locality {
    let n = offsets.len();
    if n < SLICES {
        return Locality::Uniform;
    }
    let mut slices = vec![0usize; SLICES];
    for &o in offsets {
        let s = ((o as u128 * SLICES as u128) / span as u128) as usize;
        slices[s.min(SLICES - 1)] += 1;
    }
    slices.sort_unstable_by(|a, b| b.cmp(a));
    let share = |k: usize| slices[..k].iter().sum::<usize>() as f64 / n as f64;
    let (top5, top20) = (share(5), share(20));
    let noise = 4.0 * (0.2 * 0.8 / n as f64).sqrt();
    if top20 <= 0.2 + noise.max(0.05) {
        return Locality::Uniform;
    }
    let mut bands = vec![HotBand {
        io_pct: round1(top5 * 100.0).max(0.1),
        range_pct: 5.0,
    }];
    let next = round1((top20 - top5) * 100.0);
    if next > 0.0 {
        bands.push(HotBand {
            io_pct: next.min(100.0 - bands[0].io_pct).max(0.1),
            range_pct: 15.0,
        });
    }
    Locality::HotBands { bands }
}

#[cfg(test)]
mod tests {
    use iofleet_profile::{parse_toml, plan_toml, resolve, Context, Overrides};

    use super::*;

    fn opts(split: Option<Duration>) -> FitOptions {
        FitOptions {
            name: "t".into(),
            source: "t.csv (csv)".into(),
            split,
        }
    }

    /// The fitted plan, printed and resolved again as `iofleet run` would.
    fn round_trip(plan: &Plan) -> Plan {
        let text = plan_toml(plan);
        let raw = parse_toml(&text, "fitted").unwrap();
        resolve(&raw, &Overrides::default(), &Context { direct: true }).unwrap()
    }

    #[test]
    fn seconds_are_exact_nanoseconds() {
        assert_eq!(secs_ns("1.5"), Some(1_500_000_000));
        assert_eq!(secs_ns("0.000000001"), Some(1));
        assert_eq!(secs_ns("12"), Some(12_000_000_000));
        assert_eq!(secs_ns("1.0000000019"), Some(1_000_000_001));
        assert_eq!(secs_ns("-1"), None);
        assert_eq!(secs_ns("1e3"), None);
        assert_eq!(secs_ns("."), None);
    }

    #[test]
    fn blkparse_keeps_queue_events_of_reads_and_writes() {
        let text = "\
  8,0    3        1     0.000000000   697  Q   R 223490 + 8 [kjournald]
  8,0    3        2     0.000001000   697  G   R 223490 + 8 [kjournald]
  8,0    3        3     0.000002000   697  C   R 223490 + 8 [0]
  8,0    0        4     0.000100000   698  Q  WS 223498 + 16 [fio]
  8,0    0        5     0.000200000   698  Q  FN [fio]
  8,0    0        0     0.000300000     0  m   N cfq698 insert_request
CPU0 (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           1,        8KiB
Total (8,0):
";
        let ios = parse(text, TraceFormat::Blkparse, "t.txt").unwrap();
        assert_eq!(ios.len(), 2);
        assert_eq!(
            (ios[0].read, ios[0].offset, ios[0].len),
            (true, 223490 * 512, 4096)
        );
        assert_eq!(
            (ios[1].read, ios[1].len, ios[1].time_ns),
            (false, 8192, 100_000)
        );
        let bad = "  8,0    3        1     0.000000000   697  Q   R 223490 8 [x]\n";
        let e = parse(bad, TraceFormat::Blkparse, "t.txt").unwrap_err();
        assert!(e.to_string().starts_with("t.txt line 1: "), "{e}");
        let bad = "CPU0 (8,0):\n  8,0    x        1     0.0   697  Q   R 1 + 8 [x]\n";
        let e = parse(bad, TraceFormat::Blkparse, "t.txt").unwrap_err();
        assert!(e.to_string().contains("line 2: cpu 'x'"), "{e}");
    }

    #[test]
    fn csv_and_msr_lines() {
        let ios = parse(
            "time,op,offset,length\n0.5,read,0,4096\n1,W,4096,8192\n",
            TraceFormat::Csv,
            "t.csv",
        )
        .unwrap();
        assert_eq!(ios.len(), 2);
        assert_eq!((ios[1].read, ios[1].time_ns), (false, 1_000_000_000));
        let e = parse("0.5,read,0,4096\n1,X,0,512\n", TraceFormat::Csv, "t.csv").unwrap_err();
        assert!(e.to_string().contains("line 2: op 'X'"), "{e}");
        let e = parse("0.5,read,0\n", TraceFormat::Csv, "t.csv").unwrap_err();
        assert!(e.to_string().contains("line 1: expected 4 fields"), "{e}");
        let msr = "128166372003061629,hm,0,Read,3154059264,32768,1346\n\
                   128166372003061630,hm,1,Write,0,512,10\n";
        let ios = parse(msr, TraceFormat::Msr, "m.csv").unwrap();
        assert_eq!(ios[1].time_ns - ios[0].time_ns, 100);
        assert_ne!(ios[0].device, ios[1].device);
        let e = parse("1,hm,0,Read,0,0,1\n", TraceFormat::Msr, "m.csv").unwrap_err();
        assert!(e.to_string().contains("line 1: length must be"), "{e}");
        let e = parse("", TraceFormat::Msr, "m.csv").unwrap_err();
        assert!(matches!(e, TraceError::Empty { .. }));
    }

    #[test]
    fn every_malformed_line_names_its_line_and_what_is_wrong() {
        let ev = "  8,0    0        1     0.000000001   697  Q   R 8 + 8 [x]";
        let cases: &[(TraceFormat, &str, &str)] = &[
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     0.1   697  Q",
                "needs device, cpu",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        x     0.1   697  Q   R 8 + 8",
                "sequence number 'x'",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     0.1   p  Q   R 8 + 8",
                "pid 'p'",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     1.x   697  Q   R 8 + 8",
                "time '1.x'",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     0.1   697  Q   W s + 8",
                "sector 's'",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     0.1   697  Q   W 8 + n",
                "sector count 'n'",
            ),
            (
                TraceFormat::Blkparse,
                "  8,0    0        1     0.1   697  Q   W 8",
                "'SECTOR + COUNT'",
            ),
            (TraceFormat::Csv, "x,read,0,512", "time 'x'"),
            (TraceFormat::Csv, "1,read,0,512,9", "expected 4 fields"),
            (TraceFormat::Csv, "1,read,0,-512", "length '-512'"),
            (TraceFormat::Msr, "1,h,0,Read,0,512", "expected 7 fields"),
            (TraceFormat::Msr, "x,h,0,Read,0,512,1", "Timestamp 'x'"),
            (TraceFormat::Msr, "1,h,d,Read,0,512,1", "DiskNumber 'd'"),
            (TraceFormat::Msr, "1,h,0,Read,o,512,1", "Offset 'o'"),
            (TraceFormat::Msr, "1,h,0,Read,0,512,r", "ResponseTime 'r'"),
        ];
        for (format, bad, why) in cases {
            // A good first line, so the bad one (line 2) is never taken for a header.
            let good = match format {
                TraceFormat::Blkparse => ev,
                TraceFormat::Csv => "0,read,0,512",
                TraceFormat::Msr => "1,h,0,Read,0,512,1",
            };
            let e = parse(&format!("{good}\n{bad}\n"), *format, "t").unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("t line 2: "), "{bad}: {msg}");
            assert!(msg.contains(why), "{bad}: wants {why}: {msg}");
        }
    }

    /// `n` I/Os, one every millisecond: reads of 4k at random-looking offsets, every
    /// fourth a 64k sequential write; 90% of the reads in the first 5% of 1 GiB.
    fn synthetic(n: usize) -> Vec<TraceIo> {
        let gib = 1u64 << 30;
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 11
        };
        let mut cursor = 0;
        (0..n)
            .map(|i| {
                let (read, offset, len) = if i % 4 == 3 {
                    cursor += 65536;
                    (false, cursor - 65536, 65536)
                } else if next() % 10 < 9 {
                    (true, next() % (gib / 20 / 4096) * 4096, 4096)
                } else {
                    (true, next() % (gib / 4096 - 1) * 4096, 4096)
                };
                TraceIo {
                    time_ns: i as i128 * 1_000_000,
                    read,
                    offset,
                    len,
                    device: 0,
                }
            })
            .collect()
    }

    #[test]
    fn fit_finds_mix_randomness_locality_and_rate() {
        let mut ios = synthetic(20_000);
        // Span exactly 1 GiB: one I/O at the very end.
        ios.last_mut().unwrap().offset = (1 << 30) - 4096;
        ios.last_mut().unwrap().len = 4096;
        ios.last_mut().unwrap().read = true;
        let f = fit(&ios, &opts(None));
        assert_eq!(f.len(), 1);
        let p = round_trip(&f[0].plan);
        assert_eq!(p.streams.len(), 2);
        let (r, w) = (&p.streams[0], &p.streams[1]);
        assert_eq!(r.bs, BlockSizes::fixed(Bytes(4096)));
        assert_eq!(w.bs, BlockSizes::fixed(Bytes(65536)));
        let (rw, ww) = (r.weight.unwrap(), w.weight.unwrap());
        assert!(
            (7499..=7501).contains(&rw) && (2499..=2501).contains(&ww),
            "{rw} {ww}"
        );
        assert_eq!(r.random_pct, 100.0);
        assert!(w.random_pct < 0.1, "{}", w.random_pct);
        assert_eq!(r.align, Bytes(4096));
        match &r.locality {
            Locality::HotBands { bands } => {
                assert!((bands[0].io_pct - 91.0).abs() < 1.5, "{bands:?}");
                assert_eq!(bands[0].range_pct, 5.0);
            }
            other => panic!("{other:?}"),
        }
        // 20,000 I/Os over 19.999 s.
        let rate = p.timing.rate_iops.unwrap();
        assert!((rate - 20_000.0 / 19.999).abs() < 0.1, "{rate}");
        assert_eq!(p.timing.arrival, Arrival::Uniform, "evenly spaced");
        assert_eq!(p.fleet.disk_size, Bytes(1 << 30));
    }

    #[test]
    fn split_fits_one_plan_per_window() {
        let ios = synthetic(6_000); // 6 s
        let f = fit(&ios, &opts(Some(Duration::from_secs(2))));
        assert_eq!(f.len(), 3);
        for (i, w) in f.iter().enumerate() {
            assert_eq!(w.window, Some(i + 1));
            assert_eq!(w.ios, 2000);
            assert_eq!(w.plan.name, format!("t-w{}", i + 1));
            assert!((w.plan.timing.rate_iops.unwrap() - 1000.0).abs() < 1.0);
            round_trip(&w.plan);
        }
        assert_eq!((f[1].from_s, f[1].to_s), (2.0, 4.0));
    }
}
