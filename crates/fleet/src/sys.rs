//! What the host says about itself: process and whole-host CPU time, memory, network,
//! the block devices under the targets, hostname. Read from /proc and the process's CPU
//! clock so that everything the process and the kernel spend is counted (io_uring worker
//! threads are threads of this process; the loop device's kernel thread only shows in
//! the host figure). A `HostProbe` turns successive readings into `HostUsage` spans, one
//! per interval.

use std::fs;
use std::time::Instant;

use iofleet_stats::HostUsage;

use crate::error::FleetError;
use crate::settings::DropCaches;

/// The kernel's clock tick (USER_HZ), in which /proc reports CPU times.
fn clock_ticks() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

/// Counters read at one instant; `HostProbe` turns two into a `HostUsage`.
#[derive(Debug, Clone)]
struct Reading {
    at: Instant,
    /// The process's CPU time, all threads, to the nanosecond.
    proc_cpu_ns: u64,
    /// The same split into user and system time, in clock ticks (how /proc keeps it).
    proc_usr: u64,
    proc_sys: u64,
    host_busy: u64,
    host_total: u64,
    net_rx: u64,
    net_tx: u64,
    /// Completed I/Os, sectors and busy ms summed over the probed devices.
    disk_ios: u64,
    disk_sectors: u64,
    disk_busy_ms: u64,
    /// Instantaneous figures: the process's peak RSS (MiB) and the host's memory in use.
    rss_peak_mib: f64,
    mem_used_pct: f64,
}

/// How old a reading another probe of this process took may be and still serve: the
/// agents of one process (`iofleet agent --agents N`) close their intervals together,
/// and one read of /proc serves them all instead of N.
const SHARED_READING_AGE: std::time::Duration = std::time::Duration::from_millis(100);

/// A reading and the block devices it covered.
type DeviceReading = (Vec<(u32, u32)>, Reading);

/// The latest reading of this process.
static LATEST: std::sync::Mutex<Option<DeviceReading>> = std::sync::Mutex::new(None);

/// A reading for `devices` newer than `after`: the process's latest if it covers the
/// same devices and is recent, else a fresh one (which becomes the latest).
fn read_shared(devices: &[(u32, u32)], after: Instant) -> Reading {
    let mut latest = LATEST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((d, r)) = latest.as_ref() {
        if d == devices && r.at > after && r.at.elapsed() < SHARED_READING_AGE {
            return r.clone();
        }
    }
    let r = read(devices);
    *latest = Some((devices.to_vec(), r.clone()));
    r
}

/// Samples what this host spends: iofleet's CPU (all threads), the host's CPU, memory,
/// network (every interface but `lo`) and the block devices under the targets.
#[derive(Debug, Clone)]
pub struct HostProbe {
    devices: Vec<(u32, u32)>,
    last: Reading,
}

impl HostProbe {
    /// Start counting now, for the block devices `devices` (major, minor).
    pub fn new(devices: Vec<(u32, u32)>) -> Self {
        let last = read(&devices);
        HostProbe { devices, last }
    }

    /// What was spent since the previous sample (or since `new`).
    pub fn sample(&mut self) -> HostUsage {
        let now = read_shared(&self.devices, self.last.at);
        let a = &self.last;
        let t = clock_ticks();
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let wall_s = now.at.saturating_duration_since(a.at).as_secs_f64();
        let (proc_usr_s, proc_sys_s) = split_cpu(a, &now);
        let u = HostUsage {
            wall_s,
            proc_usr_s,
            proc_sys_s,
            host_busy_s: d(a.host_busy, now.host_busy) as f64 / t,
            host_total_s: d(a.host_total, now.host_total) as f64 / t,
            rss_peak_mib: now.rss_peak_mib,
            mem_used_pct_s: now.mem_used_pct * wall_s,
            net_rx_bytes: d(a.net_rx, now.net_rx),
            net_tx_bytes: d(a.net_tx, now.net_tx),
            disk_ios: d(a.disk_ios, now.disk_ios),
            disk_bytes: d(a.disk_sectors, now.disk_sectors) * 512,
            disk_busy_s: d(a.disk_busy_ms, now.disk_busy_ms) as f64 / 1e3,
            disk_devices: self.devices.len() as u32,
            storage: Vec::new(),
            scraped: Vec::new(),
        };
        self.last = now;
        u
    }
}

