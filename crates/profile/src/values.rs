//! The grammars of the two compound values a stream key or flag takes as one string:
//! block-size mixes (`bs`, `--bs`: `"4k"` or `"512:10,4k:90"`) and hot bands
//! (`hot_bands`: `"95/5:4/10"`).
//!
//! Each parser returns the typed value or a message saying what is wrong with the text;
//! the caller names the key or flag (`validate` for a profile, clap for `--bs`, the fio
//! mapping for `random_distribution`). Counts are bounded by the option table's limits
//! before any entry is read. Nothing here knows about profiles, plans or overrides, so
//! the flags (`overrides`) and the resolution (`validate`) both parse through it.

use crate::options::{int_range, MAX_BLOCK_SIZES, MAX_HOT_BANDS};
use crate::plan::{BlockSizes, HotBand};
use crate::units::{parse_bytes, Bytes};

/// `"4k"` (fixed) or a weighted list `"512:10,4k:60,64k:30"` (size:weight, weights are
/// whole numbers >= 1, sizes distinct and > 0).
pub fn parse_block_sizes(s: &str) -> Result<BlockSizes, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("empty block size (e.g. \"4k\" or \"512:10,4k:90\")".into());
    }
    if !text.contains(':') && !text.contains(',') {
        let size = parse_bytes(text)?;
        if size.0 == 0 {
            return Err("block size must be greater than 0".into());
        }
        return Ok(BlockSizes::fixed(size));
    }
    let sizes = text.split(',').count();
    if sizes > MAX_BLOCK_SIZES {
        return Err(format!(
            "'{}' lists {sizes} sizes, more than {MAX_BLOCK_SIZES}",
            shorten(text)
        ));
    }
    // A size's weight is a relative weight, bounded as a stream's `weight` is.
    let weights = int_range("stream.weight");
    let mut entries: Vec<(Bytes, u32)> = Vec::new();
    for entry in text.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(format!("'{text}' has an empty entry (a stray comma?)"));
        }
        let (size, weight) = entry.split_once(':').ok_or_else(|| {
            format!("entry '{entry}' of '{text}' needs a weight: write size:weight, e.g. 4k:60")
        })?;
        if size.trim().is_empty() {
            return Err(format!(
                "entry '{entry}' of '{text}' has no size before ':'"
            ));
        }
        let size = parse_bytes(size).map_err(|m| format!("entry '{entry}': {m}"))?;
        if size.0 == 0 {
            return Err(format!(
                "entry '{entry}': block size must be greater than 0"
            ));
        }
        let weight: u32 = weight.trim().parse().map_err(|_| {
            format!(
                "entry '{entry}': weight '{}' is not a whole number",
                weight.trim()
            )
        })?;
        if !weights.contains(&(weight as u64)) {
            return Err(format!(
                "entry '{entry}': weight {weight} is out of range {}..={}",
                weights.start(),
                weights.end()
            ));
        }
        if entries.iter().any(|e| e.0 == size) {
            return Err(format!("'{text}' lists {size} more than once"));
        }
        entries.push((size, weight));
    }
    Ok(BlockSizes { entries })
}

/// DISKSPD-style hot bands, `io%/range%` pairs separated by `:`: `"95/5:4/10"` puts 95% of
/// random I/Os on the first 5% of the working set and 4% on the next 10%; the rest fall
/// on the remainder.
pub fn parse_hot_bands(s: &str) -> Result<Vec<HotBand>, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("empty hot bands (e.g. \"95/5:4/10\")".into());
    }
    let count = text.split(':').count();
    if count > MAX_HOT_BANDS {
        return Err(format!(
            "'{}' has {count} bands, more than {MAX_HOT_BANDS}",
            shorten(text)
        ));
    }
    let mut bands = Vec::new();
    for band in text.split(':') {
        let band = band.trim();
        let (io, range) = band
            .split_once('/')
            .ok_or_else(|| format!("band '{band}' of '{text}' is not io%/range% (e.g. 95/5)"))?;
        let num = |v: &str, what: &str| -> Result<f64, String> {
            let x: f64 = v
                .trim()
                .parse()
                .map_err(|_| format!("band '{band}': {what} '{}' is not a number", v.trim()))?;
            if !(x.is_finite() && x > 0.0 && x <= 100.0) {
                return Err(format!("band '{band}': {what} must be in (0, 100]"));
            }
            Ok(x)
        };
        bands.push(HotBand {
            io_pct: num(io, "io%")?,
            range_pct: num(range, "range%")?,
        });
    }
    const EPS: f64 = 1e-9;
    let io: f64 = bands.iter().map(|b| b.io_pct).sum();
    let range: f64 = bands.iter().map(|b| b.range_pct).sum();
    if io > 100.0 + EPS {
        return Err(format!("the io% of '{text}' add up to {io}, more than 100"));
    }
    if range > 100.0 + EPS {
        return Err(format!(
            "the range% of '{text}' add up to {range}, more than 100"
        ));
    }
    if range >= 100.0 - EPS && io < 100.0 - EPS {
        return Err(format!(
            "the bands of '{text}' cover the whole range but only {io}% of the I/O; the rest \
             would have nowhere to go"
        ));
    }
    Ok(bands)
}

