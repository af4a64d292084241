//! Sizes as people write them (`100MiB`, `1.5 GiB`, `512kB`, `4096`) and as git-crew
//! shows them (`100 MiB`, `30 GiB`). Pure.

/// The units a size may carry: powers of 1024 with an `i`, powers of 1000 without.
const UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
];

/// Bytes from a size: a number (a decimal fraction allowed with a unit), optionally
/// followed by a unit, `B`, `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) or `kB`, `MB`,
/// `GB`, `TB` (powers of 1000), in any case, with or without a space.
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim());
    let bad =
        || format!("`{text}` is not a size; write e.g. \"100MiB\", \"1GiB\" or a number of bytes");
    let factor = if unit.is_empty() {
        1
    } else {
        let unit = unit.to_ascii_lowercase();
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, f)| *f)
            .ok_or_else(bad)?
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    if number.contains('.') && (fraction.is_empty() || fraction.contains('.')) {
        return Err(bad());
    }
    let too_big = || format!("`{text}` is too large a size");
    let whole: u64 = match whole {
        "" => 0,
        digits => digits.parse().map_err(|_| too_big())?,
    };
    let mut bytes = whole.checked_mul(factor).ok_or_else(too_big)?;
    if !fraction.is_empty() {
        // Up to nine decimals are taken; the fraction of a byte is dropped.
        let digits = &fraction[..fraction.len().min(9)];
        let scale = 10u128.pow(digits.len() as u32);
        let part: u128 = digits.parse().map_err(|_| bad())?;
        let extra = u64::try_from(part * u128::from(factor) / scale).map_err(|_| too_big())?;
        bytes = bytes.checked_add(extra).ok_or_else(too_big)?;
    }
    Ok(bytes)
}

/// A size for people: bytes under 1 KiB, else the largest binary unit it reaches, with
/// one decimal where it is not whole (`512 B`, `100 MiB`, `1.5 GiB`).
pub fn show(bytes: u64) -> String {
    const NAMES: &[&str] = &["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 0;
    while unit + 1 < NAMES.len() && bytes >> (10 * (unit + 2)) > 0 {
        unit += 1;
    }
    let scale = 1u128 << (10 * (unit + 1));
    // Tenths, rounded down: a size over a limit never shows as the limit itself.
    let tenths = u128::from(bytes) * 10 / scale;
    match tenths % 10 {
        0 => format!("{} {}", tenths / 10, NAMES[unit]),
        t => format!("{}.{t} {}", tenths / 10, NAMES[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_with_binary_and_decimal_units() {
        for (text, bytes) in [
            ("100MiB", 100 << 20),
            ("100 MiB", 100 << 20),
            ("1gib", 1 << 30),
            ("1.5GiB", 3 << 29),
            ("512kB", 512_000),
            ("2 MB", 2_000_000),
            ("4096", 4096),
            ("7B", 7),
            ("30GiB", 30 << 30),
            (".5KiB", 512),
        ] {
            assert_eq!(parse(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn what_is_not_a_size_says_how_to_write_one() {
        for text in ["", "MiB", "10 parsecs", "1.2.3MiB", "1.MiB", "-1MiB", "ten"] {
            let err = parse(text).unwrap_err();
            assert!(err.contains("is not a size"), "{text}: {err}");
        }
        assert!(parse("99999999999TiB").unwrap_err().contains("too large"));
        assert!(
            parse("99999999999999999999")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn sizes_are_shown_in_the_largest_unit_they_reach() {
        assert_eq!(show(0), "0 B");
        assert_eq!(show(1023), "1023 B");
        assert_eq!(show(1024), "1 KiB");
        assert_eq!(show(100 << 20), "100 MiB");
        assert_eq!(show((100 << 20) + 1), "100 MiB");
        assert_eq!(show(3 << 29), "1.5 GiB");
        assert_eq!(show(30 << 30), "30 GiB");
        assert_eq!(show(5 * (1 << 20) + 1), "5 MiB");
        assert_eq!(show(u64::MAX), "15.9 EiB");
    }
}
