//! The data patterns measured as storage would see them: distinct units counted by hash,
//! compression measured with a real compressor (LZ4, each unit on its own, as a storage
//! system compresses blocks), over many writers and a mix of write sizes.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use iofleet_engine::{Pattern, PatternSpec};

/// (dedupe ratio, compression ratio) of `data` cut into `unit`-byte units: written units
/// per distinct unit, and bytes per compressed byte (each unit compressed alone).
fn measure(data: &[u8], unit: usize) -> (f64, f64) {
    let hasher = RandomState::new();
    let mut distinct = HashSet::new();
    let (mut units, mut packed) = (0usize, 0usize);
    for u in data.chunks(unit) {
        units += 1;
        distinct.insert(hasher.hash_one(u));
        packed += lz4_flex::block::compress(u).len();
    }
    (
        units as f64 / distinct.len() as f64,
        data.len() as f64 / packed as f64,
    )
}

/// What `writers` lanes write, each `writes` writes of sizes cycling through `sizes`.
fn written(spec: PatternSpec, writers: u64, writes: usize, sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    for w in 0..writers {
        let mut p = Pattern::new(spec, 0x5eed_0000 + w);
        for i in 0..writes {
            let start = out.len();
            out.resize(start + sizes[i % sizes.len()], 0xEE);
            p.fill(&mut out[start..]);
        }
    }
    out
}

fn spec(dedupe: f64, compress: f64) -> PatternSpec {
    PatternSpec {
        dedupe_ratio: dedupe,
        compress_ratio: compress,
        ..PatternSpec::RANDOM
    }
}

const SIZES: &[usize] = &[4096, 65536, 8192, 4096, 131072];

#[test]
fn random_is_unique_and_incompressible() {
    let data = written(PatternSpec::RANDOM, 8, 60, SIZES);
    let (dedupe, compress) = measure(&data, 4096);
    assert_eq!(dedupe, 1.0, "every unit distinct");
    assert!(compress < 1.01, "compress {compress}");
    // Nor does anything match across units: the whole stream compressed in 1 MiB blocks.
    let packed: usize = data
        .chunks(1 << 20)
        .map(|c| lz4_flex::block::compress(c).len())
        .sum();
    assert!(data.len() as f64 / (packed as f64) < 1.01);
}

#[test]
fn zero_is_fully_compressible_and_one_unit() {
    let zero = PatternSpec {
        zero: true,
        ..PatternSpec::RANDOM
    };
    let data = written(zero, 4, 50, SIZES);
    assert!(data.iter().all(|&b| b == 0));
    let (dedupe, compress) = measure(&data, 4096);
    assert_eq!(dedupe, data.len() as f64 / 4096.0);
    assert!(compress > 50.0, "compress {compress}");
}

#[test]
fn dedupe_ratio_3_measures_3() {
    let data = written(spec(3.0, 1.0), 8, 60, SIZES);
    let (dedupe, compress) = measure(&data, 4096);
    assert!((dedupe - 3.0).abs() <= 0.15, "dedupe {dedupe}");
    assert!(compress < 1.01, "compress {compress}");
}

#[test]
fn compress_ratio_2_measures_2() {
    let data = written(spec(1.0, 2.0), 8, 60, SIZES);
    let (dedupe, compress) = measure(&data, 4096);
    assert_eq!(dedupe, 1.0);
    assert!((compress - 2.0).abs() <= 0.1, "compress {compress}");
}

#[test]
fn dedupe_3_with_compress_2_measures_both() {
    let data = written(spec(3.0, 2.0), 8, 60, SIZES);
    let (dedupe, compress) = measure(&data, 4096);
    assert!((dedupe - 3.0).abs() <= 0.15, "dedupe {dedupe}");
    assert!((compress - 2.0).abs() <= 0.1, "compress {compress}");
}

/// Units of 4 KiB and more: on a 512-byte unit the compressor's own per-block overhead
/// (about 16 bytes for LZ4) is already 3% of the unit, so measured ratios fall short.
#[test]
fn other_ratios_and_units_hold_too() {
    for (d, c, unit) in [
        (2.5, 4.0, 8192u32),
        (10.0, 1.5, 16384),
        (1.5, 2.0, 4096),
        (1.0, 5.0, 32768),
    ] {
        let s = PatternSpec {
            dedupe_unit: unit,
            ..spec(d, c)
        };
        let sizes: Vec<usize> = [1, 4, 2].iter().map(|m| m * unit as usize).collect();
        let data = written(s, 8, 60, &sizes);
        let (dedupe, compress) = measure(&data, unit as usize);
        assert!(
            (dedupe / d - 1.0).abs() <= 0.05,
            "{d}:{c}@{unit}: dedupe {dedupe}"
        );
        assert!(
            (compress / c - 1.0).abs() <= 0.05,
            "{d}:{c}@{unit}: compress {compress}"
        );
    }
}