/// The process's CPU time between two readings, seconds, as (user, system). The total
/// is the nanosecond clock's: /proc counts in ticks of 10 ms, and a span of a few
/// milliseconds (the intervals of a simulated run, which reach the collector in bursts)
/// would get a whole tick or none, hundreds of percent of a core or zero. The split
/// follows the ticks of the span, or of the process's life when the span has none.
fn split_cpu(a: &Reading, b: &Reading) -> (f64, f64) {
    let total_s = b.proc_cpu_ns.saturating_sub(a.proc_cpu_ns) as f64 / 1e9;
    let (usr, sys) = match (
        b.proc_usr.saturating_sub(a.proc_usr),
        b.proc_sys.saturating_sub(a.proc_sys),
    ) {
        (0, 0) => (b.proc_usr, b.proc_sys),
        span => span,
    };
    let usr_share = if usr + sys == 0 {
        1.0
    } else {
        usr as f64 / (usr + sys) as f64
    };
    let usr_s = total_s * usr_share;
    (usr_s, total_s - usr_s)
}

/// The block devices (major, minor) that hold `paths`: the device itself for a block
/// device, the filesystem's device for a file or directory. Only devices the kernel
/// keeps statistics for (/proc/diskstats) are kept; tmpfs and overlay have none.
pub fn devices_under(paths: &[std::path::PathBuf]) -> Vec<(u32, u32)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let known = fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let listed = |dev: (u32, u32)| {
        known.lines().any(|l| {
            let mut f = l.split_whitespace();
            f.next().and_then(|x| x.parse().ok()) == Some(dev.0)
                && f.next().and_then(|x| x.parse().ok()) == Some(dev.1)
        })
    };
    let mut out = Vec::new();
    for p in paths {
        let Ok(m) = fs::metadata(p) else { continue };
        let raw = if m.file_type().is_block_device() {
            m.rdev()
        } else {
            m.dev()
        };
        let dev = (rustix::fs::major(raw), rustix::fs::minor(raw));
        if listed(dev) && !out.contains(&dev) {
            out.push(dev);
        }
    }
    out
}

/// Every whole disk of this host the kernel keeps statistics for: the entries of
/// /sys/block but loop, RAM and compressed-RAM devices (whose traffic is memory's, and
/// would count a file-backed loop device's I/O twice). Device-mapper and MD devices are
/// left out too: their I/O is also counted on the disks beneath them.
pub fn whole_disks() -> Vec<(u32, u32)> {
    let Ok(dir) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<(u32, u32)> = dir
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            !["loop", "ram", "zram", "dm-", "md", "nbd"]
                .iter()
                .any(|p| name.starts_with(p))
        })
        .filter_map(|e| {
            let dev = fs::read_to_string(e.path().join("dev")).ok()?;
            let (maj, min) = dev.trim().split_once(':')?;
            Some((maj.parse().ok()?, min.parse().ok()?))
        })
        .collect();
    out.sort_unstable();
    out
}

