//! Byte sizes as people write them: `PROBELAB_CACHE_MAX=64G`, `900M`, `1.5G`, `123456789`.
//!
//! `K`, `M`, `G`, `T` (optionally followed by `iB`) are powers of 1024, as `du -h` prints them;
//! `KB`, `MB`, `GB`, `TB` are powers of 1000; a plain number is bytes.

/// Reads a size; the error says what is accepted.
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim();
    let scale: u64 = match unit {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(bad(text)),
    };
    if number.is_empty() {
        return Err(bad(text));
    }
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(scale).ok_or_else(|| bad(text));
    }
    let n: f64 = number.parse().map_err(|_| bad(text))?;
    let bytes = n * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad(text));
    }
    Ok(bytes.round() as u64)
}

fn bad(text: &str) -> String {
    format!("{text:?} is not a size: write bytes (900000000) or a number with K, M, G or T (900M, 64G, 1.5G)")
}

/// A size for people: `331.1 MB` style, powers of 1024 with the binary unit letters `du -h` uses.
pub fn format(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1}{}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::Failing;

    #[test]
    fn sizes_read_as_documented() {
        assert_eq!(parse("64G"), Ok(64 << 30));
        assert_eq!(parse("900M"), Ok(900 << 20));
        assert_eq!(parse("900MiB"), Ok(900 << 20));
        assert_eq!(parse("1.5G"), Ok(3 << 29));
        assert_eq!(parse("2GB"), Ok(2_000_000_000));
        assert_eq!(parse("123456789"), Ok(123_456_789));
        assert_eq!(parse(" 10 K "), Ok(10_240));
        assert_eq!(parse("0"), Ok(0));
    }

    #[test]
    fn sizes_that_are_not_are_refused_with_the_accepted_forms() {
        for bad in ["", "G", "64X", "-1G", "1.2.3M", "99999999999T"] {
            let e = parse(bad).failing(bad);
            assert!(e.contains("is not a size: write bytes"), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_print_short() {
        assert_eq!(format(512), "512 B");
        assert_eq!(format(330_946_864), "315.6M");
        assert_eq!(format(64 << 30), "64.0G");
    }
}