/// A long text cut for a message: its first 40 characters and how long it was.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((i, _)) => format!("{}… ({} characters)", &text[..i], text.chars().count()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bs(s: &str) -> BlockSizes {
        parse_block_sizes(s).unwrap()
    }

    // ---- parse_block_sizes ----

    #[test]
    fn block_sizes_fixed_and_weighted() {
        assert_eq!(bs("4k"), BlockSizes::fixed(Bytes(4096)));
        assert_eq!(bs(" 512 "), BlockSizes::fixed(Bytes(512)));
        let w = bs("512:10,4k:60,64k:30");
        assert_eq!(
            w.entries,
            vec![(Bytes(512), 10), (Bytes(4096), 60), (Bytes(65536), 30)]
        );
        assert_eq!(
            bs("1.5k:1, 8k:9").entries,
            vec![(Bytes(1536), 1), (Bytes(8192), 9)]
        );
        assert_eq!(bs("4k:100").entries, vec![(Bytes(4096), 100)]);
    }

    #[test]
    fn block_sizes_malformed() {
        for (input, expect) in [
            ("512:x,4k:60", "weight 'x' is not a whole number"),
            ("4k:60,", "empty entry"),
            (":5", "has no size"),
            ("", "empty block size"),
            ("0", "greater than 0"),
            ("0:5", "greater than 0"),
            ("4k:0", "weight 0 is out of range 1..=1000000"),
            ("4k:1000001", "weight 1000001 is out of range 1..=1000000"),
            ("4k,8k", "needs a weight"),
            ("4q:5", "unknown size suffix"),
            ("4k:1,4k:2", "more than once"),
            ("4k:-1", "not a whole number"),
        ] {
            let e = parse_block_sizes(input).unwrap_err();
            assert!(e.contains(expect), "{input:?}: {e}");
        }
        // A list past MAX_BLOCK_SIZES is refused before its entries are read.
        let list: Vec<String> = (1..=MAX_BLOCK_SIZES + 1)
            .map(|k| format!("{}:1", k * 512))
            .collect();
        let e = parse_block_sizes(&list.join(",")).unwrap_err();
        assert!(e.contains("lists 65 sizes, more than 64"), "{e}");
        assert!(parse_block_sizes(&list[..MAX_BLOCK_SIZES].join(",")).is_ok());
    }

    // ---- parse_hot_bands ----

    #[test]
    fn hot_bands_parse() {
        let b = parse_hot_bands("95/5:4/10").unwrap();
        assert_eq!(
            b,
            vec![
                HotBand {
                    io_pct: 95.0,
                    range_pct: 5.0
                },
                HotBand {
                    io_pct: 4.0,
                    range_pct: 10.0
                }
            ]
        );
        assert_eq!(parse_hot_bands("50/5:30/15").unwrap().len(), 2);
        assert_eq!(parse_hot_bands("100/10").unwrap().len(), 1);
        assert!(parse_hot_bands("60/40:40/60").is_ok()); // exactly covers both
        assert_eq!(parse_hot_bands("0.5/0.1").unwrap()[0].io_pct, 0.5);
    }

    #[test]
    fn hot_bands_malformed() {
        for (input, expect) in [
            ("", "empty"),
            ("95", "not io%/range%"),
            ("95/5:", "not io%/range%"),
            ("95/x", "not a number"),
            ("0/5", "(0, 100]"),
            ("5/0", "(0, 100]"),
            ("90/5:20/10", "more than 100"),
            ("50/60:10/50", "more than 100"),
            ("50/50:10/50", "cover the whole range"),
        ] {
            let e = parse_hot_bands(input).unwrap_err();
            assert!(e.contains(expect), "{input:?}: {e}");
        }
        // Past MAX_HOT_BANDS bands, refused by count before any is read.
        let bands = |n: usize| vec!["0.5/0.5"; n].join(":");
        assert!(parse_hot_bands(&bands(MAX_HOT_BANDS)).is_ok());
        let e = parse_hot_bands(&bands(MAX_HOT_BANDS + 1)).unwrap_err();
        assert!(e.contains("has 101 bands, more than 100"), "{e}");
        assert!(e.contains("… (807 characters)"), "the text is cut: {e}");
    }
}