fn read(devices: &[(u32, u32)]) -> Reading {
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let mut r = Reading {
        at: Instant::now(),
        proc_cpu_ns: cpu.tv_sec as u64 * 1_000_000_000 + cpu.tv_nsec as u64,
        proc_usr: 0,
        proc_sys: 0,
        host_busy: 0,
        host_total: 0,
        net_rx: 0,
        net_tx: 0,
        disk_ios: 0,
        disk_sectors: 0,
        disk_busy_ms: 0,
        rss_peak_mib: rss_peak_mib(),
        mem_used_pct: host_mem_used_pct(),
    };
    if let Ok(stat) = fs::read_to_string("/proc/self/stat") {
        // Fields after the command name (which may contain spaces) start after ')'.
        if let Some(rest) = stat.rsplit_once(')').map(|r| r.1) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            // rest[0] is field 3 (state); utime is field 14, stime 15.
            if f.len() > 13 {
                r.proc_usr = f[11].parse().unwrap_or(0);
                r.proc_sys = f[12].parse().unwrap_or(0);
            }
        }
    }
    if let Ok(stat) = fs::read_to_string("/proc/stat") {
        if let Some(line) = stat.lines().next() {
            let v: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            if v.len() >= 4 {
                let idle = v[3] + v.get(4).copied().unwrap_or(0); // idle + iowait
                let total: u64 = v.iter().take(8).sum(); // exclude guest (already in user)
                r.host_total = total;
                r.host_busy = total - idle;
            }
        }
    }
    if let Ok(net) = fs::read_to_string("/proc/net/dev") {
        for line in net.lines().skip(2) {
            let Some((name, rest)) = line.split_once(':') else {
                continue;
            };
            if name.trim() == "lo" {
                continue;
            }
            let v: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if v.len() >= 9 {
                r.net_rx += v[0];
                r.net_tx += v[8];
            }
        }
    }
    if !devices.is_empty() {
        if let Ok(ds) = fs::read_to_string("/proc/diskstats") {
            for line in ds.lines() {
                let f: Vec<&str> = line.split_whitespace().collect();
                let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                let dev = (num(0) as u32, num(1) as u32);
                if f.len() >= 14 && devices.contains(&dev) {
                    r.disk_ios += num(3) + num(7);
                    r.disk_sectors += num(5) + num(9);
                    r.disk_busy_ms += num(12);
                }
            }
        }
    }
    r
}

/// Whether `--drop-caches` can be carried out here: `local` writes
/// /proc/sys/vm/drop_caches, which only root may; a command is the user's own way (it may
/// use sudo) and is judged when it runs.
pub fn check_drop_caches(how: &DropCaches) -> Result<(), FleetError> {
    if *how == DropCaches::Local && !rustix::process::geteuid().is_root() {
        return Err(FleetError::Input(format!(
            "--drop-caches local: needs root on {} (it writes /proc/sys/vm/drop_caches, which \
             empties the page cache of the whole host); run as root, or give a command that \
             drops them (--drop-caches 'cmd:sudo sysctl vm.drop_caches=3')",
            hostname()
        )));
    }
    Ok(())
}

/// Empty this host's page cache as `--drop-caches` says: `local` flushes dirty pages
/// (sync: dirty pages are not dropped) and writes 3 to /proc/sys/vm/drop_caches (page
/// cache, dentries and inodes); a command runs with `sh -c`. Either affects the whole
/// host. A failure names the flag.
pub fn drop_caches(how: &DropCaches) -> Result<(), FleetError> {
    check_drop_caches(how)?;
    let failed = |why: String| FleetError::Setup(format!("--drop-caches {how}: {why}"));
    match how {
        DropCaches::Local => {
            rustix::fs::sync();
            fs::write("/proc/sys/vm/drop_caches", "3\n")
                .map_err(|e| failed(format!("cannot write /proc/sys/vm/drop_caches: {e}")))
        }
        DropCaches::Command(cmd) => {
            let out = std::process::Command::new("sh")
                .args(["-c", cmd])
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| failed(format!("cannot run sh: {e}")))?;
            if out.status.success() {
                return Ok(());
            }
            let err = String::from_utf8_lossy(&out.stderr);
            let err: String = err.trim().chars().take(400).collect();
            Err(failed(format!(
                "the command failed on {} ({}): {err}",
                hostname(),
                out.status
            )))
        }
    }
}

/// Peak resident set of this process in MiB (VmHWM).
pub fn rss_peak_mib() -> f64 {
    status_kib("VmHWM:").map(|k| k / 1024.0).unwrap_or(0.0)
}

