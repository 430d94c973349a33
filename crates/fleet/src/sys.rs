//! What the host says about itself: process and whole-host CPU time, memory, hostname.
//! Read from /proc so that everything the process and the kernel spend is counted
//! (io_uring worker threads are threads of this process; the loop device's kernel
//! thread only shows in the host figure). Readings are snapshots; `CpuSpan` turns two of
//! them into rates.

use std::fs;

/// A snapshot of CPU counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSnap {
    /// Process user and system CPU time, seconds.
    pub proc_usr_s: f64,
    pub proc_sys_s: f64,
    /// Host busy and total jiffies (all cores).
    pub host_busy: u64,
    pub host_total: u64,
    /// Wall clock, seconds since an arbitrary point.
    pub wall_s: f64,
}

fn clock_ticks() -> f64 {
    // USER_HZ is 100 on every Linux architecture we run on; /proc reports in it.
    100.0
}

impl CpuSnap {
    pub fn now(wall_s: f64) -> Self {
        let mut s = CpuSnap {
            wall_s,
            ..Default::default()
        };
        if let Ok(stat) = fs::read_to_string("/proc/self/stat") {
            // Fields after the command name (which may contain spaces) start after ')'.
            if let Some(rest) = stat.rsplit_once(')').map(|r| r.1) {
                let f: Vec<&str> = rest.split_whitespace().collect();
                // rest[0] is field 3 (state); utime is field 14, stime 15.
                if f.len() > 13 {
                    s.proc_usr_s = f[11].parse::<f64>().unwrap_or(0.0) / clock_ticks();
                    s.proc_sys_s = f[12].parse::<f64>().unwrap_or(0.0) / clock_ticks();
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
                    s.host_total = total;
                    s.host_busy = total - idle;
                }
            }
        }
        s
    }
}

/// CPU use between two snapshots.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSpan {
    pub usr_pct: f64,
    pub sys_pct: f64,
    pub host_pct: f64,
    /// Process CPU seconds in the span.
    pub proc_s: f64,
    /// Host busy CPU seconds in the span (all cores).
    pub host_busy_s: f64,
}

impl CpuSpan {
    pub fn between(a: &CpuSnap, b: &CpuSnap) -> Self {
        let wall = (b.wall_s - a.wall_s).max(1e-9);
        let usr = (b.proc_usr_s - a.proc_usr_s).max(0.0);
        let sys = (b.proc_sys_s - a.proc_sys_s).max(0.0);
        let total = b.host_total.saturating_sub(a.host_total) as f64;
        let busy = b.host_busy.saturating_sub(a.host_busy) as f64;
        CpuSpan {
            usr_pct: usr / wall * 100.0,
            sys_pct: sys / wall * 100.0,
            host_pct: if total > 0.0 {
                busy / total * 100.0
            } else {
                0.0
            },
            proc_s: usr + sys,
            host_busy_s: busy / clock_ticks(),
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
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
    }

    #[test]
    fn cpu_span_counts_busy_work() {
        let a = CpuSnap::now(0.0);
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = CpuSnap::now(t.elapsed().as_secs_f64());
        let span = CpuSpan::between(&a, &b);
        assert!(span.usr_pct + span.sys_pct > 50.0, "{span:?}");
        assert!(span.host_pct > 0.0);
        assert!(rss_peak_mib() > 0.0);
        assert!(host_mem_used_pct() > 0.0);
    }
}
