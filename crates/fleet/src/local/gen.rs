//! Per-thread I/O generation for one stream: which direction, how large, and where.
//!
//! A `StreamGen` is built once per (thread, stream) before the run; generating an I/O
//! then costs a few random numbers and no allocation. Offsets are relative to the disk's
//! region and always aligned, inside the stream's working set, and never run past it.
//! Random offsets follow the stream's locality (uniform, hot bands, zipf); sequential
//! ones continue a cursor owned by this thread (threads of a disk start at evenly spaced
//! points of the working set).

use iofleet_engine::OpKind;
use iofleet_profile::{Locality, StreamPlan};
use rand::rngs::SmallRng;
use rand::Rng;
use rand_distr::{Distribution, Zipf};

/// Where random offsets land, as a sampler over `positions` aligned slots.
#[derive(Debug)]
enum Placement {
    Uniform,
    /// Cumulative (io threshold as u64 of 2^32, first slot, slot count) per band; the
    /// last entry covers the rest of the range.
    Bands(Vec<(u64, u64, u64)>),
    Zipf(Zipf<f64>),
}

#[derive(Debug)]
pub struct StreamGen {
    /// Cumulative weights and sizes of the block-size distribution.
    bs_cum: Vec<u32>,
    bs_size: Vec<u32>,
    bs_total: u32,
    /// Reads when `rng.next_u32() < read_threshold` (a u64 so 100% is always true).
    read_threshold: u64,
    random_threshold: u64,
    align: u64,
    /// Aligned slots a largest block can start at: offsets are `slot × align`.
    positions: u64,
    /// Working-set bytes.
    ws: u64,
    cursor: u64,
    placement: Placement,
}

fn pct_threshold(pct: f64) -> u64 {
    ((pct / 100.0) * (1u64 << 32) as f64).round() as u64
}

impl StreamGen {
    /// `disk_size` is the addressable bytes of the disk; `thread`/`threads` place this
    /// thread's sequential cursor.
    pub fn new(s: &StreamPlan, disk_size: u64, thread: u32, threads: u32) -> Self {
        let align = s.align.0.max(1);
        let max_bs = s.bs.max().0;
        let ws_raw = ((disk_size as f64) * s.working_set_pct / 100.0) as u64;
        let ws = (ws_raw / align * align).max(max_bs.min(disk_size));
        let positions = ((ws.saturating_sub(max_bs)) / align + 1).max(1);
        let mut bs_cum = Vec::new();
        let mut bs_size = Vec::new();
        let mut acc = 0u32;
        for (size, w) in &s.bs.entries {
            acc += *w;
            bs_cum.push(acc);
            bs_size.push(size.0 as u32);
        }
        let placement = match &s.locality {
            Locality::Uniform => Placement::Uniform,
            Locality::HotBands { bands } => {
                let mut out = Vec::new();
                let (mut io_acc, mut range_acc) = (0.0f64, 0.0f64);
                for b in bands {
                    let first = ((range_acc / 100.0) * positions as f64) as u64;
                    range_acc += b.range_pct;
                    io_acc += b.io_pct;
                    let end = (((range_acc / 100.0) * positions as f64) as u64).min(positions);
                    out.push((pct_threshold(io_acc), first, (end - first).max(1)));
                }
                // The remaining I/O share falls uniformly on the remaining range.
                let first = (((range_acc / 100.0) * positions as f64) as u64).min(positions - 1);
                out.push((1u64 << 32, first, (positions - first).max(1)));
                Placement::Bands(out)
            }
            Locality::Zipf { theta } => Placement::Zipf(
                Zipf::new(positions as f64, *theta).expect("theta validated > 0, n >= 1"),
            ),
        };
        let start = if threads > 1 {
            (ws / threads as u64 * thread as u64) / align * align
        } else {
            0
        };
        StreamGen {
            bs_total: acc,
            bs_cum,
            bs_size,
            read_threshold: pct_threshold(s.read_pct),
            random_threshold: pct_threshold(s.random_pct),
            align,
            positions,
            ws,
            cursor: if start + max_bs > ws { 0 } else { start },
            placement,
        }
    }

    /// Draw the next I/O: (direction, offset within the disk region, length).
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> (OpKind, u64, u32) {
        let op = if (rng.random::<u32>() as u64) < self.read_threshold {
            OpKind::Read
        } else {
            OpKind::Write
        };
        let len = if self.bs_size.len() == 1 {
            self.bs_size[0]
        } else {
            let r = rng.random_range(0..self.bs_total);
            let i = self.bs_cum.partition_point(|&c| c <= r);
            self.bs_size[i]
        };
        let offset = if (rng.random::<u32>() as u64) < self.random_threshold {
            self.random_slot(rng) * self.align
        } else {
            if self.cursor + len as u64 > self.ws {
                self.cursor = 0;
            }
            let off = self.cursor;
            self.cursor += len as u64;
            off
        };
        (op, offset, len)
    }