fn status_kib(key: &str) -> Option<f64> {
    let s = fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Host memory in use (total − available) as a percentage.
pub fn host_mem_used_pct() -> f64 {
    let Ok(s) = fs::read_to_string("/proc/meminfo") else {
        return 0.0;
    };
    let get = |k: &str| -> Option<f64> {
        s.lines()
            .find(|l| l.starts_with(k))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    match (get("MemTotal:"), get("MemAvailable:")) {
        (Some(t), Some(a)) if t > 0.0 => (t - a) / t * 100.0,
        _ => 0.0,
    }
}

pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// RFC 3339 UTC timestamp (seconds precision) for a time since the Unix epoch.
pub fn rfc3339(secs_since_epoch: u64) -> String {
    let days = (secs_since_epoch / 86_400) as i64;
    let rem = secs_since_epoch % 86_400;
    let (y, m, d) = iofleet_profile::units::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The CPUs this process may run on (its affinity mask), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Ask for precise timer wake-ups on the calling thread (timer slack 1 ns instead of
/// the default 50 µs): an open-loop I/O thread sleeps until each I/O's intended time,
/// and slack there is issue lag added to every latency it measures.
pub fn precise_timers() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// Pin the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(std::io::Error::from)
}

/// `0-3,6` for [0, 1, 2, 3, 6].
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// The calling thread's CPU time and run-queue delay, for the generator self-check.
/// Created and read on the thread it measures.
#[derive(Debug, Clone, Copy)]
pub struct ThreadMeter {
    last: ThreadTimes,
}

/// What the kernel counts for one thread: CPU time, time runnable but waiting for a CPU
/// (`run_delay`) and how many times it was put on a CPU (`pcount`), ns and counts since
/// the thread started. The last two come from `/proc/thread-self/schedstat` (None on
/// kernels without schedstats).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadTimes {
    pub cpu_ns: u64,
    pub runq_ns: Option<u64>,
    pub slices: Option<u64>,
}

fn thread_times() -> ThreadTimes {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let cpu_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    let stat = fs::read_to_string("/proc/thread-self/schedstat").ok();
    let field = |i: usize| {
        stat.as_deref()
            .and_then(|s| s.split_whitespace().nth(i)?.parse().ok())
    };
    ThreadTimes {
        cpu_ns,
        runq_ns: field(1),
        slices: field(2),
    }
}

impl ThreadMeter {
    pub fn start() -> Self {
        ThreadMeter {
            last: thread_times(),
        }
    }

    /// CPU time, run-queue delay and times scheduled since the last call (or `start`).
    pub fn lap(&mut self) -> ThreadTimes {
        let now = thread_times();
        let since = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
        let lap = ThreadTimes {
            cpu_ns: now.cpu_ns.saturating_sub(self.last.cpu_ns),
            runq_ns: since(self.last.runq_ns, now.runq_ns),
            slices: since(self.last.slices, now.slices),
        };
        self.last = now;
        lap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes of one process that sample together share one reading of /proc; a probe
    /// never gets a reading as old as its own last one (its span would be empty), and a
    /// probe of other devices gets its own.
    #[test]
    fn probes_of_one_process_share_a_recent_reading() {
        let start = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        let a = read_shared(&[], start);
        let b = read_shared(&[], start);
        assert_eq!(
            a.at, b.at,
            "a second probe sampling at once reuses the reading"
        );
        let c = read_shared(&[], a.at);
        assert!(
            c.at > a.at,
            "a probe whose last reading is that one reads afresh"
        );
        let d = read_shared(&[(7, 0)], start);
        assert!(d.at > c.at, "other devices, another reading");
        // Two probes sampling in turn each get a non-empty span.
        let mut p = HostProbe::new(Vec::new());
        let mut q = HostProbe::new(Vec::new());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (u, v) = (p.sample(), q.sample());
        assert!(
            u.wall_s > 0.0 && v.wall_s > 0.0,
            "{} {}",
            u.wall_s,
            v.wall_s
        );
    }

    #[test]
    fn cpu_lists_and_affinity() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_cpu_list(&[]), "");
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        // Pinning a fresh thread to an allowed CPU holds; it then runs only there.
        let cpu = *allowed.last().unwrap();
        let on = std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            rustix::thread::sched_getcpu()
        })
        .join()
        .unwrap();
        assert_eq!(on, cpu);
    }

    #[test]
    fn thread_meter_counts_this_threads_cpu_not_sleep() {
        let cpu_ns = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let mut m = ThreadMeter::start();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let idle_lap = m.lap();
        let idle = idle_lap.cpu_ns;
        // Spin until this thread has had 20 ms of CPU, however busy the machine is.
        let (c0, t0) = (cpu_ns(), Instant::now());
        let mut x = 0u64;
        while cpu_ns() - c0 < 20_000_000 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let wall = t0.elapsed().as_nanos() as u64;
        let lap = m.lap();
        let (busy, runq) = (lap.cpu_ns, lap.runq_ns);
        assert!(idle < 10_000_000, "sleeping costs no CPU: {idle}");
        assert!(busy >= 20_000_000, "spinning does: {busy}");
        assert!(
            busy <= wall + 1_000_000,
            "no more than the wall time: {busy} > {wall}"
        );
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            assert!(runq.is_some());
            // Waking from the sleep put the thread on a CPU at least once (a spin that
            // is never preempted adds no slice of its own).
            let slices = idle_lap.slices.unwrap() + lap.slices.unwrap();
            assert!(slices >= 1, "{idle_lap:?} {lap:?}");
        }
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn probe_counts_busy_work_and_the_disk_under_a_path() {
        let devs = devices_under(&[std::path::PathBuf::from("/")]);
        let mut p = HostProbe::new(devs.clone());
        // Spin until this thread has had 300 ms of CPU, however busy the machine is.
        let cpu_s = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
        };
        let c0 = cpu_s();
        let mut x = 0u64;
        while cpu_s() - c0 < 0.3 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = p.sample();
        assert!(u.wall_s >= 0.3, "{u:?}");
        // The process's CPU, counted in clock ticks, holds at least this thread's.
        assert!(u.proc_usr_s + u.proc_sys_s >= 0.25, "{u:?}");
        assert!(u.host_busy_s > 0.0 && u.host_total_s >= u.host_busy_s);
        assert!(u.rss_peak_mib > 0.0 && u.mem_used_pct_s > 0.0);
        assert_eq!(u.disk_devices as usize, devs.len());
        // No path, no device; a path on a filesystem without a block device neither.
        assert!(devices_under(&[]).is_empty());
        assert!(devices_under(&[std::path::PathBuf::from("/proc")]).is_empty());
    }

    #[test]
    fn process_cpu_of_a_short_span_is_counted_to_the_nanosecond() {
        // 2 ms of CPU is a fifth of a clock tick: counted in ticks, it reads as 0 or as
        // 10 ms (500% of a core over a 2 ms span).
        let mut p = HostProbe::new(Vec::new());
        let cpu_ns = || {
            let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let c0 = cpu_ns();
        let mut x = 0u64;
        while cpu_ns() - c0 < 2_000_000 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = p.sample();
        let cpu = u.proc_usr_s + u.proc_sys_s;
        assert!(cpu >= 0.002, "{u:?}");
        // Other tests' threads count too, each known to the kernel up to its last
        // scheduler tick (at most 10 ms): no more than every core busy, give or take that.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(cpu <= (u.wall_s + 0.01) * cores, "{u:?}");
    }

    #[test]
    fn cpu_is_split_as_the_ticks_split_it() {
        let at = Instant::now();
        let reading = |cpu_ns, usr, sys| Reading {
            at,
            proc_cpu_ns: cpu_ns,
            proc_usr: usr,
            proc_sys: sys,
            host_busy: 0,
            host_total: 0,
            net_rx: 0,
            net_tx: 0,
            disk_ios: 0,
            disk_sectors: 0,
            disk_busy_ms: 0,
            rss_peak_mib: 0.0,
            mem_used_pct: 0.0,
        };
        let close = |(a, b): (f64, f64), (x, y): (f64, f64)| {
            assert!((a - x).abs() < 1e-12 && (b - y).abs() < 1e-12, "{a} {b}");
        };
        // The span's ticks: 3 of user, 1 of system.
        close(
            split_cpu(&reading(0, 10, 10), &reading(40_000_000, 13, 11)),
            (0.03, 0.01),
        );
        // No tick in the span (3 ms): the process's ticks so far, 1 to 1.
        close(
            split_cpu(&reading(0, 5, 5), &reading(3_000_000, 5, 5)),
            (0.0015, 0.0015),
        );
        // No tick yet at all: user time.
        close(
            split_cpu(&reading(0, 0, 0), &reading(1_000_000, 0, 0)),
            (0.001, 0.0),
        );
    }
}
