//! Generator throughput: GB/s of write data one core produces with each data pattern.
//!
//! `cargo bench -p iofleet-engine --bench pattern` (add `-- SECONDS` to change the time
//! per case, default 2). Each case fills write buffers of one size over and over, as a
//! lane does before each write, from one thread, and prints GB/s (10^9 bytes per second).
//! The buffers (1 MiB in all) stay in cache, so this measures the generator, not memory.

use std::hint::black_box;
use std::time::{Duration, Instant};

use iofleet_engine::{Pattern, PatternSpec};

fn main() {
    let secs: f64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(2.0);
    let random = PatternSpec::RANDOM;
    let cases = [
        ("random", random),
        (
            "zero",
            PatternSpec {
                zero: true,
                ..random
            },
        ),
        (
            "dedupe_ratio=3",
            PatternSpec {
                dedupe_ratio: 3.0,
                ..random
            },
        ),
        (
            "compress_ratio=2",
            PatternSpec {
                compress_ratio: 2.0,
                ..random
            },
        ),
        (
            "dedupe_ratio=3 compress_ratio=2",
            PatternSpec {
                dedupe_ratio: 3.0,
                compress_ratio: 2.0,
                ..random
            },
        ),
    ];
    println!("| pattern | write size | GB/s (one core) |");
    println!("|---|---:|---:|");
    for (name, spec) in cases {
        for bs in [4096usize, 131072] {
            let gbps = measure(spec, bs, Duration::from_secs_f64(secs));
            println!("| {name} | {} KiB | {gbps:.2} |", bs / 1024);
        }
    }
}

fn measure(spec: PatternSpec, bs: usize, time: Duration) -> f64 {
    let mut bufs = vec![0u8; 1 << 20];
    let mut p = Pattern::new(spec, 42);
    let start = Instant::now();
    let mut bytes = 0u64;
    while start.elapsed() < time {
        for buf in bufs.chunks_mut(bs) {
            p.fill(buf);
            black_box(&buf[0]);
        }
        bytes += bufs.len() as u64;
    }
    bytes as f64 / start.elapsed().as_secs_f64() / 1e9
}
