//! fio's size grammar, shared by the reader (`parse`, for sizes in expressions) and the
//! mapping (`map`).

/// A fio size: a number with an optional suffix. `k`, `m`, `g`, `t`, `p` (and `kb`...)
/// are powers of `kb_base`; `ki`/`kib`... are always powers of 1024.
pub(crate) fn fio_size(text: &str, kb_base: u64) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{text}' is negative: a size is 0 or more bytes"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let suffix = suffix.trim().to_ascii_lowercase();
    let (letter, binary) = match suffix.as_str() {
        "" | "b" => ('b', false),
        s => {
            let mut c = s.chars();
            let letter = c.next().unwrap_or('b');
            let rest: String = c.collect();
            match rest.as_str() {
                "" | "b" => (letter, false),
                "i" | "ib" => (letter, true),
                _ => {
                    return Err(format!(
                        "'{text}' is not a size (examples: 4096, 4k, 64KiB, 10g)"
                    ))
                }
            }
        }
    };
    let base = if binary { 1024 } else { kb_base };
    let power = match letter {
        'b' => 0,
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => {
            return Err(format!(
                "'{text}' has an unknown size suffix (k, m, g, t, p)"
            ))
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, 4k, 64KiB, 10g)"))?;
    let bytes = value * (base as f64).powi(power);
    if !bytes.is_finite() || bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}
