//! The NoCloud seed iofleet makes for one worker VM booted from a cloud image, written
//! to a file, for bench/cloud_image.py (boot to joined, measured without a controller:
//! the join file's certificate and token are of no command).
//!
//! ```sh
//! cargo run -p iofleet-fleet --example nocloud_seed -- --out seed.img \
//!     --iofleet target/debug/iofleet --domain iofleet-bench-0 --rank 0 --disks 2
//! ```

use iofleet_fleet::vms::guest::GuestJoin;
use iofleet_fleet::vms::nocloud::Seed;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut out, mut iofleet, mut domain) = (None, None, None);
    let (mut rank, mut disks, mut timeout) = (0u32, 1u32, 3u64);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| die(&format!("{flag} needs a value")));
        let number = |v: &str| -> u64 {
            v.parse()
                .unwrap_or_else(|_| die(&format!("{flag} {v}: not a number")))
        };
        match flag.as_str() {
            "--out" => out = Some(value),
            "--iofleet" => iofleet = Some(value),
            "--domain" => domain = Some(value),
            "--rank" => rank = number(&value) as u32,
            "--disks" => disks = number(&value) as u32,
            "--join-timeout" => timeout = number(&value),
            _ => die(&format!("unknown flag {flag}")),
        }
    }
    let (Some(out), Some(iofleet), Some(domain)) = (out, iofleet, domain) else {
        die("--out FILE, --iofleet FILE and --domain NAME are needed")
    };
    let binary = std::fs::read(&iofleet).unwrap_or_else(|e| die(&format!("{iofleet}: {e}")));
    let join = GuestJoin {
        fingerprint: "00".repeat(32),
        token: "t".repeat(64),
        rank,
        disks,
        join_timeout_s: timeout,
    };
    let seed = Seed {
        domain: &domain,
        iofleet: &binary,
        join: &join,
    };
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(&out).unwrap_or_else(|e| die(&format!("{out}: {e}"))),
    );
    let n = seed.write(&mut f).unwrap_or_else(|e| die(&e));
    std::io::Write::flush(&mut f).unwrap_or_else(|e| die(&format!("{out}: {e}")));
    eprintln!("{out}: {n} bytes");
}

fn die(message: &str) -> ! {
    eprintln!("nocloud_seed: {message}");
    std::process::exit(2)
}