    #[inline]
    fn random_slot(&mut self, rng: &mut SmallRng) -> u64 {
        match &self.placement {
            Placement::Uniform => rng.random_range(0..self.positions),
            Placement::Bands(bands) => {
                let r = rng.random::<u32>() as u64;
                let b = bands
                    .iter()
                    .find(|b| r < b.0)
                    .unwrap_or(&bands[bands.len() - 1]);
                b.1 + rng.random_range(0..b.2)
            }
            Placement::Zipf(z) => (z.sample(rng) as u64).clamp(1, self.positions) - 1,
        }
    }

    /// Working-set bytes this generator addresses.
    pub fn working_set(&self) -> u64 {
        self.ws
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iofleet_profile::{BlockSizes, Bytes, HotBand};
    use rand::SeedableRng;

    fn stream(read: f64, random: f64, loc: Locality) -> StreamPlan {
        StreamPlan {
            name: "s".into(),
            bs: BlockSizes::fixed(Bytes(4096)),
            read_pct: read,
            random_pct: random,
            align: Bytes(4096),
            weight: Some(1),
            rate_iops: None,
            qd: None,
            locality: loc,
            working_set_pct: 50.0,
            disks: vec![0],
        }
    }

    #[test]
    fn offsets_aligned_inside_working_set_and_mix_matches() {
        let s = stream(70.0, 100.0, Locality::Uniform);
        let mut g = StreamGen::new(&s, 1 << 30, 0, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut reads = 0;
        for _ in 0..100_000 {
            let (op, off, len) = g.next(&mut rng);
            assert_eq!(off % 4096, 0);
            assert!(off + len as u64 <= 1 << 29, "inside 50% working set");
            reads += (op == OpKind::Read) as u32;
        }
        let frac = reads as f64 / 100_000.0;
        assert!((frac - 0.7).abs() < 0.01, "read fraction {frac}");
    }

    #[test]
    fn sequential_cursor_wraps_and_threads_start_apart() {
        let s = stream(100.0, 0.0, Locality::Uniform);
        let mut g0 = StreamGen::new(&s, 1 << 20, 0, 2);
        let mut g1 = StreamGen::new(&s, 1 << 20, 1, 2);
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(g0.next(&mut rng).1, 0);
        assert_eq!(g1.next(&mut rng).1, 256 * 1024);
        // 512 KiB working set = 128 blocks: the cursor reaches the last block, then wraps.
        let offs: Vec<u64> = (0..128).map(|_| g0.next(&mut rng).1).collect();
        assert_eq!(offs[0], 4096);
        assert_eq!(offs[126], 127 * 4096);
        assert_eq!(offs[127], 0);
    }

    #[test]
    fn hot_bands_share() {
        let bands = vec![
            HotBand {
                io_pct: 95.0,
                range_pct: 5.0,
            },
            HotBand {
                io_pct: 4.0,
                range_pct: 10.0,
            },
        ];
        let s = stream(100.0, 100.0, Locality::HotBands { bands });
        let size = 1u64 << 30;
        let mut g = StreamGen::new(&s, size, 0, 1);
        let ws = g.working_set();
        let mut rng = SmallRng::seed_from_u64(3);
        let (mut first, mut second) = (0, 0);
        let n = 200_000;
        for _ in 0..n {
            let off = g.next(&mut rng).1;
            if off < ws / 20 {
                first += 1
            } else if off < ws * 15 / 100 {
                second += 1
            }
        }
        let (f, s2) = (first as f64 / n as f64, second as f64 / n as f64);
        assert!((f - 0.95).abs() < 0.005, "first band {f}");
        assert!((s2 - 0.04).abs() < 0.003, "second band {s2}");
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let s = stream(100.0, 100.0, Locality::Zipf { theta: 1.2 });
        let mut g = StreamGen::new(&s, 1 << 26, 0, 1);
        let mut rng = SmallRng::seed_from_u64(9);
        let ws = g.working_set();
        let mut at_zero = 0;
        for _ in 0..10_000 {
            let off = g.next(&mut rng).1;
            assert!(off + 4096 <= ws);
            at_zero += (off == 0) as u32;
        }
        assert!(at_zero > 1000, "block 0 is hottest: {at_zero}");
    }

    #[test]
    fn weighted_block_sizes() {
        let mut s = stream(100.0, 100.0, Locality::Uniform);
        s.bs = BlockSizes {
            entries: vec![(Bytes(512), 10), (Bytes(4096), 60), (Bytes(65536), 30)],
        };
        s.align = Bytes(512);
        let mut g = StreamGen::new(&s, 1 << 26, 0, 1);
        let mut rng = SmallRng::seed_from_u64(5);
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            match g.next(&mut rng).2 {
                512 => counts[0] += 1,
                4096 => counts[1] += 1,
                65536 => counts[2] += 1,
                other => panic!("unexpected size {other}"),
            }
        }
        assert!((counts[1] as f64 / 100_000.0 - 0.6).abs() < 0.01);
        assert!((counts[2] as f64 / 100_000.0 - 0.3).abs() < 0.01);
    }
}
